#pragma once
// One cache bucket of a CacheStore (cache_store.h): its eviction index and counters, and the
// Reservation an admitted write holds against its capacity. Private to src/cache/.
// Thread safety: the counters are atomics; the index has its own lock.

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

#include "cache/cache_store.h"
#include "cache/eviction_index.h"
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
};

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
