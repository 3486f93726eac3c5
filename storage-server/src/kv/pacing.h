#pragma once
// Pacing: the glue between the scheduler (oc_sched: admission, rates, the DWRR pacer) and
// layerwise delivery (docs/design.md: Scheduler; issue 6).
//
// PacingService owns one sched::Scheduler for the whole store. GetLayers asks it for a
// RequestPacer only when the plan is layerwise (W >= Θ, KvOptions' Θ being the one threshold);
// chunkwise requests run outside the shared pool with no pacer. Admission returns a Grant held by
// the RequestPacer, so the request's share is released on every exit path (completion, error,
// cancel) when the pacer is destroyed.
//
// The assembler calls RequestPacer::BeforeLayer(l, s) before writing layer l: the layer is
// enqueued in the scheduler (with layer l+1, so the request's flow never runs dry between layers
// while its writer is busy: parts are due one part's spacing apart, and time the flow sits
// empty is lost to it for good when the others hold the rest of the cap) and the call blocks
// until the scheduler dispatches its first part;
// before each write of the layer, BeforeBytes(n) blocks until the parts dispatched cover the bytes
// written so far plus n (docs/decisions/pacer-sub-layer-parts.md). So no byte leaves before the
// pacer let it go, and the layer's notification, which follows its writes, follows its last part.
// Dispatching is done by one of two drivers:
// - a dispatcher thread (Start()): loops on Scheduler::Next(), sleeping until `wait_until` on the
//   real clock, woken by every enqueue and release (production);
// - the caller (tests, the emulator with an injected ManualClock): WaitQuiescent() until every
//   admitted request is either blocked in BeforeLayer or gone, then DispatchOnce(), and advance
//   the clock on kWait. Since no request runs while the clock moves, everything a request writes
//   after a dispatch is timestamped at the dispatch time.
//
// Thread safety: PacingService methods may be called concurrently. A RequestPacer is used by its
// request's thread, except Cancel() which any thread may call. A RequestPacer must not outlive
// its PacingService.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "oc/common/result.h"
#include "oc/common/thread_annotations.h"
#include "oc/descriptor/descriptor.h"
#include "oc/sched/grant.h"
#include "oc/sched/options.h"
#include "oc/sched/pacer.h"
#include "oc/storage/kv.h"

namespace oc::storage::kv {

class PacingService;

// One layerwise request's pacer; owns its Grant.
class RequestPacer final : public LayerPacer {
 public:
  ~RequestPacer() override;
  RequestPacer(const RequestPacer&) = delete;
  RequestPacer& operator=(const RequestPacer&) = delete;

  // Enqueues layer `layer` of `bytes` and blocks until the scheduler dispatches its first part.
  // kCancelled after Cancel() or when the service stops; kUnavailable if nothing was dispatched
  // within the service's wait limit; the scheduler's error for a bad layer order or size.
  Status BeforeLayer(uint32_t layer, uint64_t bytes) override;
  // Blocks until the parts of the current layer dispatched cover the bytes written of it so far
  // plus `bytes` (clamped to the layer). Errors as BeforeLayer; kFailedPrecondition before any
  // BeforeLayer.
  Status BeforeBytes(uint64_t bytes) override;
  // The rate assigned at admission, Gbps.
  double assigned_rate_gbps() const override { return admitted_rate_gbps_; }
  // Releases the share now; a blocked or later BeforeLayer returns kCancelled. Any thread.
  void Cancel();
  // The scheduler's id (RequestStats::id).
  uint64_t id() const { return id_; }

 private:
  friend class PacingService;
  // `layers`: L, the request's layer count (W / s), for the one-layer lookahead.
  RequestPacer(PacingService* service, sched::Grant grant, double rate_gbps, uint64_t layers);

  PacingService* const service_;
  const uint64_t id_;
  const double admitted_rate_gbps_;
  const uint64_t layers_;
  // Guarded by service_->mu_. Each pacer waits on its own condition, so a dispatch wakes only
  // its request (a shared one woke every blocked request per dispatch: issue 16).
  std::condition_variable cv_;
  // True once the scheduler has dispatched the first `bytes` of layer `layer` (all of it when a
  // later layer has a dispatched part: a flow's parts leave in order).
  bool Covered(int64_t layer, uint64_t bytes) const {
    return dispatched_layer_ > layer ||
           (dispatched_layer_ == layer && dispatched_in_layer_ >= bytes);
  }
  // Waits (lock held on `lock`) until Covered(layer, bytes); the errors of BeforeLayer.
  Status WaitCovered(std::unique_lock<std::mutex>& lock, int64_t layer, uint64_t bytes);

