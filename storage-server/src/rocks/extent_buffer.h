#pragma once
// ExtentBuffer: the extent a Rocks writer (rocks_write.cc, rocks_group.cc) is filling. Unlike
// a std::string it has writable room past its bytes, so a writer can lend that tail to be
// filled in place (ObjectWriter::AppendSpace) and count it afterwards; memory is allocated
// without zero-filling and kept across Clear.
// Thread safety: none (one writer's).

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#include "oc/common/bytes.h"

namespace oc::storage {

class ExtentBuffer {
 public:
  uint64_t size() const { return size_; }
  uint64_t capacity() const { return capacity_; }
  bool empty() const { return size_ == 0; }
  ByteSpan bytes() const { return ByteSpan(data_.get(), size_); }
  // The writable room after the bytes: [size, capacity).
  MutableByteSpan tail() { return MutableByteSpan(data_.get() + size_, capacity_ - size_); }

  // Grows to hold at least `capacity` bytes, keeping those held; never shrinks.
  void Reserve(uint64_t capacity) {
    if (capacity <= capacity_) {
      return;
    }
    std::unique_ptr<std::byte[]> grown = std::make_unique_for_overwrite<std::byte[]>(capacity);
    if (size_ > 0) {
      std::memcpy(grown.get(), data_.get(), size_);
    }
    data_ = std::move(grown);
    capacity_ = capacity;
  }
  // Copies `data` after the bytes held, growing (at least doubling) when it does not fit.
  void Append(ByteSpan data) {
    if (data.size() > capacity_ - size_) {
      Reserve(std::max<uint64_t>(size_ + data.size(), 2 * capacity_));
    }
    if (!data.empty()) {
      std::memcpy(data_.get() + size_, data.data(), data.size());
    }
    size_ += data.size();
  }
  // Counts the first n bytes of tail() as held (they were written in place).
  // REQUIRES: n <= tail().size().
  void Grow(uint64_t n) { size_ += n; }
  void Clear() { size_ = 0; }

 private:
  std::unique_ptr<std::byte[]> data_;
  uint64_t size_ = 0;
  uint64_t capacity_ = 0;
};

}  // namespace oc::storage
