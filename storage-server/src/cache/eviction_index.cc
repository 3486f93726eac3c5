// EvictionIndex: the operations the store calls (eviction_index.h); the forest and the
// candidate heap are in eviction_links.cc, the snapshot in eviction_snapshot.cc.
#include "cache/eviction_index.h"

#include <algorithm>
#include <functional>

#include "oc/common/check.h"

namespace oc::storage::cache {
namespace {

// Bytes malloc holds for a std::string's buffer when it is not inline (glibc: the request plus
// an 8-byte header, rounded up to 16; libstdc++ keeps up to 15 characters inline).
uint64_t KeyHeapBytes(const std::string& key) {
  if (key.capacity() <= 15) {
    return 0;
  }
  return (key.capacity() + 1 + 8 + 15) & ~uint64_t{15};
}

uint64_t Fraction(uint64_t capacity, double f) {
  return static_cast<uint64_t>(static_cast<long double>(capacity) * f);
}

}  // namespace

uint32_t HashKey(std::string_view key) {
  const uint64_t h = std::hash<std::string_view>{}(key);
  return static_cast<uint32_t>(h ^ (h >> 32));
}

Status EvictionOptions::Validate() const {
  if (capacity_bytes == 0) {
    return Status::InvalidArgument("capacity_bytes", "a cache bucket needs a capacity > 0");
  }
  if (!(low_watermark > 0.0 && low_watermark <= high_watermark && high_watermark <= 1.0)) {
    return Status::InvalidArgument("low_watermark", "watermarks must satisfy 0 < low <= high <= 1");
  }
  if (!(unhit_discount >= 0.0 && unhit_discount < 1.0)) {  // 1 and up: see the header
    return Status::InvalidArgument("unhit_discount", "must be in [0, 1)");
  }
  return Status::Ok();
}

EvictionIndex::EvictionIndex(const EvictionOptions& options) : options_(options) {
  OC_CHECK(options_.Validate().ok());
}

uint32_t EvictionIndex::Find(std::string_view key) const {
  return table_.Find(key, HashKey(key),
                     [this](uint32_t id) { return std::string_view(entries_[id].key); });
}

uint32_t EvictionIndex::Create(std::string_view key, uint64_t size) {
  uint32_t id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    OC_CHECK(entries_.size() < kNoId);
    id = static_cast<uint32_t>(entries_.size());
    entries_.emplace_back();
  }
  Entry& e = entries_[id];
  e = Entry{};
  e.key.assign(key);
  e.hash = HashKey(key);
  e.size = size;
  key_heap_bytes_ += KeyHeapBytes(e.key);
  table_.Insert(id, e.hash);
  used_bytes_ += size;
  ++objects_;
  return id;
}

void EvictionIndex::Free(uint32_t id) {
  Entry& e = entries_[id];
  table_.Erase(id, e.hash);
  key_heap_bytes_ -= KeyHeapBytes(e.key);
  if ((e.flags & kGhost) != 0) {
    --ghosts_;
  }
  e = Entry{};  // releases the key's buffer
  e.flags = kFree;
  free_.push_back(id);
}

void EvictionIndex::SetSize(uint32_t id, uint64_t size) {
  Entry& e = entries_[id];
  used_bytes_ = used_bytes_ - e.size + size;
  if ((e.flags & kDead) != 0) {
    dead_bytes_ = dead_bytes_ - e.size + size;
  }
  e.size = size;
}

uint32_t EvictionIndex::FindOrCreatePresent(std::string_view key, uint64_t size, bool refresh) {
  uint32_t id = Find(key);
  if (id == kNoId) {
    id = Create(key, size);
    if (refresh) {
      RefreshCandidate(id);
    }
  } else if (!IsPresent(id)) {
    Revive(id, size);
  } else if (entries_[id].size != size) {
    SetSize(id, size);
  }
  return id;
}

void EvictionIndex::Revive(uint32_t id, uint64_t size) {
  Entry& e = entries_[id];
  e.flags &= static_cast<uint8_t>(~kGhost);
  --ghosts_;
  ++objects_;
  e.size = size;
  used_bytes_ += size;
  if ((e.flags & kDead) != 0) {
    dead_bytes_ += size;  // still below another ghost: its successors stay dead too
  } else {
    RelabelChildren(id);  // its successors are reachable again (unless below another ghost)
  }
  RefreshCandidate(id);
}

