// EvictionIndex's forest of predecessor links and its candidate heap (eviction_index.h).
//
// Labels that follow from the ancestors (depth, and kDead: "some predecessor above is a
// ghost") are recomputed top-down by Relabel, which stops where a node's labels are already
// right (its subtree then is too), so attaching a fresh chunk costs O(1) and only a client's
// delete of a chunk with successors, or its return, walks a subtree.
#include <algorithm>
#include <utility>
#include <vector>

#include "cache/eviction_index.h"

namespace oc::storage::cache {
namespace {

uint16_t Deeper(uint16_t depth) { return depth == UINT16_MAX ? depth : depth + 1; }

}  // namespace

uint32_t EvictionIndex::CreateGhost(std::string_view key) {
  const uint32_t id = Create(key, 0);
  --objects_;  // absent: only named as a predecessor
  entries_[id].flags |= kGhost;
  ++ghosts_;
  return id;
}

bool EvictionIndex::Adopt(uint32_t child, uint32_t parent) {
  for (uint32_t p = parent; p != kNoId; p = entries_[p].parent) {
    if (p == child) {
      return false;  // would close a cycle (a hostile or inconsistent order of keys)
    }
  }
  Entry& c = entries_[child];
  Entry& up = entries_[parent];
  c.parent = parent;
  c.prev_sibling = kNoId;
  c.next_sibling = up.first_child;
  if (up.first_child != kNoId) {
    entries_[up.first_child].prev_sibling = child;
  }
  up.first_child = child;
  Relabel(child, Deeper(up.depth), (up.flags & (kGhost | kDead)) != 0);
  RefreshCandidate(parent);  // no longer a leaf
  Raise(parent, entries_[child].last);
  return true;
}

void EvictionIndex::Unlink(uint32_t id) {
  Entry& e = entries_[id];
  if (e.parent == kNoId) {
    return;
  }
  if (e.prev_sibling != kNoId) {
    entries_[e.prev_sibling].next_sibling = e.next_sibling;
  } else {
    entries_[e.parent].first_child = e.next_sibling;
  }
  if (e.next_sibling != kNoId) {
    entries_[e.next_sibling].prev_sibling = e.prev_sibling;
  }
  e.parent = e.prev_sibling = e.next_sibling = kNoId;
}

void EvictionIndex::Prune(uint32_t id) {
  while (id != kNoId) {
    const Entry& e = entries_[id];
    if ((e.flags & kGhost) == 0 || e.first_child != kNoId) {
      RefreshCandidate(id);
      return;
    }
    const uint32_t parent = e.parent;  // a ghost nobody names any more
    Unlink(id);
    Free(id);
    id = parent;
  }
}

void EvictionIndex::Relabel(uint32_t root, uint16_t depth, bool dead) {
  std::vector<Relabeling>& stack = relabel_stack_;  // reused: no allocation per adoption
  stack.assign(1, {root, {depth, dead}});
  while (!stack.empty()) {
    const auto [id, label] = stack.back();
    stack.pop_back();
    Entry& e = entries_[id];
    const bool was_dead = (e.flags & kDead) != 0;
    if (e.depth == label.first && was_dead == label.second && id != root) {
      continue;  // already right, and so is everything below it
    }
    e.depth = label.first;
    if (was_dead != label.second) {
      e.flags ^= kDead;
      if (IsPresent(id)) {
        dead_bytes_ = label.second ? dead_bytes_ + e.size : dead_bytes_ - e.size;
      }
    }
    if (e.heap_pos != kNoId) {
      HeapFix(id);
    }
    const bool child_dead = label.second || (e.flags & kGhost) != 0;
    for (uint32_t c = e.first_child; c != kNoId; c = entries_[c].next_sibling) {
      stack.push_back({c, {Deeper(label.first), child_dead}});
    }
  }
}

void EvictionIndex::RelabelChildren(uint32_t id) {
  const Entry& e = entries_[id];
  Relabel(id, e.depth, (e.flags & kDead) != 0);
}

void EvictionIndex::RefreshCandidate(uint32_t id) {
  const Entry& e = entries_[id];
  const bool wanted = IsPresent(id) && e.first_child == kNoId;
  if (wanted && e.heap_pos == kNoId) {
    HeapPush(id);
  } else if (!wanted && e.heap_pos != kNoId) {
    HeapRemove(id);
  } else if (wanted) {
    HeapFix(id);
  }
}

// Eviction order, packed into one word so the heap compares without touching entries: dead
// before live (bit 63 clear), then least recent (the tick, 47 bits: 10^14 requests), then deeper
// (depth inverted, 16 bits); equal words go by the lower id, so a run is deterministic.
uint64_t EvictionIndex::OrderKey(uint32_t id) const {
  const Entry& e = entries_[id];
  constexpr uint64_t kTickMask = (uint64_t{1} << 47) - 1;
  const uint64_t live = (e.flags & kDead) == 0 ? 1 : 0;
  const auto discount = (e.flags & kHit) != 0
                            ? uint64_t{0}
                            : static_cast<uint64_t>(options_.unhit_discount * victim_age_);
  const uint64_t tick = e.last > discount ? e.last - discount : 0;
  return live << 63 | std::min(tick, kTickMask) << 16 | (UINT16_MAX - e.depth);
}

void EvictionIndex::HeapPush(uint32_t id) {
  entries_[id].heap_pos = static_cast<uint32_t>(heap_.size());
  heap_.push_back({OrderKey(id), id});
  SiftUp(heap_.size() - 1);
}

void EvictionIndex::HeapRemove(uint32_t id) {
  const size_t pos = entries_[id].heap_pos;
  const Candidate last = heap_.back();
  heap_.pop_back();
  entries_[id].heap_pos = kNoId;
  if (last.id == id) {
    return;
  }
  heap_[pos] = last;
  entries_[last.id].heap_pos = static_cast<uint32_t>(pos);
  HeapFix(last.id);
}

void EvictionIndex::HeapFix(uint32_t id) {
  const size_t pos = entries_[id].heap_pos;
  heap_[pos].order = OrderKey(id);
  if (pos > 0 && Before(heap_[pos], heap_[(pos - 1) / 2])) {
    SiftUp(pos);
  } else {
    SiftDown(pos);
  }
}

void EvictionIndex::SiftUp(size_t pos) {
  const Candidate item = heap_[pos];
  while (pos > 0) {
    const size_t up = (pos - 1) / 2;
    if (!Before(item, heap_[up])) {
      break;
    }
    heap_[pos] = heap_[up];
    entries_[heap_[pos].id].heap_pos = static_cast<uint32_t>(pos);
    pos = up;
  }
  heap_[pos] = item;
  entries_[item.id].heap_pos = static_cast<uint32_t>(pos);
}

void EvictionIndex::SiftDown(size_t pos) {
  const Candidate item = heap_[pos];
  const size_t n = heap_.size();
  for (;;) {
    size_t child = 2 * pos + 1;
    if (child >= n) {
      break;
    }
    if (child + 1 < n && Before(heap_[child + 1], heap_[child])) {
      ++child;
    }
    if (!Before(heap_[child], item)) {
      break;
    }
    heap_[pos] = heap_[child];
    entries_[heap_[pos].id].heap_pos = static_cast<uint32_t>(pos);
    pos = child;
  }
  heap_[pos] = item;
  entries_[item.id].heap_pos = static_cast<uint32_t>(pos);
}

}  // namespace oc::storage::cache
