#pragma once
// GroupSync: the group commit of RocksStore's object, part and group commits, over RocksDB's
// WAL and over the data files (rocks_store.h, "Durability and group commit").

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "oc/common/status.h"
#include "oc/common/thread_annotations.h"

namespace oc::storage {

// Group commit over one sync action (RocksDB's SyncWAL, or fdatasync of the data files written
// since the last sync): writers record their unsynced writes (Written) and wait for a sync
// that covers them (AwaitSynced). The action must make durable every write whose Written
// returned before the action started. The first waiter with no sync running leads:
// it gathers the writers it expects (as many as the last sync covered, or both cohorts when
// writers piled up during that sync) for at most half the last sync's duration (capped by
// kMaxGatherWait), then runs the action for all of them. Without the gathering, closed-loop
// clients split into two cohorts that alternate syncs, halving the commits per fsync.
// Thread-safe.
class GroupSync {
 public:
  explicit GroupSync(std::function<Status()> sync) : sync_(std::move(sync)) {}
  ~GroupSync() { StopBackground(); }
  // Notes a write that has completed (returned from DB::Write or pwrite); returns its ticket.
  uint64_t Written();
  // Returns once every write up to `ticket` is on stable storage; the sync's error if the
  // sync that covered it failed. A failure is sticky (every later ticket gets it) until
  // Rearm.
  Status AwaitSynced(uint64_t ticket);
  // Ends a failure's stickiness: tickets handed out before now keep failing, later ones are
  // synced again. The caller must first make sure a later sync cannot report success for
  // bytes the failed one lost (RocksDB: Resume and flush the memtables; data files: no
  // appends to a file whose sync failed). Returns whether a failure was pending.
  bool Rearm();
  // Whether a failed sync is sticky now (Rearm would end it).
  bool failed();
  // Starts a sync that covers every write up to `ticket` on a thread of its own and returns
  // at once: a large write's first bytes become durable while the rest still arrives, so
  // its commit's sync has only the tail left. Its outcome is any sync's (a failure is sticky,
  // reported to every waiter whose ticket it covered). The thread starts with the first call.
  void SyncInBackground(uint64_t ticket);
  // Ends the background thread (waiting for a sync it runs). The owner calls it before what
  // the sync action touches is destroyed; later SyncInBackground calls do nothing.
  void StopBackground();

 private:
  // Gathering never waits longer than this, whatever the disk's sync time.
  static constexpr std::chrono::microseconds kMaxGatherWait{1000};
  // Gathering never expects more writers than this.
  static constexpr uint64_t kMaxGroup = 1024;

  const std::function<Status()> sync_;
  std::mutex mu_;
  std::condition_variable synced_cv_;   // a sync finished
  std::condition_variable written_cv_;  // a write arrived (the gathering leader waits on it)
  uint64_t written_ OC_GUARDED_BY(mu_) = 0;
  uint64_t synced_ OC_GUARDED_BY(mu_) = 0;  // every ticket up to it is durable
  static constexpr uint64_t kSticky = UINT64_MAX;
  Status failure_ OC_GUARDED_BY(mu_);                  // set by a failed sync, then kept
  uint64_t failed_after_ OC_GUARDED_BY(mu_) = 0;       // tickets above it get failure_...
  uint64_t failed_upto_ OC_GUARDED_BY(mu_) = kSticky;  // ...up to this one (Rearm)
  bool syncing_ OC_GUARDED_BY(mu_) = false;
  uint64_t last_group_ OC_GUARDED_BY(mu_) = 1;  // writes the last sync covered
  uint64_t written_at_sync_end_ OC_GUARDED_BY(mu_) = 0;
  std::chrono::microseconds last_sync_time_ OC_GUARDED_BY(mu_){0};

  std::mutex background_mu_;
  std::condition_variable background_cv_;
  uint64_t background_ticket_ OC_GUARDED_BY(background_mu_) = 0;  // wanted durable
  bool background_stopped_ OC_GUARDED_BY(background_mu_) = false;
  std::thread background_;  // started by the first SyncInBackground
};

}  // namespace oc::storage