void EvictionIndex::RemovePresent(uint32_t id) {
  Entry& e = entries_[id];
  used_bytes_ -= e.size;
  --objects_;
  if ((e.flags & kDead) != 0) {
    dead_bytes_ -= e.size;
  }
  if (e.heap_pos != kNoId) {
    HeapRemove(id);
  }
  if (e.first_child == kNoId) {
    const uint32_t parent = e.parent;
    Unlink(id);
    Free(id);
    Prune(parent);  // frees a ghost left childless, or makes the parent a candidate
    return;
  }
  // Successors remain: keep the entry as a ghost so they know they are dead and go first.
  e.flags |= kGhost;
  e.size = 0;
  ++ghosts_;
  RelabelChildren(id);
}

void EvictionIndex::Raise(uint32_t id, uint64_t tick) {
  while (id != kNoId && entries_[id].last < tick) {
    entries_[id].last = tick;
    if (entries_[id].heap_pos != kNoId) {
      HeapFix(id);
    }
    id = entries_[id].parent;
  }
}

void EvictionIndex::MarkHit(uint32_t id) {
  if ((entries_[id].flags & kHit) == 0) {
    entries_[id].flags |= kHit;
    if (entries_[id].heap_pos != kNoId) {
      HeapFix(id);
    }
  }
}

void EvictionIndex::OnPut(std::span<const ChunkRef> chain, std::string_view predecessor) {
  std::lock_guard lock(mu_);
  const uint64_t tick = ++tick_;
  uint32_t prev = predecessor.empty() ? kNoId : Find(predecessor);
  uint32_t ghost = kNoId;  // a named predecessor that is gone: chain[0] is born dead
  if (!predecessor.empty() && prev == kNoId && !chain.empty()) {
    prev = ghost = CreateGhost(predecessor);
  }
  fresh_.clear();
  for (const ChunkRef& chunk : chain) {
    // A new chunk joins the candidates only after the loop: most are parents by then, and a
    // heap entry made and dropped per chunk would be two sifts for nothing.
    const uint32_t id = FindOrCreatePresent(chunk.key, chunk.size, /*refresh=*/false);
    fresh_.push_back(id);
    if (prev != kNoId && entries_[id].parent == kNoId) {
      (void)Adopt(id, prev);  // refused only when it would close a cycle
    }
    Raise(id, tick);  // first writer wins: a differing recorded predecessor is raised instead
    prev = id;
  }
  for (uint32_t id : fresh_) {
    RefreshCandidate(id);
  }
  if (ghost != kNoId) {
    Prune(ghost);  // frees it if chain[0] already had a predecessor
  }
}

uint64_t EvictionIndex::OnHit(std::span<const std::string_view> prefix) {
  std::lock_guard lock(mu_);
  const uint64_t tick = ++tick_;
  uint64_t known = 0;
  // From the deepest known chunk, follow the recorded predecessor links while they agree with
  // the prefix: one lookup per request in the common case, k key comparisons, one heap move.
  for (size_t j = prefix.size(); j-- > 0;) {
    uint32_t id = Find(prefix[j]);
    if (id == kNoId || !IsPresent(id)) {
      continue;
    }
    ++known;
    entries_[id].flags |= kHit;
    Raise(id, tick);
    while (j > 0) {
      const uint32_t p = entries_[id].parent;
      if (p != kNoId && entries_[p].key == prefix[j - 1]) {
        known += IsPresent(p) ? 1 : 0;
        MarkHit(p);
        id = p;
        --j;
        continue;
      }
      if (p == kNoId) {  // a root (e.g. rebuilt from a listing): adopt what the hit names
        const uint32_t q = Find(prefix[j - 1]);
        if (q != kNoId && IsPresent(q) && Adopt(id, q)) {
          ++known;
          MarkHit(q);
          id = q;
          --j;
          continue;
        }
      }
      break;  // the next key is looked up on its own
    }
  }
  return known;
}

void EvictionIndex::OnPlainPut(std::string_view key, uint64_t size) {
  std::lock_guard lock(mu_);
  const uint64_t tick = ++tick_;
  Raise(FindOrCreatePresent(key, size), tick);
}

void EvictionIndex::OnPlainGet(std::string_view key) {
  std::lock_guard lock(mu_);
  const uint64_t tick = ++tick_;
  const uint32_t id = Find(key);
  if (id != kNoId && IsPresent(id)) {
    MarkHit(id);
    Raise(id, tick);
  }
}

void EvictionIndex::OnRemove(std::string_view key) {
  std::lock_guard lock(mu_);
  const uint32_t id = Find(key);
  if (id != kNoId && IsPresent(id)) {
    RemovePresent(id);
  }
}

