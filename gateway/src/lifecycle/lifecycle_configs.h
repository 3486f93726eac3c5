#pragma once
// LifecycleConfigs: every bucket's lifecycle configuration as the gateway uses it: stored and
// read through the Store (SetBucketLifecycle / GetBucketLifecycle, the canonical XML of
// s3/s3_lifecycle.h) and kept parsed in memory, so that the x-amz-expiration header of a GET
// or HEAD costs no store read (docs/decisions/lifecycle.md).
//
// A cached answer (a configuration or "none") is used for at most `ttl`; a Put or Delete
// through this gateway replaces it at once, one through another gateway over the same RADOS
// pool or storage server is seen once the entry expires. Only the header reads the cache: the
// worker and GetBucketLifecycleConfiguration read the store.
// Thread safety: every method may be called concurrently.

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "oc/common/result.h"
#include "oc/common/thread_annotations.h"
#include "oc/storage/store.h"
#include "s3/s3_lifecycle.h"

namespace oc::gateway {

// How long a cached configuration answers the header. Default of LifecycleConfigs.
inline constexpr std::chrono::seconds kLifecycleCacheTtl{10};
// Cached buckets at most; past it the cache starts over (a bucket's entry costs one store read
// to refill).
inline constexpr size_t kMaxCachedLifecycles = 65536;

using LifecycleConfigPtr = std::shared_ptr<const LifecycleConfiguration>;

// The stored form parsed; kCorruption when it does not parse (the gateway wrote it).
Result<LifecycleConfigPtr> ParseStoredLifecycle(const std::string& stored);

class LifecycleConfigs {
 public:
  LifecycleConfigs(storage::Store* store, std::chrono::milliseconds ttl = kLifecycleCacheTtl)
      : store_(store), ttl_(ttl) {}

  // The bucket's configuration, nullptr when it has none; from the cache when fresh, else
  // from the store (its errors: kNotFound/kBucket...). Inside a CachedReadsOnly scope
  // (storage/cached_reads.h) a store read is not made: the scope notes a miss, so the handler
  // runs again on the Store pool, and kUnavailable is returned.
  Result<LifecycleConfigPtr> Get(std::string_view bucket);
  // Stores `config` (already validated) as the bucket's, or removes it (nullptr), and caches
  // the outcome. The Store's errors.
  Status Set(std::string_view bucket, LifecycleConfigPtr config);

 private:
  struct Entry {
    LifecycleConfigPtr config;
    std::chrono::steady_clock::time_point fetched;
  };
  void Remember(std::string_view bucket, LifecycleConfigPtr config);

  storage::Store* const store_;
  const std::chrono::milliseconds ttl_;
  std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_ OC_GUARDED_BY(mu_);
};

}  // namespace oc::gateway
