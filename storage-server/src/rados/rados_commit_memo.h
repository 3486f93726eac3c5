#pragma once
// CommitMemo: what the commits of one RadosStore share so that writers of one key in one
// process never race each other at the OSD (docs/decisions/rados-put-one-commit-op.md). Three
// parts, all keyed by (bucket id, object name):
//  - striped locks: a commit holds the stripes of its keys for its whole guarded op and its
//    retries, so the commits of one key within the process run one at a time (kStripes bounds
//    the locks; two keys of one stripe wait for each other, which is rare and harmless);
//  - pending PUTs: a PUT registers, then waits for its key's stripe; whichever PUT of the key
//    gets the stripe next takes every registered PUT of that key into its one op (a group
//    commit: the last registered becomes the record, the others' versions go to the GC in the
//    same op, as if each had been overwritten at once by the next), and the PUTs it took
//    return as soon as it finishes;
//  - remembered records: the record this process last committed for a key (an LRU of at most
//    kRememberedKeys), which the next commit of the key expects before reading anything: one
//    op when no other process wrote the key since; a wrong guess costs what a conflict costs.
// The guarded op stays the commit point: nothing here is trusted beyond choosing what the op
// compares against.
// Thread safety: every method may be called concurrently.

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "oc/common/status.h"
#include "oc/common/thread_annotations.h"
#include "records/meta_codec.h"

namespace oc::storage::rados {

class CommitMemo {
 public:
  // Lock stripes: enough that 32 writers of distinct keys rarely share one.
  static constexpr size_t kStripes = 256;
  // Keys whose last committed record is remembered (a few hundred bytes each).
  static constexpr size_t kRememberedKeys = 4096;

  // Holds some stripes; releases them when destroyed.
  class StripeHold {
   public:
    StripeHold() = default;
    StripeHold(CommitMemo* memo, std::vector<size_t> stripes)
        : memo_(memo), stripes_(std::move(stripes)) {}
    StripeHold(StripeHold&& other) noexcept
        : memo_(std::exchange(other.memo_, nullptr)), stripes_(std::move(other.stripes_)) {}
    StripeHold& operator=(StripeHold&&) = delete;
    StripeHold(const StripeHold&) = delete;
    ~StripeHold();

   private:
    CommitMemo* memo_ = nullptr;
    std::vector<size_t> stripes_;
  };

  // A PUT of one key. Whichever commit takes it sets `status` and then `done`.
  struct PendingPut {
    ObjectRecord record;
    bool done = false;  // guarded by the memo's mutex, as is status once taken
    Status status;
  };
  // A PUT's turn: either its PUT was committed by another (done, no hold), or it holds the
  // key's stripe and commits `batch`: every PUT of the key registered by now, in order, its
  // own among them.
  struct PutTurn {
    std::optional<StripeHold> hold;
    std::vector<PendingPut*> batch;
  };

  // The memo's name for `name` in bucket `bucket_id`.
  static std::string KeyId(uint64_t bucket_id, std::string_view name);

  // Waits for the stripes of `key_ids` and holds them, taking them in ascending order (no
  // deadlock between commits of overlapping key sets).
  StripeHold LockStripes(const std::vector<std::string>& key_ids);
  // Registers `put` for `key_id` and waits until another commit finished it or the key's
  // stripe is free. REQUIRES: `put` outlives the call.
  PutTurn AwaitPutTurn(const std::string& key_id, PendingPut* put);
  // Gives every PUT of `batch` its status and wakes their waiters. REQUIRES: the caller
  // holds their stripe (from AwaitPutTurn).
  void FinishPuts(const std::vector<PendingPut*>& batch, const Status& status);
  // PUTs registered for `key_id` and not taken by a commit yet (tests).
  size_t PendingCount(const std::string& key_id);

  // The record last committed for `key_id` by this process, if remembered; nullopt if not
  // remembered or if the last commit removed it.
  std::optional<ObjectRecord> Recall(const std::string& key_id);
  // Remembers the record a commit left (nullopt: the key was removed).
  void Remember(const std::string& key_id, const std::optional<ObjectRecord>& record);
  // Forgets what is remembered of `key_id` (a commit whose outcome is unknown).
  void Forget(const std::string& key_id);

 private:
  static size_t StripeOf(const std::string& key_id);
  void Release(const std::vector<size_t>& stripes);

  std::mutex mu_;
  std::condition_variable cv_;  // a stripe released or a PUT finished
  bool busy_[kStripes] OC_GUARDED_BY(mu_) = {};
  std::map<std::string, std::vector<PendingPut*>> pending_ OC_GUARDED_BY(mu_);
  // Most recently used first; index_ points into it.
  std::list<std::pair<std::string, ObjectRecord>> lru_ OC_GUARDED_BY(mu_);
  std::unordered_map<std::string, std::list<std::pair<std::string, ObjectRecord>>::iterator> index_
      OC_GUARDED_BY(mu_);
};

}  // namespace oc::storage::rados