std::vector<Victim> EvictionIndex::PickVictims(uint64_t bytes_to_free) {
  std::lock_guard lock(mu_);
  std::vector<Victim> victims;
  uint64_t freed = 0;
  while (freed < bytes_to_free && !heap_.empty()) {
    const uint32_t id = heap_.front().id;
    const Entry& e = entries_[id];
    Victim v;
    v.key = e.key;
    v.size = e.size;
    v.last_tick = e.last;
    if (e.parent != kNoId) {
      v.predecessor = entries_[e.parent].key;
    }
    freed += e.size;
    // The age of hit victims (what plain recency would evict now), their mean over the first
    // 1024 and then a moving average as long: the scale of the unhit discount, free of the
    // discount's own effect.
    if ((e.flags & kHit) != 0) {
      victim_samples_ = std::min<uint64_t>(victim_samples_ + 1, 1024);
      const double age = static_cast<double>(tick_ - std::min(tick_, e.last));
      victim_age_ += (age - victim_age_) / static_cast<double>(victim_samples_);
    }
    ++evicted_objects_;
    evicted_bytes_ += e.size;
    RemovePresent(id);  // a leaf: its predecessor may become the next candidate
    victims.push_back(std::move(v));
  }
  return victims;
}

void EvictionIndex::Reinstate(const Victim& victim) {
  std::lock_guard lock(mu_);
  evicted_objects_ -= std::min<uint64_t>(evicted_objects_, 1);
  evicted_bytes_ -= std::min(evicted_bytes_, victim.size);
  const uint32_t existing = Find(victim.key);
  if (existing != kNoId && IsPresent(existing)) {
    return;  // recreated meanwhile; its PUT recorded it
  }
  const uint32_t id = FindOrCreatePresent(victim.key, victim.size);
  entries_[id].last = std::max(entries_[id].last, victim.last_tick);
  if (!victim.predecessor.empty() && entries_[id].parent == kNoId) {
    uint32_t p = Find(victim.predecessor);
    if (p == kNoId) {
      p = CreateGhost(victim.predecessor);  // gone meanwhile: the victim comes back dead
    }
    if (!Adopt(id, p)) {
      Prune(p);
    }
  }
  Raise(id, entries_[id].last);
  RefreshCandidate(id);
}

void EvictionIndex::GoneElsewhere(const Victim& victim) {
  std::lock_guard lock(mu_);
  evicted_objects_ -= std::min<uint64_t>(evicted_objects_, 1);
  evicted_bytes_ -= std::min(evicted_bytes_, victim.size);
}

bool EvictionIndex::NeedsEviction(uint64_t incoming) const {
  std::lock_guard lock(mu_);
  const uint64_t after = incoming > UINT64_MAX - used_bytes_ ? UINT64_MAX : used_bytes_ + incoming;
  return after > Fraction(options_.capacity_bytes, options_.high_watermark);
}

uint64_t EvictionIndex::BytesToFree(uint64_t incoming) const {
  std::lock_guard lock(mu_);
  const uint64_t after = incoming > UINT64_MAX - used_bytes_ ? UINT64_MAX : used_bytes_ + incoming;
  if (after <= Fraction(options_.capacity_bytes, options_.high_watermark)) {
    return 0;
  }
  return after - Fraction(options_.capacity_bytes, options_.low_watermark);
}

uint64_t EvictionIndex::MemoryBytesLocked() const {
  return entries_.capacity() * sizeof(Entry) + free_.capacity() * sizeof(uint32_t) +
         table_.MemoryBytes() + heap_.capacity() * sizeof(Candidate) + key_heap_bytes_;
}

uint64_t EvictionIndex::UsedBytes() const {
  std::lock_guard lock(mu_);
  return used_bytes_;
}

uint64_t EvictionIndex::MemoryBytes() const {
  std::lock_guard lock(mu_);
  return MemoryBytesLocked();
}

EvictionStats EvictionIndex::Stats() const {
  std::lock_guard lock(mu_);
  EvictionStats s;
  s.capacity_bytes = options_.capacity_bytes;
  s.used_bytes = used_bytes_;
  s.dead_bytes = dead_bytes_;
  s.objects = objects_;
  for (const Entry& e : entries_) {
    s.linked += (e.flags & kGhost) == 0 && e.parent != kNoId ? 1 : 0;
  }
  s.ghosts = ghosts_;
  s.evicted_objects = evicted_objects_;
  s.evicted_bytes = evicted_bytes_;
  s.memory_bytes = MemoryBytesLocked();
  return s;
}

void EvictionIndex::ClearLocked() {
  entries_.clear();
  free_.clear();
  table_.Clear();
  heap_.clear();
  tick_ = 0;
  victim_age_ = 0;
  victim_samples_ = 0;
  used_bytes_ = dead_bytes_ = objects_ = ghosts_ = key_heap_bytes_ = 0;
}

}  // namespace oc::storage::cache
