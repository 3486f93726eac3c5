#pragma once
// KeyTable: an open-addressing hash index from an object key to an entry id of the eviction
// index (eviction_index.h), the lookup every eviction-index operation starts with.
//
// A slot holds the entry id and the key's 32-bit hash, so probing, erasing and growing read no
// entry; only a hash match reads the key back, through the `key_of` function the caller passes
// (the key is stored once, in the caller's entry). Linear probing with backward-shift deletion
// (no tombstones, so probes stay short under churn); the table doubles at 70% full. Per key:
// 8 bytes / load factor, 11-23 bytes. Thread safety: none; the owning EvictionIndex serialises
// access.

#include <cstdint>
#include <string_view>
#include <vector>

namespace oc::storage::cache {

inline constexpr uint32_t kNoId = 0xFFFFFFFFu;

// The 32-bit hash the table probes with.
uint32_t HashKey(std::string_view key);

class KeyTable {
 public:
  // KeyOf(id) -> std::string_view of the entry's key. Returns kNoId when absent.
  template <typename KeyOf>
  uint32_t Find(std::string_view key, uint32_t hash, KeyOf key_of) const {
    if (slots_.empty()) {
      return kNoId;
    }
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const uint64_t slot = slots_[i];
      if (slot == kEmpty) {
        return kNoId;
      }
      if (HashOf(slot) == hash && key_of(IdOf(slot)) == key) {
        return IdOf(slot);
      }
    }
  }

  // REQUIRES: no entry with this key is in the table.
  void Insert(uint32_t id, uint32_t hash) {
    if ((size_ + 1) * 10 > slots_.size() * 7) {
      Grow();
    }
    Place(Slot(id, hash));
    ++size_;
  }

  // REQUIRES: `id` is in the table under `hash`.
  void Erase(uint32_t id, uint32_t hash) {
    const uint64_t target = Slot(id, hash);
    size_t i = hash & mask_;
    while (slots_[i] != target) {
      i = (i + 1) & mask_;
    }
    // Backward shift: move each later member of the probe run into the hole when its home slot
    // does not lie cyclically in (hole, its position], so every key stays reachable.
    for (size_t j = (i + 1) & mask_; slots_[j] != kEmpty; j = (j + 1) & mask_) {
      const size_t home = HashOf(slots_[j]) & mask_;
      const bool home_in_gap = i <= j ? (home > i && home <= j) : (home > i || home <= j);
      if (!home_in_gap) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i] = kEmpty;
    --size_;
  }

  void Clear() {
    slots_.clear();
    slots_.shrink_to_fit();
    mask_ = 0;
    size_ = 0;
  }
  size_t size() const { return size_; }
  uint64_t MemoryBytes() const { return slots_.capacity() * sizeof(uint64_t); }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};  // id kNoId is never stored
  static uint64_t Slot(uint32_t id, uint32_t hash) { return uint64_t{hash} << 32 | id; }
  static uint32_t IdOf(uint64_t slot) { return static_cast<uint32_t>(slot); }
  static uint32_t HashOf(uint64_t slot) { return static_cast<uint32_t>(slot >> 32); }

  void Place(uint64_t slot) {
    size_t i = HashOf(slot) & mask_;
    while (slots_[i] != kEmpty) {
      i = (i + 1) & mask_;
    }
    slots_[i] = slot;
  }

  void Grow() {
    std::vector<uint64_t> old;
    old.swap(slots_);
    const size_t n = old.empty() ? 64 : old.size() * 2;
    slots_.assign(n, kEmpty);
    mask_ = n - 1;
    for (uint64_t slot : old) {
      if (slot != kEmpty) {
        Place(slot);
      }
    }
  }

  std::vector<uint64_t> slots_;  // (hash << 32 | id), kEmpty = free; size a power of two
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace oc::storage::cache
