// EvictionIndex's snapshot and rebuild, and the snapshot's byte form (eviction_index.h).
//
// Recency is the only state a restart may lose; presence and sizes always come from the
// store's listing, so a stale snapshot can misorder victims but never resurrect or hide data.
#include <algorithm>
#include <cstring>

#include "cache/eviction_index.h"

namespace oc::storage::cache {
namespace {

constexpr char kMagic[4] = {'O', 'C', 'E', 'V'};
constexpr uint8_t kVersion = 1;
constexpr size_t kMinRowBytes = 4;  // four varints of one byte each

void PutVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// Reads one varint from `in`, advancing it; false when truncated or longer than 10 bytes.
bool GetVarint(std::string_view& in, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && !in.empty(); shift += 7) {
    const auto byte = static_cast<uint8_t>(in.front());
    in.remove_prefix(1);
    if (shift == 63 && byte > 1) {
      return false;  // would overflow 64 bits
    }
    v |= uint64_t{byte & 0x7Fu} << shift;
    if ((byte & 0x80) == 0) {
      return true;
    }
  }
  return false;
}

bool GetString(std::string_view& in, std::string& out) {
  uint64_t n = 0;
  if (!GetVarint(in, n) || n > kMaxSnapshotKeyBytes || n > in.size()) {
    return false;  // checked before allocating
  }
  out.assign(in.substr(0, n));
  in.remove_prefix(n);
  return true;
}

}  // namespace

std::string EncodeSnapshot(std::span<const SnapshotRow> rows) {
  std::string out(kMagic, sizeof(kMagic));
  out.push_back(static_cast<char>(kVersion));
  PutVarint(out, rows.size());
  for (const SnapshotRow& row : rows) {
    PutVarint(out, row.key.size());
    out += row.key;
    PutVarint(out, row.predecessor.size());
    out += row.predecessor;
    PutVarint(out, row.size);
    PutVarint(out, row.last_tick);
  }
  return out;
}

Result<std::vector<SnapshotRow>> DecodeSnapshot(std::string_view in) {
  if (in.size() < sizeof(kMagic) + 1 || std::memcmp(in.data(), kMagic, sizeof(kMagic)) != 0) {
    return Status::Corruption("eviction snapshot: bad magic");
  }
  if (static_cast<uint8_t>(in[sizeof(kMagic)]) != kVersion) {
    return Status::Corruption("eviction snapshot: unknown version");
  }
  in.remove_prefix(sizeof(kMagic) + 1);
  uint64_t count = 0;
  if (!GetVarint(in, count) || count > in.size() / kMinRowBytes) {
    return Status::Corruption("eviction snapshot: row count past the end");
  }
  std::vector<SnapshotRow> rows(count);
  for (SnapshotRow& row : rows) {
    if (!GetString(in, row.key) || row.key.empty() || !GetString(in, row.predecessor) ||
        !GetVarint(in, row.size) || !GetVarint(in, row.last_tick)) {
      return Status::Corruption("eviction snapshot: truncated or oversized row");
    }
  }
  if (!in.empty()) {
    return Status::Corruption("eviction snapshot: bytes after the last row");
  }
  return rows;
}

std::vector<SnapshotRow> EvictionIndex::Snapshot() const {
  std::lock_guard lock(mu_);
  std::vector<SnapshotRow> rows;
  rows.reserve(objects_);
  std::vector<uint32_t> stack;
  for (uint32_t root = 0; root < entries_.size(); ++root) {
    if ((entries_[root].flags & kFree) != 0 || entries_[root].parent != kNoId) {
      continue;
    }
    stack.push_back(root);  // preorder: every row after its predecessor's
    while (!stack.empty()) {
      const uint32_t id = stack.back();
      stack.pop_back();
      const Entry& e = entries_[id];
      if (IsPresent(id)) {
        rows.push_back(
            {e.key, e.parent == kNoId ? std::string() : entries_[e.parent].key, e.size, e.last});
      }
      for (uint32_t c = e.first_child; c != kNoId; c = entries_[c].next_sibling) {
        stack.push_back(c);
      }
    }
  }
  return rows;
}

void EvictionIndex::Rebuild(std::span<const ListedObject> listing,
                            std::span<const SnapshotRow> rows) {
  std::lock_guard lock(mu_);
  ClearLocked();
  for (const ListedObject& object : listing) {
    if (Find(object.key) == kNoId) {
      (void)Create(object.key, object.size);
    }
  }
  uint64_t max_tick = 0;
  for (const SnapshotRow& row : rows) {
    const uint32_t id = Find(row.key);
    if (id != kNoId && IsPresent(id)) {
      entries_[id].last = std::max(entries_[id].last, row.last_tick);
      max_tick = std::max(max_tick, row.last_tick);
    }
  }
  for (const SnapshotRow& row : rows) {
    const uint32_t id = Find(row.key);
    if (id == kNoId || !IsPresent(id) || row.predecessor.empty() || entries_[id].parent != kNoId) {
      continue;
    }
    uint32_t p = Find(row.predecessor);
    if (p == kNoId) {
      p = CreateGhost(row.predecessor);  // listed, but its predecessor is not: dead
    }
    if (!Adopt(id, p)) {  // keeps parent recency >= child's as it links
      Prune(p);
    }
  }
  for (uint32_t id = 0; id < entries_.size(); ++id) {
    if ((entries_[id].flags & kFree) == 0) {
      RefreshCandidate(id);
    }
  }
  tick_ = max_tick;
}

void EvictionIndex::Reconcile(std::span<const ListedObject> listing, uint64_t since_tick) {
  std::lock_guard lock(mu_);
  const uint64_t tick = ++tick_;
  std::vector<bool> listed(entries_.size(), false);
  for (const ListedObject& object : listing) {
    uint32_t id = Find(object.key);
    if (id == kNoId) {
      id = Create(object.key, object.size);  // another server wrote it: the most recent
      entries_[id].last = tick;
      RefreshCandidate(id);
    } else if (!IsPresent(id)) {
      Revive(id, object.size);  // a ghost: its successors are reachable again
      Raise(id, tick);
    } else if (entries_[id].size != object.size) {
      SetSize(id, object.size);  // overwritten elsewhere
    }
    if (id >= listed.size()) {
      listed.resize(id + 1, false);
    }
    listed[id] = true;
  }
  // Removal frees entries (their slots become kFree) but never creates any, so the loop's
  // bound holds.
  for (uint32_t id = 0; id < entries_.size(); ++id) {
    if ((id < listed.size() && listed[id]) || !IsPresent(id) || entries_[id].last > since_tick) {
      continue;
    }
    RemovePresent(id);
  }
}

uint64_t EvictionIndex::Tick() const {
  std::lock_guard lock(mu_);
  return tick_;
}

}  // namespace oc::storage::cache
