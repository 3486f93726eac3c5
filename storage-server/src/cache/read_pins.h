#pragma once
// The chunks descriptor GETs in flight have named in one cache bucket, and the victims whose
// delete is in flight, so that eviction never deletes a chunk under a GET that planned it
// present (docs/decisions/cache-buckets.md, "A GET in flight keeps its chunks").
//
// A GET pins every chunk it names before the engine plans, then waits out any delete of one
// of them already under way (its plan then finds the chunk gone: a miss, not a cut response).
// Eviction dooms a victim only if no GET pins it, and undooms it once its delete returned; a
// pinned victim is spared. Pin counts, since two GETs may name one chunk.
// Thread safety: every method takes the one mutex; Pin may wait, never while holding a pin of
// its own that a doomed victim could need (doomed victims are never pinned).

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "oc/common/thread_annotations.h"

namespace oc::storage::cache {

class ReadPins {
 public:
  // Pins `names`, then waits until none of them is doomed.
  void Pin(std::span<const std::string_view> names) OC_EXCLUDES(mu_) {
    std::unique_lock lock(mu_);
    for (std::string_view n : names) {
      ++pinned_[std::string(n)];
    }
    cv_.wait(lock, [&] {
      for (std::string_view n : names) {
        if (doomed_.contains(n)) {
          return false;
        }
      }
      return true;
    });
  }
  // REQUIRES: `names` were pinned by Pin.
  void Unpin(std::span<const std::string_view> names) OC_EXCLUDES(mu_) {
    std::lock_guard lock(mu_);
    for (std::string_view n : names) {
      const auto it = pinned_.find(n);
      if (it != pinned_.end() && --it->second == 0) {
        pinned_.erase(it);
      }
    }
  }
  // Marks `key` as being deleted unless a GET pins it; false: pinned, leave it.
  bool TryDoom(std::string_view key) OC_EXCLUDES(mu_) {
    std::lock_guard lock(mu_);
    if (pinned_.contains(key)) {
      return false;
    }
    doomed_.emplace(key);
    return true;
  }
  // `key`'s delete returned (whatever its outcome): GETs waiting for it go on.
  void Undoom(std::string_view key) OC_EXCLUDES(mu_) {
    {
      std::lock_guard lock(mu_);
      const auto it = doomed_.find(key);
      if (it != doomed_.end()) {
        doomed_.erase(it);
      }
    }
    cv_.notify_all();
  }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> pinned_ OC_GUARDED_BY(mu_);
  std::unordered_set<std::string, Hash, std::equal_to<>> doomed_ OC_GUARDED_BY(mu_);
};

}  // namespace oc::storage::cache
