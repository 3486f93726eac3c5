#pragma once
// KeyTable: an open-addressing hash index from an object key to a slot id of the eviction
// index (eviction_index.h), the one lookup every eviction-index operation starts with.
//
// It stores only 4-byte ids; the keys themselves live in the caller's entries and are read back
// through the `key_of` and `hash_of` functions the caller passes in, so a key is held once. Linear
// probing with backward-shift deletion (no tombstones, so lookups stay short under churn);
// the table doubles when it is 70% full. Per key it costs 4 bytes / load factor, 6-11 bytes.
// Thread safety: none; the owning EvictionIndex serialises access.

#include <cstdint>
#include <string_view>
#include <vector>

namespace oc::storage::cache {

inline constexpr uint32_t kNoId = 0xFFFFFFFFu;

// The 32-bit hash the table probes with; entries keep it so rehashing reads no key bytes.
uint32_t HashKey(std::string_view key);

class KeyTable {
 public:
  // KeyOf(id) -> std::string_view of the entry's key; HashOf(id) -> its HashKey().
  template <typename KeyOf, typename HashOf>
  uint32_t Find(std::string_view key, uint32_t hash, KeyOf key_of, HashOf hash_of) const {
    if (slots_.empty()) {
      return kNoId;
    }
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const uint32_t id = slots_[i];
      if (id == kNoId) {
        return kNoId;
      }
      if (hash_of(id) == hash && key_of(id) == key) {
        return id;
      }
    }
  }

  // REQUIRES: no entry with this key is in the table.
  template <typename HashOf>
  void Insert(uint32_t id, uint32_t hash, HashOf hash_of) {
    if ((size_ + 1) * 10 > slots_.size() * 7) {
      Grow(hash_of);
    }
    Place(id, hash);
    ++size_;
  }

  // REQUIRES: `id` is in the table under `hash`.
  template <typename HashOf>
  void Erase(uint32_t id, uint32_t hash, HashOf hash_of) {
    size_t i = hash & mask_;
    while (slots_[i] != id) {
      i = (i + 1) & mask_;
    }
    // Backward shift: move each later member of the probe run into the hole when its home slot
    // does not lie cyclically in (hole, its position], so every key stays reachable.
    for (size_t j = (i + 1) & mask_; slots_[j] != kNoId; j = (j + 1) & mask_) {
      const size_t home = hash_of(slots_[j]) & mask_;
      const bool home_in_gap = i <= j ? (home > i && home <= j) : (home > i || home <= j);
      if (!home_in_gap) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i] = kNoId;
    --size_;
  }

  void Clear() {
    slots_.clear();
    mask_ = 0;
    size_ = 0;
  }
  size_t size() const { return size_; }
  uint64_t MemoryBytes() const { return slots_.capacity() * sizeof(uint32_t); }

 private:
  void Place(uint32_t id, uint32_t hash) {
    size_t i = hash & mask_;
    while (slots_[i] != kNoId) {
      i = (i + 1) & mask_;
    }
    slots_[i] = id;
  }

  template <typename HashOf>
  void Grow(HashOf hash_of) {
    std::vector<uint32_t> old;
    old.swap(slots_);
    const size_t n = old.empty() ? 64 : old.size() * 2;
    slots_.assign(n, kNoId);
    mask_ = n - 1;
    for (uint32_t id : old) {
      if (id != kNoId) {
        Place(id, hash_of(id));
      }
    }
  }

  std::vector<uint32_t> slots_;  // kNoId = empty; size a power of two
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace oc::storage::cache
