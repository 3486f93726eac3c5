#pragma once
// LifecycleWorker: the thread that executes the buckets' lifecycle configurations
// (docs/decisions/lifecycle.md, "The worker"). Every pass it lists the buckets, reads each
// one's configuration from the store, and for every enabled rule lists the rule's prefix:
// objects whose expiration (the earliest of the rules selecting them, s3_lifecycle.h
// ObjectExpiry) is due are deleted with Store::DeleteIf on the ETag and mtime the listing
// showed, so an object overwritten after the listing is never deleted; uploads whose
// AbortIncompleteMultipartUpload time is due are aborted.
//
// It sits above the Store seam, so it runs the same on every backend and through a remote
// store. Several gateways over one RADOS pool or storage server each run it without a leader:
// a second delete of the same version finds nothing or a newer object and does nothing, and
// only deletes and aborts that removed something are counted, so the counters summed over the
// gateways are the objects expired and the uploads aborted.
//
// Work is bounded per pass (LifecycleOptions::max_objects_per_pass): a pass that stops
// part-way keeps where each rule's listing stopped and continues there next time.
// Thread safety: RunPass calls are serialised; the counters may be read from any thread.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "oc/common/thread_annotations.h"
#include "oc/gateway/options.h"
#include "oc/storage/store.h"
#include "s3/s3_lifecycle.h"

namespace oc::gateway {

class LifecycleWorker {
 public:
  LifecycleWorker(storage::Store* store, const LifecycleOptions& options);
  ~LifecycleWorker();
  LifecycleWorker(const LifecycleWorker&) = delete;
  LifecycleWorker& operator=(const LifecycleWorker&) = delete;

  // Starts the thread (a pass at once, then every interval); Stop ends it, waiting for a pass
  // in progress to reach its next store call. Both idempotent.
  void Start();
  void Stop();

  struct PassReport {
    uint64_t buckets = 0;   // buckets with a configuration
    uint64_t examined = 0;  // objects and uploads looked at
    uint64_t expired = 0;   // objects this pass deleted
    uint64_t aborted = 0;   // uploads this pass aborted
    uint64_t failed = 0;    // store calls that failed (retried next pass)
    bool complete = true;   // false when the budget ran out before every rule was walked
  };
  // One pass at `now_unix_ms`, on the calling thread (what the thread runs; a test hook).
  PassReport RunPass(int64_t now_unix_ms);

  // Totals since the start (/stats and /metrics).
  uint64_t expired_objects() const { return expired_.load(std::memory_order_relaxed); }
  uint64_t aborted_uploads() const { return aborted_.load(std::memory_order_relaxed); }
  uint64_t passes() const { return passes_.load(std::memory_order_relaxed); }
  uint64_t failures() const { return failures_.load(std::memory_order_relaxed); }
  int64_t day_ms() const { return day_ms_; }

 private:
  // Where a rule's listing continues next pass (start_after, or key and upload id markers).
  struct Cursor {
    std::string after;
    std::string upload_id;
  };
  void Loop();
  // One bucket's rules; false once the budget is spent.
  bool PassBucket(const std::string& bucket, const LifecycleConfiguration& config, int64_t now,
                  uint64_t* budget, PassReport* report) OC_REQUIRES(pass_mu_);
  bool ExpireObjects(const std::string& bucket, const LifecycleConfiguration& config,
                     const LifecycleRule& rule, int64_t now, uint64_t* budget, PassReport* report)
      OC_REQUIRES(pass_mu_);
  bool AbortUploads(const std::string& bucket, const LifecycleConfiguration& config,
                    const LifecycleRule& rule, int64_t now, uint64_t* budget, PassReport* report)
      OC_REQUIRES(pass_mu_);
  bool Stopping();

  storage::Store* const store_;
  const LifecycleOptions options_;
  const int64_t day_ms_;

  std::mutex pass_mu_;
  // Keyed by bucket, '\0', rule ID, '\0', 'o' (objects) or 'u' (uploads).
  std::map<std::string, Cursor> cursors_ OC_GUARDED_BY(pass_mu_);

  std::atomic<uint64_t> expired_{0};
  std::atomic<uint64_t> aborted_{0};
  std::atomic<uint64_t> passes_{0};
  std::atomic<uint64_t> failures_{0};

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ OC_GUARDED_BY(stop_mu_) = false;
  std::thread thread_;
};

}  // namespace oc::gateway
