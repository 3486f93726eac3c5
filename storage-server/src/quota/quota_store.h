#pragma once
// The quota store: a Store decorator OpenStore (open_store.h) puts over the composed store when
// [quota] names buckets (docs/decisions/bucket-quotas.md). Every write into a quota bucket
// passes its check before anything becomes visible and is then accounted exactly: PutObject
// (at open when the size is known, again at commit), UploadPart and UploadPartCopy (parts count
// toward max_bytes, as in RGW), CompleteMultipartUpload (the object replaces the parts; a new
// key is one more object), CopyObject, a descriptor PUT's chunks and a group's objects.
// Deletes, aborts and shrinking overwrites always pass and give room back. Calls on other
// buckets, and reads, go straight through.
//
// Usage is counted from a listing at open (objects, and the parts of unfinished uploads) and
// kept current by the writes passing through. A backend several servers share (RADOS: a
// non-empty StoreIdentity::fsid) is re-counted every QuotaOptions::recount_interval on a
// thread of this store, so a server's view is at most that stale about other servers' writes.
// Stats() adds quota.<bucket>.{max_bytes,max_objects,used_bytes,used_objects,upload_bytes}.
//
// Thread safety: as Store. Shutdown: the destructor stops the recount thread, then closes the
// inner store.

#include <memory>

#include "oc/common/result.h"
#include "oc/storage/quota.h"
#include "oc/storage/store.h"

namespace oc::storage {

// Wraps `inner` (REQUIRES: non-null) with the quotas of `options`, counting each quota bucket's
// usage now. The counting's listing errors are returned (the store is then not opened).
Result<std::unique_ptr<Store>> ComposeQuotaStore(std::unique_ptr<Store> inner,
                                                 const QuotaOptions& options);

// The store under a quota store (`store` itself when it is none); for tests and BackendOf.
Store& InnerOfQuotaStore(Store& store);

// Re-counts every quota bucket of a quota store from listings now, as the recount thread does;
// false when `store` is not a quota store. For tests.
bool RecountQuotaStoreNow(Store& store);

}  // namespace oc::storage
