#pragma once
// The eviction policies the churn benchmark compares (bench/cache_churn/main.cc), all over chunk
// ids of one Trace (workload.h) and byte-accounted the same way:
//   chain-aware         the store's EvictionIndex (storage-server/src/cache/eviction_index.h)
//                       with its default options, told each PUT's predecessor (the client hit
//                       chunks 0..M-1, stores M..);
//   chain-aware-recency the same with unhit_discount 0: plain recency over chain leaves;
//   chain-aware-nolink  the defaults when a PUT cannot name that predecessor: links are learnt
//                       only from hits, so a fresh tail starts as a root;
//   chain-aware@<f>     the defaults with unhit_discount f (a sweep);
//   lru                 per-object LRU as most KV stores keep it: each chunk of a hit or PUT is
//                       touched in chain order, so a chain's head is its least recent chunk;
//   fifo                insertion order, hits change nothing;
//   belady              the offline bound over chains: evict the chunk whose next use is
//                       furthest (never used again first), deeper first on ties. A chunk's next
//                       use is never later than its successor's, so it eats chains from their
//                       tails too. The classic reference, not a proven optimum for variable
//                       sizes and prefix hits.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "workload.h"

namespace oc::bench::churn {

class Policy {
 public:
  virtual ~Policy() = default;
  // Request `r` asked `path`; its first `hit` chunks were present and served.
  virtual void OnHit(uint32_t r, std::span<const uint32_t> path, size_t hit) = 0;
  // Request `r` stored path[from..] (all of them are present afterwards).
  virtual void OnPut(uint32_t r, std::span<const uint32_t> path, size_t from) = 0;
  // Evicts until at most `target` bytes are used.
  virtual void EvictTo(uint64_t target) = 0;
  // Memory the policy's structure holds per present chunk (0 when not measured).
  virtual uint64_t MemoryBytes() const { return 0; }

  bool Present(uint32_t id) const { return present_[id]; }
  uint64_t used_bytes() const { return used_; }
  uint64_t inserted_bytes() const { return inserted_; }
  uint64_t evicted_chunks() const { return evicted_; }
  uint64_t present_chunks() const { return count_; }
  const std::vector<uint32_t>& live() const { return live_; }

 protected:
  explicit Policy(const Trace& trace)
      : trace_(trace), present_(trace.chunks.size(), false), slot_(trace.chunks.size()) {}
  void Add(uint32_t id) {
    present_[id] = true;
    slot_[id] = static_cast<uint32_t>(live_.size());
    live_.push_back(id);
    used_ += trace_.chunks[id].bytes;
    inserted_ += trace_.chunks[id].bytes;
    ++count_;
  }
  void Drop(uint32_t id) {
    present_[id] = false;
    live_[slot_[id]] = live_.back();
    slot_[live_.back()] = slot_[id];
    live_.pop_back();
    used_ -= trace_.chunks[id].bytes;
    ++evicted_;
    --count_;
  }

  const Trace& trace_;
  std::vector<bool> present_;
  std::vector<uint32_t> live_;  // present chunk ids, any order
  std::vector<uint32_t> slot_;  // where each present id sits in live_
  uint64_t used_ = 0;
  uint64_t inserted_ = 0;
  uint64_t evicted_ = 0;
  uint64_t count_ = 0;
};

std::unique_ptr<Policy> MakePolicy(const std::string& name, const Trace& trace, uint64_t capacity);
inline const std::vector<std::string> kPolicies = {
    "chain-aware", "chain-aware-recency", "chain-aware-nolink", "lru", "fifo", "belady"};

}  // namespace oc::bench::churn
