#pragma once
// StagingPool: a fixed set of equal staging buffers carved from one allocation that is
// registered with UCX once (ucp_mem_map) and reused for every put and get (docs/design.md,
// "Delivery": staging memory is bounded and registered once). Buffers are lent as
// StagingBuffer handles and come back when the handle is dropped or when the transfer that
// took them completes.
// Thread safety: every method may be called from any thread.

#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "oc/common/result.h"
#include "oc/common/thread_annotations.h"
#include "oc/storage/layer_sink.h"
#include "oc/ucx/mapped_memory.h"
#include "oc/ucx/worker.h"

namespace oc::storage {

class StagingPool final : public StagingBuffer::Owner {
 public:
  // Allocates count x buffer_bytes and maps it. kInvalidArgument if count or buffer_bytes
  // is 0 or the product overflows; kResourceExhausted if the memory cannot be had.
  // REQUIRES: `worker` outlives the pool.
  static Result<std::unique_ptr<StagingPool>> Create(ucx::UcxWorker& worker, uint32_t count,
                                                     uint64_t buffer_bytes);
  ~StagingPool();
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;

  // Lends a free buffer, waiting up to `timeout`; kUnavailable if none came back in time.
  Result<StagingBuffer> Acquire(std::chrono::milliseconds timeout);
  void Release(uint32_t slot) noexcept override;

  // Replaces the memory of lent slot `slot` with a freshly allocated and registered buffer
  // and makes the slot free again. For a buffer that a stuck UCX operation may still read
  // (its peer vanished without UCX noticing): the old memory is never unmapped or reused, so
  // whatever UCX does with it later cannot touch another request's bytes. Bounded by the
  // buffers in flight to that peer; logged. kResourceExhausted if memory cannot be had (the
  // slot then stays out of service).
  Status Retire(uint32_t slot);

  // True if `buffer` is one of this pool's (same slot, same bytes).
  bool Owns(const StagingBuffer& buffer) const;
  uint64_t buffer_bytes() const { return buffer_bytes_; }
  uint32_t count() const { return count_; }
  uint32_t free_count() const;
  // The registration covering `slot`'s memory (for UCP_OP_ATTR_FIELD_MEMH).
  ucp_mem_h memh(uint32_t slot) const;
  uint64_t retired() const;

 private:
  struct Slot {
    std::byte* data = nullptr;
    ucp_mem_h memh = nullptr;
  };
  StagingPool(ucx::UcxWorker& worker, uint32_t count, uint64_t buffer_bytes)
      : worker_(worker), count_(count), buffer_bytes_(buffer_bytes) {}

  ucx::UcxWorker& worker_;
  const uint32_t count_;
  const uint64_t buffer_bytes_;
  std::byte* base_ = nullptr;  // mmap'ed count_ * buffer_bytes_
  std::unique_ptr<ucx::MappedMemory> mapping_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<uint32_t> free_ OC_GUARDED_BY(mu_);
  std::vector<Slot> slots_ OC_GUARDED_BY(mu_);
  // Replacement memory of retired slots, unmapped at destruction; the memory they replaced
  // is leaked on purpose (see Retire).
  std::vector<std::unique_ptr<ucx::MappedMemory>> replacements_ OC_GUARDED_BY(mu_);
  std::vector<std::byte*> replacement_memory_ OC_GUARDED_BY(mu_);
  uint64_t retired_ OC_GUARDED_BY(mu_) = 0;
};

// The bound on bytes in flight that are not in staging buffers: zero-copy writes straight
// from memory the store lends (LayerSink::WritePinned). Waiters are served first come, first
// served, and a Release wakes only the waiters it can now serve: with many requests sharing
// the budget, a notify_all per released write woke every waiting request to find most of them
// still short (issue 16: 16 concurrent loads spent half the server's CPU in futex wake-ups;
// docs/decisions/many-clients-admission-queue.md). Thread-safe.
class ByteBudget {
 public:
  explicit ByteBudget(uint64_t capacity) : capacity_(capacity), free_(capacity) {}
  uint64_t capacity() const { return capacity_; }
  // Bytes not taken now; and bytes ever taken (monotonic).
  uint64_t free() const {
    std::lock_guard lock(mu_);
    return free_;
  }
  uint64_t taken_total() const {
    std::lock_guard lock(mu_);
    return taken_total_;
  }
  // Callers waiting in Acquire now.
  size_t waiting() const {
    std::lock_guard lock(mu_);
    return waiters_.size();
  }

  // Takes min(bytes, capacity()) bytes, waiting up to `timeout` for them behind the callers
  // already waiting; returns the bytes taken (give exactly those back to Release), 0 if they
  // did not come free in time.
  uint64_t Acquire(uint64_t bytes, std::chrono::milliseconds timeout) {
    const uint64_t take = std::min(bytes, capacity_);
    std::unique_lock lock(mu_);
    if (waiters_.empty() && free_ >= take) {
      free_ -= take;
      taken_total_ += take;
      return take;
    }
    Waiter me{take};
    waiters_.push_back(&me);
    const bool granted = me.cv.wait_for(lock, timeout, [&] { return me.granted; });
    if (!granted) {
      waiters_.erase(std::find(waiters_.begin(), waiters_.end(), &me));
      GrantLocked();  // those behind it may fit now
      return 0;
    }
    return take;
  }
  void Release(uint64_t bytes) noexcept {
    std::lock_guard lock(mu_);
    free_ += bytes;
    GrantLocked();
  }

 private:
  struct Waiter {
    uint64_t take;
    bool granted = false;
    std::condition_variable cv;
  };
  // Serves the waiters at the head of the line while their bytes are free.
  void GrantLocked() OC_REQUIRES(mu_) {
    while (!waiters_.empty() && free_ >= waiters_.front()->take) {
      Waiter* w = waiters_.front();
      waiters_.pop_front();
      free_ -= w->take;
      taken_total_ += w->take;
      w->granted = true;
      w->cv.notify_one();
    }
  }

  const uint64_t capacity_;
  mutable std::mutex mu_;
  uint64_t free_ OC_GUARDED_BY(mu_);
  uint64_t taken_total_ OC_GUARDED_BY(mu_) = 0;
  std::deque<Waiter*> waiters_ OC_GUARDED_BY(mu_);  // in arrival order
};

}  // namespace oc::storage
