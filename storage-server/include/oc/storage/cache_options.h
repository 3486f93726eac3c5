#pragma once
// The [cache] table: which buckets are caches, each with a capacity in bytes, and the
// watermarks their eviction runs between (issue 31; docs/decisions/cache-buckets.md). OpenStore
// (open_store.h) composes a cache layer over the store when `buckets` is not empty; objects of
// other buckets are never evicted. Plain values; Validate() checks them once at startup.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oc/common/status.h"

namespace oc::storage {

// The field of a refusal because a cache bucket is full and eviction did not make room within
// CacheOptions::put_wait: kResourceExhausted with it is 503 SlowDown with Retry-After at the
// gateway (the client retries once eviction caught up), carried unchanged by the storage RPC.
inline constexpr std::string_view kCacheFullField = "cache.buckets";

struct CacheOptions {
  // Cache buckets: (bucket name, capacity in bytes), as the TOML inline table
  // `buckets = { kvcache = 68719476736 }` names them (a size string such as "64GiB" works too).
  // Default: none (no bucket is a cache; the store is not wrapped)
  std::vector<std::pair<std::string, uint64_t>> buckets;
  // Eviction starts when a cache bucket's used bytes pass capacity x high_watermark...
  // Default: 0.90
  double high_watermark = 0.90;
  // ...and frees down to capacity x low_watermark. 0 < low <= high <= 1.
  // Default: 0.80
  double low_watermark = 0.80;
  // A PUT whose bytes would take a cache bucket past its capacity waits at most this long for
  // eviction to make room, then is refused (kCacheFullField) before anything is stored.
  // Default: 2 s
  std::chrono::milliseconds put_wait{2'000};
  // Most bytes one eviction batch deletes (one PickVictims call); eviction loops batch after
  // batch down to the low watermark, and used bytes stay under the high watermark plus about
  // one batch of concurrent writes.
  // Default: 256 MiB
  uint64_t eviction_batch_bytes = 256ull << 20;
  // How often the recency and predecessor snapshot of each cache bucket is persisted (when it
  // changed). A restart loses at most this much recency, never data.
  // Default: 60 s
  std::chrono::milliseconds snapshot_interval{60'000};
  // Several servers over one pool (RADOS): how often each server re-lists its cache buckets
  // (usage and presence become the pool's) and a follower hands its hits to the leader, the
  // only server that evicts (docs/decisions/cache-buckets.md, "RADOS"). What other servers
  // write in one interval is unseen until the next, so keep (1 - low_watermark) x capacity
  // above what the pool takes in sync_interval + put_wait. Unused on RocksDB (one server).
  // Default: 5 s
  std::chrono::milliseconds sync_interval{5'000};

  // The capacity of `bucket`, 0 when it is not a cache bucket.
  uint64_t CapacityOf(std::string_view bucket) const;
  // kInvalidArgument naming cache.<key>: a bucket name that is not a valid S3 bucket name or
  // is the reserved kCacheStateBucket, a capacity of 0, watermarks outside 0 < low <= high <= 1.
  Status Validate() const;
};

// The bucket the cache layer keeps its snapshots in (one object per bucket and batch). Clients
// never see it: the cache layer hides it from ListBuckets and answers NoSuchBucket for it, so
// it cannot be a cache bucket's or a client's name while a cache is configured.
inline constexpr std::string_view kCacheStateBucket = "objectcache-internal-cache-state";

}  // namespace oc::storage
