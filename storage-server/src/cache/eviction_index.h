#pragma once
// EvictionIndex: what to evict from one cache bucket, knowing prefix chains (issue 31,
// "Eviction that knows prefix chains"; docs/decisions/cache-chain-eviction.md).
//
// A KV chunk is an object named by a hash of its whole prefix (docs/protocol.md, "Chunk keys"),
// and a prefix hit needs chunks 0..k-1 of its chain, so a chunk whose predecessor is gone can
// never be hit again ("dead bytes"). The index keeps, per object of the bucket, its size, its
// predecessor (recorded from the ordered keys of a descriptor PUT or hit) and a recency tick, and
// picks victims so that no dead bytes are made:
//   - the candidates are the leaves: objects no other present object names as predecessor
//     (plain S3 objects are always leaves, so they fall back to LRU in the same order);
//   - candidates go least recently used first, ties deeper first; when a leaf goes, its
//     predecessor becomes a candidate, so a chain is eaten from its tail and a chunk never goes
//     while a successor remains;
//   - a leaf no hit has touched since it was stored orders as if older (unhit_discount): the
//     chunks of a question or of a conversation's last turn are mostly never asked again;
//   - a hit raises the tick of every chunk it touched and of their predecessors, so a
//     predecessor's tick is never older than a successor's ("parent recency >= child");
//   - chunks already dead (a client deleted a predecessor, or a rebuild found one missing) go
//     before every live candidate, tails first.
// Predecessors: the first one recorded wins. With hash-chained keys a key names its whole
// prefix, so two descriptors can only disagree through a client bug or reused explicit names;
// keeping the first keeps the forest stable (no re-parenting, no cycles from a hostile order).
// A chunk recorded without one (the first of a descriptor, or rebuilt from a plain listing)
// acts as a root and adopts the predecessor the next PUT or hit names, unless that would close
// a cycle.
//
// The index records, it does not act: the store calls On*() as requests complete, asks
// NeedsEviction() / BytesToFree(), deletes what PickVictims() returns, in that order. Nothing
// here does I/O; recency lives in memory and a restart may lose it, never data: Snapshot()
// gives (key, predecessor, size, tick) rows the store persists in batches
// (EncodeSnapshot), and Rebuild() starts again from a listing of the bucket plus whatever
// snapshot rows it still has.
//
// Cost: O(1) expected hash lookups and O(log n) heap moves per object touched; a hit of k chunks
// costs one tick, k key comparisons along the recorded parent links and one heap move (only the
// deepest chunk can be a leaf). Memory: one 80-byte entry per object plus its key's malloc
// block when longer than 15 bytes, 8 bytes / load of hash slots and a 16-byte heap slot per
// leaf: 150 bytes per entry at 1M entries with 35-byte keys (MemoryBytes() counts it; the
// decision file has the measurement).
//
// Thread safety: every public method may be called concurrently; one mutex guards the index
// (one index per cache bucket). Operations are in-memory and short (microseconds for a whole
// descriptor) against the milliseconds of I/O of the request that calls them, so one lock per
// bucket costs nothing measurable; PickVictims holds it for one batch (bounded by the bytes
// asked), so the caller bounds the hold time by asking for one batch at a time.

#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cache/key_table.h"
#include "oc/common/result.h"
#include "oc/common/status.h"
#include "oc/common/thread_annotations.h"

namespace oc::storage::cache {

struct EvictionOptions {
  // The bucket's capacity in bytes ([cache] buckets = { name = bytes }). Required: > 0.
  // Default: 0 (unset: Validate() fails)
  uint64_t capacity_bytes = 0;
  // Eviction starts when used bytes exceed capacity x high_watermark...
  // Default: 0.90
  double high_watermark = 0.90;
  // ...and frees down to capacity x low_watermark. 0 < low <= high <= 1.
  // Default: 0.80
  double low_watermark = 0.80;
  // A leaf no hit has touched since it was stored orders as if it were older by this fraction
  // of the victims' recent age (ticks from their last touch to their eviction, a moving
  // average): stored-but-never-reused tails (a question, a finished conversation's last turn)
  // go before chains that were hit, by a margin that scales with how long the cache keeps
  // things. 0 = plain recency; must be < 1: at 1 and above a never-hit tail always goes
  // first, hit victims grow rare, their age goes stale and the hit ratio collapsed in the
  // sweep of docs/decisions/cache-chain-eviction.md.
  // Default: 0.5
  double unhit_discount = 0.5;

