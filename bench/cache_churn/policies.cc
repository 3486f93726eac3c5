// The churn benchmark's policies (policies.h).
#include "policies.h"

#include <cstdlib>
#include <list>
#include <set>
#include <tuple>
#include <unordered_map>

#include "cache/eviction_index.h"

namespace oc::bench::churn {
namespace {

namespace cache = oc::storage::cache;

class ChainAware : public Policy {
 public:
  ChainAware(const Trace& trace, uint64_t capacity, bool link_puts, double discount)
      : Policy(trace), index_(Options(capacity, discount)), link_puts_(link_puts) {
    for (uint32_t id = 0; id < trace.chunks.size(); ++id) {
      ids_.emplace(trace.chunks[id].key, id);
    }
  }
  void OnHit(uint32_t, std::span<const uint32_t> path, size_t hit) override {
    keys_.clear();
    for (size_t i = 0; i < hit; ++i) {
      keys_.push_back(trace_.chunks[path[i]].key);
    }
    (void)index_.OnHit(keys_);
  }
  void OnPut(uint32_t, std::span<const uint32_t> path, size_t from) override {
    chain_.clear();
    for (size_t i = from; i < path.size(); ++i) {
      const Chunk& c = trace_.chunks[path[i]];
      chain_.push_back({c.key, c.bytes});
      if (!Present(path[i])) {
        Add(path[i]);
      }
    }
    const bool named = link_puts_ && from > 0;
    index_.OnPut(chain_, named ? std::string_view(trace_.chunks[path[from - 1]].key) : "");
  }
  void EvictTo(uint64_t target) override {
    if (used_ <= target) {
      return;
    }
    for (const cache::Victim& v : index_.PickVictims(used_ - target)) {
      Drop(ids_.at(v.key));
    }
  }
  uint64_t MemoryBytes() const override { return index_.MemoryBytes(); }

 private:
  static cache::EvictionOptions Options(uint64_t capacity, double discount) {
    cache::EvictionOptions o;
    o.capacity_bytes = capacity;
    o.unhit_discount = discount;
    return o;
  }
  cache::EvictionIndex index_;
  const bool link_puts_;
  std::unordered_map<std::string_view, uint32_t> ids_;
  std::vector<std::string_view> keys_;
  std::vector<cache::ChunkRef> chain_;
};

class Lru : public Policy {
 public:
  explicit Lru(const Trace& trace) : Policy(trace), where_(trace.chunks.size()) {}
  void OnHit(uint32_t, std::span<const uint32_t> path, size_t hit) override {
    for (size_t i = 0; i < hit; ++i) {
      Touch(path[i]);
    }
  }
  void OnPut(uint32_t, std::span<const uint32_t> path, size_t from) override {
    for (size_t i = from; i < path.size(); ++i) {
      if (!Present(path[i])) {
        Add(path[i]);
        order_.push_back(path[i]);
        where_[path[i]] = std::prev(order_.end());
      } else {
        Touch(path[i]);  // if-none-match: present, left as it is, but used
      }
    }
  }
  void EvictTo(uint64_t target) override {
    while (used_ > target && !order_.empty()) {
      Drop(order_.front());
      order_.pop_front();
    }
  }

 private:
  void Touch(uint32_t id) { order_.splice(order_.end(), order_, where_[id]); }
  std::list<uint32_t> order_;  // front = least recent
  std::vector<std::list<uint32_t>::iterator> where_;
};

class Fifo : public Policy {
 public:
  explicit Fifo(const Trace& trace) : Policy(trace) {}
  void OnHit(uint32_t, std::span<const uint32_t>, size_t) override {}
  void OnPut(uint32_t, std::span<const uint32_t> path, size_t from) override {
    for (size_t i = from; i < path.size(); ++i) {
      if (!Present(path[i])) {
        Add(path[i]);
        order_.push_back(path[i]);
      }
    }
  }
  void EvictTo(uint64_t target) override {
    while (used_ > target && !order_.empty()) {
      Drop(order_.front());
      order_.pop_front();
    }
  }

 private:
  std::list<uint32_t> order_;
};

class Belady : public Policy {
 public:
  explicit Belady(const Trace& trace)
      : Policy(trace), next_use_(trace.path_ids.size()), key_(trace.chunks.size()) {
    // next_use_[i]: the next request after the one owning path slot i that asks the same chunk.
    std::vector<uint32_t> next(trace.chunks.size(), kNever);
    const auto requests = static_cast<uint32_t>(trace.path_offsets.size() - 1);
    for (uint32_t r = requests; r-- > 0;) {
      for (uint32_t i = trace.path_offsets[r]; i < trace.path_offsets[r + 1]; ++i) {
        next_use_[i] = next[trace.path_ids[i]];
      }
      for (uint32_t i = trace.path_offsets[r]; i < trace.path_offsets[r + 1]; ++i) {
        next[trace.path_ids[i]] = r;
      }
    }
  }
  void OnHit(uint32_t, std::span<const uint32_t>, size_t) override {}
  void OnPut(uint32_t r, std::span<const uint32_t> path, size_t from) override {
    const uint32_t base = trace_.path_offsets[r];
    for (size_t i = 0; i < path.size(); ++i) {  // every chunk the request asked is used now
      const uint32_t id = path[i];
      if (!Present(id)) {
        if (i < from) {
          continue;
        }
        Add(id);
      } else {
        queue_.erase(key_[id]);
      }
      key_[id] = {next_use_[base + i], trace_.chunks[id].depth, id};
      queue_.insert(key_[id]);
    }
  }
  void EvictTo(uint64_t target) override {
    while (used_ > target && !queue_.empty()) {
      const auto last = std::prev(queue_.end());  // furthest next use, then deepest
      Drop(std::get<2>(*last));
      queue_.erase(last);
    }
  }

 private:
  static constexpr uint32_t kNever = 0xFFFFFFFFu;
  using Key = std::tuple<uint32_t, uint16_t, uint32_t>;
  std::vector<uint32_t> next_use_;
  std::vector<Key> key_;
  std::set<Key> queue_;
};

}  // namespace

std::unique_ptr<Policy> MakePolicy(const std::string& name, const Trace& trace, uint64_t capacity) {
  if (name == "chain-aware") {
    return std::make_unique<ChainAware>(trace, capacity, true,
                                        cache::EvictionOptions{}.unhit_discount);
  }
  if (name == "chain-aware-recency") {
    return std::make_unique<ChainAware>(trace, capacity, true, 0.0);
  }
  if (name == "chain-aware-nolink") {
    return std::make_unique<ChainAware>(trace, capacity, false,
                                        cache::EvictionOptions{}.unhit_discount);
  }
  if (name.starts_with("chain-aware@")) {  // chain-aware@<unhit_discount>
    const double discount = std::strtod(name.c_str() + 12, nullptr);
    return std::make_unique<ChainAware>(trace, capacity, true, discount);
  }
  if (name == "lru") {
    return std::make_unique<Lru>(trace);
  }
  if (name == "fifo") {
    return std::make_unique<Fifo>(trace);
  }
  if (name == "belady") {
    return std::make_unique<Belady>(trace);
  }
  return nullptr;
}

}  // namespace oc::bench::churn
