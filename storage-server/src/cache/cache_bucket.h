#pragma once
// One cache bucket of a CacheStore (cache_store.h): its eviction index and counters, and the
// Reservation an admitted write holds against its capacity. Private to src/cache/.
// Thread safety: the counters are atomics; the index has its own lock.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cache/cache_store.h"
#include "cache/eviction_index.h"
#include "cache/miss_links.h"
#include "cache/read_pins.h"
#include "oc/descriptor/descriptor.h"

namespace oc::storage::cache {

struct CacheStore::Bucket {
  Bucket(std::string bucket_name, const EvictionOptions& options)
      : name(std::move(bucket_name)), capacity(options.capacity_bytes), index(options) {}

  // A probe or descriptor GET of `d` matched its first `matched` chunks: one OnHit, counted.
  void Hit(const descriptor::Descriptor& d, uint64_t matched);

  const std::string name;
  const uint64_t capacity;
  EvictionIndex index;
  std::atomic<uint64_t> reserved{0};  // bytes of admitted writes not committed yet
  std::atomic<uint64_t> waiting{0};   // bytes of PUTs waiting for room
  // Bytes of picked victims not deleted yet: PickVictims takes them out of the index's used
  // bytes at once, but they are still stored until their DeleteIf returns.
  std::atomic<uint64_t> deleting{0};
  std::atomic<bool> dirty{false};  // changed since the last snapshot
  std::atomic<uint64_t> chunks_requested{0};
  std::atomic<uint64_t> chunks_served{0};
  std::atomic<uint64_t> puts_waited{0};
  std::atomic<uint64_t> puts_refused{0};
  std::atomic<uint64_t> eviction_failures{0};
  std::atomic<uint64_t> client_deletes{0};
  std::atomic<uint64_t> lifecycle_expired{0};
  std::atomic<uint64_t> snapshots_written{0};
  // The largest used + deleting + reserved an admission saw once it reserved its bytes: an
  // upper bound on what the bucket held at any moment, since every stored byte was reserved
  // before it was stored (the churn benchmark's check of the high watermark, bench/churn_bench.py).
  std::atomic<uint64_t> admitted_peak{0};
  // Chunks of descriptor GETs in flight, spared by eviction; victims spared so.
  ReadPins pins;
  std::atomic<uint64_t> victims_spared{0};
  // The first chunk recent requests missed, with the chunk before it: a PUT starting there
  // links its first chunk under that one.
  MissLinks miss_links;
  std::atomic<uint64_t> puts_linked{0};  // descriptor PUTs whose first chunk was linked so

  // --- A shared pool (cache_sync.cc) ---
  // While this server does not lead, what it saw goes to its hit log as well as its index:
  // rows whose last_tick is the kind (kLogPut: a PUT stored key, size, after predecessor;
  // kLogHit: a probe or descriptor GET matched a prefix ending at key, after predecessor;
  // kLogGet: a plain GET/HEAD). Beyond kMaxHitLogRows rows are dropped (recency only).
  void Log(std::string_view key, std::string_view predecessor, uint64_t size, uint64_t kind);
  std::vector<SnapshotRow> TakeLog();
  std::atomic<bool> logging{false};  // shared store, not leading
  std::mutex log_mu;
  std::vector<SnapshotRow> log OC_GUARDED_BY(log_mu);
  std::atomic<uint64_t> log_rows_dropped{0};
  std::atomic<uint64_t> hit_logs_written{0};  // parts this server wrote
  std::atomic<uint64_t> hit_logs_folded{0};   // parts (anyone's) this server folded as leader
  std::atomic<uint64_t> victims_gone{0};      // picked victims another server or client deleted
};

inline constexpr uint64_t kLogPut = 1;
inline constexpr uint64_t kLogHit = 2;
inline constexpr uint64_t kLogGet = 3;
inline constexpr size_t kMaxHitLogRows = 4 * kSnapshotRowsPerPart;

// Store helpers of the cache layer (cache_worker.cc). Every object of `bucket` (under `prefix`)
// with its size, page by page; kNotFound/kBucket: none.
Result<std::vector<ListedObject>> ListAll(Store& store, std::string_view bucket,
                                          std::string_view prefix = {});
// The whole object, refused over max_bytes; its metadata into *meta when given.
Result<std::string> ReadWhole(Store& store, const ObjectKey& key, uint64_t max_bytes,
                              ObjectMeta* meta = nullptr);
// Writes `bytes` as the object `key` of kCacheStateBucket (created again if deleted under us).
Status WriteState(Store& store, const std::string& name, std::string_view bytes);
// Largest snapshot or hit-log part read back (kSnapshotRowsPerPart rows of two
// kMaxSnapshotKeyBytes keys and two varints stay below it).
inline constexpr uint64_t kMaxSnapshotPartBytes = 160ull << 20;

class CacheStore::Reservation {
 public:
  Reservation() = default;
  Reservation(Bucket* bucket, uint64_t bytes) : bucket_(bucket), bytes_(bytes) {}
  Reservation(Reservation&& other) noexcept
      : bucket_(std::exchange(other.bucket_, nullptr)), bytes_(other.bytes_) {}
  Reservation& operator=(Reservation&& other) noexcept {
    if (this != &other) {
      Release();
      bucket_ = std::exchange(other.bucket_, nullptr);
      bytes_ = other.bytes_;
    }
    return *this;
  }
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;
  ~Reservation() { Release(); }

  bool held() const { return bucket_ != nullptr; }
  // Gives the bytes back; true if it held any (the caller then wakes waiting PUTs).
  bool Release() {
    if (bucket_ == nullptr) {
      return false;
    }
    bucket_->reserved.fetch_sub(bytes_, std::memory_order_relaxed);
    bucket_ = nullptr;
    return true;
  }

 private:
  Bucket* bucket_ = nullptr;
  uint64_t bytes_ = 0;
};

}  // namespace oc::storage::cache