  Status Validate() const;
};

// One chunk of a descriptor, in chain order.
struct ChunkRef {
  std::string_view key;
  uint64_t size = 0;
};

// An object chosen for eviction. The caller deletes it; if it could not (or a writer recreated
// it meanwhile), it gives it back with Reinstate().
struct Victim {
  std::string key;
  uint64_t size = 0;
  std::string predecessor;  // empty: none recorded
  uint64_t last_tick = 0;
};

// One row of a snapshot: what a rebuild needs beyond a listing. Ticks are the index's logical
// clock (one tick per request), not wall time.
struct SnapshotRow {
  std::string key;
  std::string predecessor;  // empty: none recorded
  uint64_t size = 0;
  uint64_t last_tick = 0;
};

// One object of a bucket listing (the truth about presence and size after a restart).
struct ListedObject {
  std::string key;
  uint64_t size = 0;
};

struct EvictionStats {
  uint64_t capacity_bytes = 0;
  uint64_t used_bytes = 0;       // bytes of every present object, dead ones included
  uint64_t dead_bytes = 0;       // bytes of present chunks a prefix hit can no longer reach
  uint64_t objects = 0;          // present objects
  uint64_t linked = 0;           // present objects with a recorded predecessor (O(n) to count)
  uint64_t ghosts = 0;           // absent chunks kept only because present successors name them
  uint64_t evicted_objects = 0;  // picked by PickVictims since construction, minus reinstated
  uint64_t evicted_bytes = 0;
  uint64_t memory_bytes = 0;  // MemoryBytes()
};

class EvictionIndex {
 public:
  // REQUIRES: options.Validate().ok().
  explicit EvictionIndex(const EvictionOptions& options);

  // A descriptor PUT stored (or found present, with x-oc-if-none-match) these chunks, in chain
  // order: chain[i]'s predecessor is chain[i-1]; chain[0]'s is `predecessor` when the caller
  // knows it (a client that hit chunks 0..M-1 and stores only M..N-1 names M-1 nowhere in its
  // PUT; without it chain[0] keeps what it had, or is a root until a hit names its predecessor).
  // A size that differs from the recorded one replaces it (an overwrite). All of them, and their
  // recorded predecessors, become the most recent.
  void OnPut(std::span<const ChunkRef> chain, std::string_view predecessor = {}) OC_EXCLUDES(mu_);

  // A probe or descriptor GET served these leading chunks of a chain (the matched prefix, in
  // order). Returns how many of them the index knows (unknown keys are ignored: an object the
  // index has not seen yet, e.g. written by another server, is recorded by its PUT or a rebuild).
  uint64_t OnHit(std::span<const std::string_view> prefix) OC_EXCLUDES(mu_);

  // A plain S3 PUT / GET (or HEAD) of an object that is not a descriptor chunk: LRU only.
  void OnPlainPut(std::string_view key, uint64_t size) OC_EXCLUDES(mu_);
  void OnPlainGet(std::string_view key) OC_EXCLUDES(mu_);

  // A client deleted the object (or lifecycle expired it). Its successors, if any, are dead
  // from now on and go first. Unknown keys are ignored.
  void OnRemove(std::string_view key) OC_EXCLUDES(mu_);

  // Takes objects out of the index, in eviction order, until their bytes reach bytes_to_free
  // or nothing is left; their bytes leave used_bytes at once. The caller starts their deletes
  // in the order returned (successors before predecessors, so no delete makes a dead chunk
  // once the batch is done; with several in flight, a predecessor may go a moment before its
  // successor: cache_evict.cc).
  std::vector<Victim> PickVictims(uint64_t bytes_to_free) OC_EXCLUDES(mu_);

  // Puts a victim the caller did not delete back, as it was (predecessor and tick).
  void Reinstate(const Victim& victim) OC_EXCLUDES(mu_);
  // A victim the caller found already gone (another server's eviction, a client's delete):
  // its bytes stay freed, but it no longer counts as evicted here.
  void GoneElsewhere(const Victim& victim) OC_EXCLUDES(mu_);

