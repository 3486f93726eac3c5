#pragma once
// Where recent probes and descriptor GETs of one cache bucket stopped: the first chunk each
// missed, and the last chunk it hit before that. A client that hit chunks 0..M-1 stores M..N-1
// next, and that PUT's descriptor names M-1 nowhere; found here, chunk M is linked under M-1
// as it is stored, so the index knows the new tail's chain (and that it is dead from birth when
// M-1 went in between) instead of a root it cannot place (docs/decisions/cache-chain-eviction.md,
// "Predecessors"). Bounded: the oldest of kCapacity entries is overwritten, a restart forgets
// them all; a missing entry only costs the link, as before.
// Thread safety: one mutex; both calls are a hash lookup or two.

#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace oc::storage::cache {

class MissLinks {
 public:
  // ~150 bytes each with 35-byte keys: about 2.5 MB per cache bucket when full.
  static constexpr size_t kCapacity = 16384;

  MissLinks() : ring_(kCapacity) {}

  // A request hit chunks up to `predecessor` and missed `missed` next.
  void Record(std::string_view missed, std::string_view predecessor) {
    std::lock_guard lock(mu_);
    if (slot_of_.contains(missed)) {
      return;  // the same key names the same prefix: nothing new
    }
    Entry& e = ring_[next_];
    if (!e.missed.empty()) {
      slot_of_.erase(e.missed);
    }
    e.missed.assign(missed);
    e.predecessor.assign(predecessor);
    slot_of_.emplace(e.missed, next_);
    next_ = (next_ + 1) % kCapacity;
  }

  // The predecessor recorded for a chunk a request missed, or empty.
  std::string PredecessorOf(std::string_view first) const {
    std::lock_guard lock(mu_);
    const auto it = slot_of_.find(first);
    return it == slot_of_.end() ? std::string() : ring_[it->second].predecessor;
  }

 private:
  struct Entry {
    std::string missed;
    std::string predecessor;
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  mutable std::mutex mu_;
  std::vector<Entry> ring_;  // kCapacity slots, overwritten oldest first
  size_t next_ = 0;
  std::unordered_map<std::string, size_t, Hash, std::equal_to<>> slot_of_;
};

}  // namespace oc::storage::cache