  sched::Grant grant_;
  int64_t dispatched_layer_ = -1;     // the last layer of which the scheduler let a part go
  uint64_t dispatched_in_layer_ = 0;  // bytes of dispatched_layer_ let go so far
  int64_t enqueued_layer_ = -1;       // the last layer queued in the scheduler
  int64_t layer_ = -1;                // the layer being written (the last BeforeLayer)
  uint64_t layer_bytes_ = 0;          // its bytes
  uint64_t written_ = 0;              // its bytes covered by BeforeLayer/BeforeBytes so far
  // What the blocked thread waits for: Covered(wait_layer_, wait_bytes_). A dispatch wakes it only
  // then, so a manual driver does not see it running while it still waits.
  int64_t wait_layer_ = -1;
  uint64_t wait_bytes_ = 0;
  bool waiting_ = false;  // blocked in BeforeLayer or BeforeBytes
  bool cancelled_ = false;
};

struct PacingOptions {
  sched::SchedulerOptions scheduler;
  // Longest a BeforeLayer waits for its dispatch before failing the request.
  // Default: 30 s
  std::chrono::milliseconds max_wait{30'000};
};

class PacingService {
 public:
  // `clock` must outlive the service. `threshold` (KvOptions::layerwise_threshold_bytes)
  // replaces the scheduler's Θ so the plan's mode and admission agree. kInvalidArgument if the
  // scheduler options are invalid.
  static Result<std::unique_ptr<PacingService>> Create(const PacingOptions& options,
                                                       const sched::Clock& clock,
                                                       uint64_t threshold);
  ~PacingService();  // stops the dispatcher; REQUIRES: every RequestPacer destroyed
  PacingService(const PacingService&) = delete;
  PacingService& operator=(const PacingService&) = delete;

  // Starts the dispatcher thread (production). Idempotent.
  void Start();

  // The pacer for a planned request: nullptr when the plan is not layerwise (chunkwise requests
  // bypass the pool), else the admitted request's pacer. c_i from the descriptor's compute window
  // or the configured compute table. The scheduler's errors otherwise.
  Result<std::unique_ptr<RequestPacer>> ForPlan(const descriptor::Descriptor& d,
                                                const KvPlan& plan);
  // Admits a request directly (the emulator). kFailedPrecondition when it is not layerwise.
  Result<std::unique_ptr<RequestPacer>> Admit(const sched::RequestSpec& spec);

  // Manual driving (no dispatcher thread): one Scheduler::Next(); a dispatch wakes its request.
  sched::NextStep DispatchOnce();
  // Blocks until every admitted request is blocked in BeforeLayer or released.
  void WaitQuiescent();
  // Admitted requests not yet destroyed.
  size_t active() const;

  sched::SchedulerStats Stats() const { return scheduler_->Stats(); }
  sched::Scheduler& scheduler() { return *scheduler_; }
  const sched::Clock& clock() const { return clock_; }

 private:
  friend class RequestPacer;
  PacingService(const PacingOptions& options, const sched::Clock& clock,
                std::unique_ptr<sched::Scheduler> scheduler);
  void Run();
  sched::NextStep DispatchLocked() OC_REQUIRES(mu_);
  // A blocked request is about to run again.
  void MarkRunning(RequestPacer* p) OC_REQUIRES(mu_);
  void Unregister(RequestPacer* p);

  const PacingOptions options_;
  const sched::Clock& clock_;
  std::unique_ptr<sched::Scheduler> scheduler_;

  mutable std::mutex mu_;
  std::condition_variable quiet_cv_;  // manual drivers: quiescence
  std::condition_variable dispatcher_cv_;
  std::unordered_map<uint64_t, RequestPacer*> pacers_ OC_GUARDED_BY(mu_);
  size_t running_ OC_GUARDED_BY(mu_) = 0;  // registered pacers not blocked in BeforeLayer
  bool stopping_ OC_GUARDED_BY(mu_) = false;
  std::thread dispatcher_;
};

// The scheduler's figures for /stats (StoreStats::figures): sched.cap_bps, sched.epoch,
// sched.work_conserving, sched.active_requests, and per active request
// "sched.request.<id>.<field>" with field target_bps, rate_bps, epoch, delivered_bytes,
// compute_us, released (the request's name is in the JSON key: "<id>:<name>").
void AppendStatsFigures(const sched::SchedulerStats& stats,
                        std::vector<std::pair<std::string, uint64_t>>* figures);

}  // namespace oc::storage::kv