  // used > capacity x high, counting `incoming` bytes about to be written.
  bool NeedsEviction(uint64_t incoming = 0) const OC_EXCLUDES(mu_);
  // When NeedsEviction(incoming): the bytes to free to get down to capacity x low after the
  // write; else 0.
  uint64_t BytesToFree(uint64_t incoming = 0) const OC_EXCLUDES(mu_);

  EvictionStats Stats() const OC_EXCLUDES(mu_);
  // Stats().used_bytes without Stats()'s O(n) count: what a PUT's admission asks.
  uint64_t UsedBytes() const OC_EXCLUDES(mu_);
  // Bytes of memory the index holds (entries, key bytes on the heap, hash table, heap).
  uint64_t MemoryBytes() const OC_EXCLUDES(mu_);

  // Every present object's row, predecessors before successors. Copies (the caller persists it
  // in batches without holding the index).
  std::vector<SnapshotRow> Snapshot() const OC_EXCLUDES(mu_);

  // Replaces the contents: `listing` is what the bucket holds (presence and size are taken
  // from it only); `rows` (a snapshot, possibly stale or partial) give predecessors and ticks.
  // A listed object without a row is a root with tick 0 (oldest); a row whose key is not
  // listed is ignored, except that a listed chunk whose recorded predecessor is not listed is
  // dead. The clock resumes after the largest tick seen.
  void Rebuild(std::span<const ListedObject> listing, std::span<const SnapshotRow> rows)
      OC_EXCLUDES(mu_);

  // Makes presence and sizes those of `listing`, a listing of the bucket taken after Tick()
  // returned `since_tick` (other servers of a shared pool write and delete it too), keeping
  // everything else the index knows (links, ticks, hit marks): a listed object the index does
  // not know is added as the most recent root (another server just wrote it); a present one
  // the listing lacks is removed as OnRemove would (another server deleted or evicted it),
  // unless it was touched after since_tick (this server wrote it while the listing ran); a
  // size that differs is corrected. O(index + listing) under the lock.
  void Reconcile(std::span<const ListedObject> listing, uint64_t since_tick) OC_EXCLUDES(mu_);
  // The logical clock now (Reconcile's since_tick).
  uint64_t Tick() const OC_EXCLUDES(mu_);

 private:
  static constexpr uint8_t kGhost = 1;  // absent; kept because a present successor names it
  static constexpr uint8_t kDead = 2;   // some predecessor above it is a ghost
  static constexpr uint8_t kFree = 4;   // an unused slot, on free_
  static constexpr uint8_t kHit = 8;    // a hit touched it since it was stored

  struct Entry {
    std::string key;
    uint64_t size = 0;
    uint64_t last = 0;  // tick of the last put or hit; >= every successor's
    uint32_t hash = 0;
    uint32_t parent = kNoId;
    uint32_t first_child = kNoId;  // children: a doubly linked sibling list
    uint32_t next_sibling = kNoId;
    uint32_t prev_sibling = kNoId;
    uint32_t heap_pos = kNoId;  // index in heap_ when a candidate (a present leaf)
    uint16_t depth = 0;         // links above it, saturating; the tie-break
    uint8_t flags = 0;
  };

  // Lookups and lifetime (eviction_index.cc).
  uint32_t Find(std::string_view key) const OC_REQUIRES(mu_);
  uint32_t Create(std::string_view key, uint64_t size) OC_REQUIRES(mu_);
  void Free(uint32_t id) OC_REQUIRES(mu_);
  void SetSize(uint32_t id, uint64_t size) OC_REQUIRES(mu_);
  uint32_t FindOrCreatePresent(std::string_view key, uint64_t size, bool refresh = true)
      OC_REQUIRES(mu_);
  void Revive(uint32_t id, uint64_t size) OC_REQUIRES(mu_);
  void RemovePresent(uint32_t id) OC_REQUIRES(mu_);
  void Raise(uint32_t id, uint64_t tick) OC_REQUIRES(mu_);
  void MarkHit(uint32_t id) OC_REQUIRES(mu_);

