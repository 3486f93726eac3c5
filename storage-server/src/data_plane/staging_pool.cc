#include "data_plane/staging_pool.h"

#include <sys/mman.h>

#include <fmt/core.h>

#include "oc/common/check.h"

namespace oc::storage {

Result<std::unique_ptr<StagingPool>> StagingPool::Create(ucx::UcxWorker& worker, uint32_t count,
                                                         uint64_t buffer_bytes) {
  uint64_t total = 0;
  if (count == 0 || buffer_bytes == 0 ||
      __builtin_mul_overflow(uint64_t{count}, buffer_bytes, &total)) {
    return Status::InvalidArgument("staging_buffers", "count and bytes must be positive");
  }
  std::unique_ptr<StagingPool> pool(new StagingPool(worker, count, buffer_bytes));
  void* mem = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    return Status::ResourceExhausted("staging_buffers",
                                     fmt::format("cannot allocate {} staging bytes", total));
  }
  pool->base_ = static_cast<std::byte*>(mem);
  OC_ASSIGN_OR_RETURN(pool->mapping_, worker.Call([&] {
    return ucx::MappedMemory::Map(worker.context(), mem, total);
  }));
  std::lock_guard<std::mutex> lock(pool->mu_);
  pool->free_.reserve(count);
  pool->slots_.resize(count);
  for (uint32_t slot = count; slot > 0; --slot) {
    pool->free_.push_back(slot - 1);
    pool->slots_[slot - 1] = {pool->base_ + uint64_t{slot - 1} * buffer_bytes,
                              pool->mapping_->memh()};
  }
  return pool;
}

// Runs at teardown, after the owner stopped the worker's progress thread, so unmapping here
// is on the owning thread.
StagingPool::~StagingPool() {
  std::lock_guard<std::mutex> lock(mu_);
  replacements_.clear();
  for (std::byte* mem : replacement_memory_) {
    ::munmap(mem, buffer_bytes_);
  }
  mapping_.reset();  // unmap from UCX before the memory goes
  if (base_ != nullptr) {
    ::munmap(base_, uint64_t{count_} * buffer_bytes_);
  }
}

Result<StagingBuffer> StagingPool::Acquire(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return !free_.empty(); })) {
    return Status::Unavailable("no staging buffer came back in time");
  }
  const uint32_t slot = free_.back();
  free_.pop_back();
  return StagingBuffer(this, slot, MutableByteSpan(slots_[slot].data, buffer_bytes_));
}

void StagingPool::Release(uint32_t slot) noexcept {
  OC_CHECK(slot < count_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(slot);
  }
  cv_.notify_one();
}

Status StagingPool::Retire(uint32_t slot) {
  OC_CHECK(slot < count_);
  void* mem =
      ::mmap(nullptr, buffer_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    return Status::ResourceExhausted("staging_buffers", "cannot replace a retired buffer");
  }
  Result<std::unique_ptr<ucx::MappedMemory>> mapping =
      worker_.Call([&] { return ucx::MappedMemory::Map(worker_.context(), mem, buffer_bytes_); });
  if (!mapping.has_value()) {
    ::munmap(mem, buffer_bytes_);
    return mapping.error();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    slots_[slot] = {static_cast<std::byte*>(mem), (*mapping)->memh()};
    replacements_.push_back(std::move(*mapping));
    replacement_memory_.push_back(static_cast<std::byte*>(mem));
    ++retired_;
    free_.push_back(slot);
  }
  cv_.notify_one();
  return Status::Ok();
}

ucp_mem_h StagingPool::memh(uint32_t slot) const {
  std::lock_guard<std::mutex> lock(mu_);
  return slots_[slot].memh;
}

uint64_t StagingPool::retired() const {
  std::lock_guard<std::mutex> lock(mu_);
  return retired_;
}

bool StagingPool::Owns(const StagingBuffer& buffer) const {
  if (buffer.owner() != this || buffer.slot() >= count_ || buffer.bytes().size() != buffer_bytes_) {
    return false;
  }
  std::lock_guard<std::mutex> lock(mu_);
  return buffer.bytes().data() == slots_[buffer.slot()].data;
}

uint32_t StagingPool::free_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<uint32_t>(free_.size());
}

}  // namespace oc::storage
