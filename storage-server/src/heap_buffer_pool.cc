// HeapBufferPool (kv.h): the plain staging buffers of the LayerSinks that need no registered
// memory (the gateway's HTTP body sink, the RPC's streaming sink, tests).

#include <algorithm>
#include <memory>
#include <mutex>

#include "oc/common/check.h"
#include "oc/storage/kv.h"

namespace oc::storage {

HeapBufferPool::HeapBufferPool(uint32_t count, uint64_t buffer_bytes)
    : count_(count), buffer_bytes_(buffer_bytes) {
  OC_CHECK(count > 0 && buffer_bytes > 0);
  memory_ = std::make_unique<std::byte[]>(uint64_t{count} * buffer_bytes);
  for (uint32_t i = count; i > 0; --i) {
    free_.push_back(i - 1);
  }
}

Result<StagingBuffer> HeapBufferPool::Acquire(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return !free_.empty(); })) {
    return Status::Unavailable("no staging buffer came back in time");
  }
  const uint32_t slot = free_.back();
  free_.pop_back();
  peak_lent_ = std::max(peak_lent_, count_ - static_cast<uint32_t>(free_.size()));
  return StagingBuffer(
      this, slot, MutableByteSpan(memory_.get() + uint64_t{slot} * buffer_bytes_, buffer_bytes_));
}

void HeapBufferPool::Release(uint32_t slot) noexcept {
  {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(slot);
  }
  cv_.notify_one();
}

uint32_t HeapBufferPool::free_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<uint32_t>(free_.size());
}

uint32_t HeapBufferPool::peak_lent() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_lent_;
}

}  // namespace oc::storage
