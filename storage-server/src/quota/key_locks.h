#pragma once
// KeyLocks: exclusive locks on names (a bucket's key, an upload), taken by the quota store
// around "read the old size, commit, account" so that two writes of one key in this process
// cannot both count the same old object (docs/decisions/bucket-quotas.md). Several names are
// taken in sorted order, so two holders of overlapping sets cannot deadlock. Only quota
// buckets' writes take them; a name is held for one commit (a descriptor PUT: its transfer).
// Thread safety: every method may be called concurrently.

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "oc/common/thread_annotations.h"

namespace oc::storage::quota {

class KeyLocks {
 public:
  // Holds its names until destroyed.
  class Held {
   public:
    Held(KeyLocks* owner, std::vector<std::string> names)
        : owner_(owner), names_(std::move(names)) {}
    Held(Held&& other) noexcept : owner_(other.owner_), names_(std::move(other.names_)) {
      other.owner_ = nullptr;
    }
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;
    Held& operator=(Held&&) = delete;
    ~Held() {
      if (owner_ != nullptr) {
        owner_->Release(names_);
      }
    }

   private:
    KeyLocks* owner_;
    std::vector<std::string> names_;
  };

  // Waits until every one of `names` is free, then holds them all.
  Held Lock(std::vector<std::string> names) {
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    std::unique_lock lock(mu_);
    for (const std::string& name : names) {
      cv_.wait(lock, [&]() OC_REQUIRES(mu_) { return held_.count(name) == 0; });
      held_.insert(name);
    }
    return Held(this, std::move(names));
  }

 private:
  void Release(const std::vector<std::string>& names) {
    {
      std::lock_guard lock(mu_);
      for (const std::string& name : names) {
        held_.erase(name);
      }
    }
    cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> held_ OC_GUARDED_BY(mu_);
};

}  // namespace oc::storage::quota
