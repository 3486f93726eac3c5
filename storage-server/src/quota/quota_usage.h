#pragma once
// QuotaUsage: the limits and the current usage of every quota bucket, and the one check
// (docs/decisions/bucket-quotas.md). A write first Charge()s what it would add (only the
// growth: a write that shrinks a bucket is never refused), which stays "pending" while its
// commit runs, so two writes racing for the last room cannot both pass; then Settle() replaces
// the charge with what the commit really changed (or drops it if the commit failed).
// Thread safety: every method may be called concurrently (one mutex; nothing slow under it).

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oc/common/result.h"
#include "oc/common/status.h"
#include "oc/common/thread_annotations.h"
#include "oc/storage/quota.h"

namespace oc::storage::quota {

// What a bucket holds: its objects (as a listing shows them) and the parts of its unfinished
// multipart uploads.
struct Usage {
  uint64_t bytes = 0;         // sum of the objects' sizes
  uint64_t objects = 0;       // number of objects
  uint64_t upload_bytes = 0;  // sum of the parts of unfinished uploads
  bool operator==(const Usage&) const = default;
};

// A change a write makes, signed: an overwrite by a smaller object is negative.
struct Delta {
  int64_t bytes = 0;
  int64_t objects = 0;
  int64_t upload_bytes = 0;
};

// What a Charge holds pending until Settle; empty for a bucket without a quota.
struct Charge {
  std::string bucket;  // "" when nothing was charged (not a quota bucket)
  uint64_t bytes = 0;
  uint64_t objects = 0;
};

class QuotaUsage {
 public:
  explicit QuotaUsage(const QuotaOptions& options);

  // The bucket's limits, or null when it has no quota (then every write passes untouched).
  const BucketQuota* Limits(std::string_view bucket) const;
  std::vector<std::string> Buckets() const;

  // Whether `delta` fits now, without holding anything: the early check before a body is
  // read. QuotaExceeded (quota.h) naming the bucket and the limit if not.
  Status Check(std::string_view bucket, const Delta& delta) const;
  // Check, and hold the delta's growth pending until Settle.
  Result<Charge> Take(std::string_view bucket, const Delta& delta);
  // Ends a charge: drops it, and when `committed`, applies `actual` (what the commit changed).
  void Settle(const Charge& charge, bool committed, std::string_view bucket, const Delta& actual);
  // Replaces a bucket's usage (the count at open, a recount, a bucket created or deleted).
  void Set(std::string_view bucket, const Usage& usage);
  Usage Get(std::string_view bucket) const;
  // "quota.<bucket>.max_bytes" ... for Store::Stats (omitting a limit not set).
  void AppendFigures(std::vector<std::pair<std::string, uint64_t>>* figures) const;

 private:
  struct Entry {
    BucketQuota limits;
    Usage used;
    uint64_t pending_bytes = 0;
    uint64_t pending_objects = 0;
  };
  Status Fits(std::string_view bucket, const Entry& e, uint64_t more_bytes,
              uint64_t more_objects) const OC_REQUIRES(mu_);

  mutable std::mutex mu_;
  std::map<std::string, Entry, std::less<>> entries_ OC_GUARDED_BY(mu_);  // keys fixed at open
};

}  // namespace oc::storage::quota
