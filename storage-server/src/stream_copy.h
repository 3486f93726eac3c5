#pragma once
// StreamCopy: copies an object by reading it through one Store and writing it through
// another (or the same), one bounded piece at a time. Used where a copy cannot share the
// source's data: RocksStore copying to a different key, and RemoteStore copying between
// buckets on different servers. The reader pins one version of src for the whole copy.

#include <cstdint>
#include <optional>

#include "oc/common/result.h"
#include "oc/storage/store.h"

namespace oc::storage {

// Copies src (read from `from`) to dst (written through `to`). Metadata is src's unless
// `replace` is given (src's checksum kept unless replace->headers has one: CopyHeaders);
// `conditions` are dst's, decided by `to` at the commit. Memory: one buffer of at most
// `piece_bytes`. Returns dst's metadata, or the first error of the read, the write or the
// commit (nothing becomes visible then).
Result<ObjectMeta> StreamCopy(Store& from, const ObjectKey& src, Store& to, const ObjectKey& dst,
                              const std::optional<PutOptions>& replace,
                              const WriteConditions& conditions, uint64_t piece_bytes);

}  // namespace oc::storage