  // The forest (eviction_links.cc).
  bool Adopt(uint32_t child, uint32_t parent) OC_REQUIRES(mu_);
  void Unlink(uint32_t id) OC_REQUIRES(mu_);
  void Prune(uint32_t id) OC_REQUIRES(mu_);
  void Relabel(uint32_t root, uint16_t depth, bool dead) OC_REQUIRES(mu_);
  void RelabelChildren(uint32_t id) OC_REQUIRES(mu_);
  uint32_t CreateGhost(std::string_view key) OC_REQUIRES(mu_);
  void RefreshCandidate(uint32_t id) OC_REQUIRES(mu_);
  bool IsPresent(uint32_t id) const OC_REQUIRES(mu_) {
    return (entries_[id].flags & (kGhost | kFree)) == 0;
  }

  // The candidate heap (eviction_links.cc): min = next victim.
  struct Candidate {
    uint64_t order;  // OrderKey(): smaller goes first
    uint32_t id;
  };
  uint64_t OrderKey(uint32_t id) const OC_REQUIRES(mu_);
  static bool Before(const Candidate& a, const Candidate& b) {
    return a.order != b.order ? a.order < b.order : a.id < b.id;
  }
  void HeapPush(uint32_t id) OC_REQUIRES(mu_);
  void HeapRemove(uint32_t id) OC_REQUIRES(mu_);
  void HeapFix(uint32_t id) OC_REQUIRES(mu_);
  void SiftUp(size_t pos) OC_REQUIRES(mu_);
  void SiftDown(size_t pos) OC_REQUIRES(mu_);

  uint64_t MemoryBytesLocked() const OC_REQUIRES(mu_);
  void ClearLocked() OC_REQUIRES(mu_);

  const EvictionOptions options_;
  mutable std::mutex mu_;
  std::vector<Entry> entries_ OC_GUARDED_BY(mu_);
  std::vector<uint32_t> free_ OC_GUARDED_BY(mu_);  // reusable entry ids
  KeyTable table_ OC_GUARDED_BY(mu_);
  // Candidates (present leaves) with their order inline, so a sift reads no entries.
  std::vector<Candidate> heap_ OC_GUARDED_BY(mu_);
  std::vector<uint32_t> fresh_ OC_GUARDED_BY(mu_);                    // OnPut's chain ids (scratch)
  using Relabeling = std::pair<uint32_t, std::pair<uint16_t, bool>>;  // id, (depth, dead)
  std::vector<Relabeling> relabel_stack_ OC_GUARDED_BY(mu_);          // Relabel's (scratch)
  uint64_t tick_ OC_GUARDED_BY(mu_) = 0;
  double victim_age_ OC_GUARDED_BY(mu_) = 0;  // hit victims' ticks from touch to eviction
  uint64_t victim_samples_ OC_GUARDED_BY(mu_) = 0;
  uint64_t used_bytes_ OC_GUARDED_BY(mu_) = 0;
  uint64_t dead_bytes_ OC_GUARDED_BY(mu_) = 0;
  uint64_t objects_ OC_GUARDED_BY(mu_) = 0;
  uint64_t ghosts_ OC_GUARDED_BY(mu_) = 0;
  uint64_t key_heap_bytes_ OC_GUARDED_BY(mu_) = 0;
  uint64_t evicted_objects_ OC_GUARDED_BY(mu_) = 0;
  uint64_t evicted_bytes_ OC_GUARDED_BY(mu_) = 0;
};

// The snapshot's byte form (eviction_snapshot.cc), for the store to persist one batch of rows
// per record: "OCEV", a version byte, a varint row count, then per row varint key length, key,
// varint predecessor length, predecessor, varint size, varint tick. Decode checks every length
// against the bytes left and kMaxSnapshotKeyBytes before allocating; a malformed batch is
// kCorruption and yields no rows.
inline constexpr size_t kMaxSnapshotKeyBytes = 1024;  // S3's key limit; longer is corrupt
std::string EncodeSnapshot(std::span<const SnapshotRow> rows);
Result<std::vector<SnapshotRow>> DecodeSnapshot(std::string_view bytes);

}  // namespace oc::storage::cache
