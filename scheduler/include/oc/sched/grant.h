#pragma once
// Admission of layerwise requests into the shared cap (docs/design.md: Scheduler; issue 6).
//
// The storage server decides per request with IsLayerwise(W, Θ) (policy.h); only layerwise requests
// are admitted. Scheduler::Admit() returns a Grant: an RAII token that owns the request's share and
// gives it back in its destructor, so an error path cannot leak bandwidth (rgw's Completer).
// Through the Grant the server enqueues the request's layer payloads; delivery threads call
// Scheduler::Next() to learn which payload to send next.
//
// Three ways to hand out rates, chosen by SchedulerOptions::work_conserving and
// fixed_at_admission:
// - epochs (default): at each epoch boundary every active request's rate is recomputed by the
//   policy and then held for the epoch. A request that leaves keeps its share counted until the
//   next boundary; a request that arrives mid-epoch gets min(its target, the cap not held by
//   anyone) at once (the whole headroom under baselines, which have no target), and rate 0 - it
//   waits for the next boundary - when nothing is free.
// - work-conserving: every arrival and departure recomputes all rates at once. The epoch number
//   then counts these reallocations.
// - fixed at admission (the paper's protocol, docs/decisions/scheduler-admission-rule.md): a
//   request's rate never changes once its batch closes. The first arrival after a batch closed
//   opens a new batch for one epoch; every arrival in it re-runs the policy over the batch's
//   requests with the cap left by the requests of closed batches still active (arrivals together
//   get exactly the policy's rates, e.g. the paper's Table A9). A departure frees its rate at once,
//   but only for later arrivals: no admitted request's rate grows. An arrival the cap has no room
//   for (rate 0) is not admitted yet: it joins the next batch, which a departure also opens for it.
//   The epoch number counts batches.
// Epoch boundaries are noticed lazily, by any call that reads the clock.
//
// Thread safety: every Scheduler method may be called concurrently (one mutex). A Grant is used by
// one thread at a time and must not outlive its Scheduler.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oc/common/result.h"
#include "oc/common/thread_annotations.h"
#include "oc/descriptor/descriptor.h"
#include "oc/sched/options.h"
#include "oc/sched/pacer.h"
#include "oc/sched/policy.h"

namespace oc::sched {

class Scheduler;

// What the storage server knows about a layerwise request when it admits it.
struct RequestSpec {
  // The request id (x-oc-request-id) for /stats and logs.
  std::string name;
  // s_i: bytes of one layer payload (N * S). Must be > 0.
  uint64_t layer_bytes = 0;
  // W_i = N * L * S. Must be >= Θ.
  uint64_t total_bytes = 0;
  // c_i from the descriptor, µs; absent: estimated from the compute table.
  std::optional<double> compute_us;
  // For the estimate: the model (empty: SchedulerOptions::default_model), the context length (0:
  // unknown, taken as cached_tokens) and the matched tokens N * G.
  std::string model;
  uint64_t context_tokens = 0;
  uint64_t cached_tokens = 0;
};

// The spec of a descriptor request of which the first `matched_chunks` chunks were found: s =
// matched * S, W = matched * L * S, c from the descriptor, cached tokens = matched * G, name =
// request id. kInvalidArgument if matched_chunks is 0 or more than the descriptor names, or if a
// product overflows 64 bits.
Result<RequestSpec> SpecFromDescriptor(const descriptor::Descriptor& d, uint64_t matched_chunks);

// Where a request's compute window came from.
enum class ComputeSource {
  kDescriptor,  // RequestSpec::compute_us
  kTable,       // EstimateComputeUs
  kUnknown,     // no estimate: treated as 0, i.e. the request may absorb the whole cap
};
// "descriptor", "table", "unknown" (for /stats).
std::string_view ComputeSourceName(ComputeSource source);

// One active request as /stats shows it. Rates in bytes per second.
struct RequestStats {
  uint64_t id = 0;
  std::string name;
  double compute_us = 0;
  ComputeSource compute_source = ComputeSource::kUnknown;
  double target_bytes_per_sec = 0;  // min(r* + margin, B); margin 0 except cal-stall-opt
  double rate_bytes_per_sec = 0;
  uint64_t epoch = 0;  // the epoch in which the current rate was assigned
  uint64_t delivered_bytes = 0;
  uint64_t queued_payloads = 0;
  bool released = false;  // gone, its share still held until the next epoch
};

struct SchedulerStats {
  Policy policy = Policy::kCalStallOpt;
  bool work_conserving = false;
  bool fixed_at_admission = false;
  double cap_bytes_per_sec = 0;
  uint64_t epoch = 0;
  Time epoch_end{0};
  std::vector<RequestStats> requests;  // in admission order
};

// A request's share of the cap. Movable, not copyable; releases on destruction.
class Grant {
 public:
  Grant() = default;
  Grant(Grant&& other) noexcept;
  Grant& operator=(Grant&& other) noexcept;
  Grant(const Grant&) = delete;
  Grant& operator=(const Grant&) = delete;
  ~Grant() { Release(); }

  // False for a default-constructed, moved-from or released Grant.
  bool valid() const { return scheduler_ != nullptr; }
  // The scheduler's id for the request (the id in Dispatch and RequestStats).
  uint64_t id() const { return id_; }

  // Queues layer `layer` (bytes of one assembled payload) for pacing. kFailedPrecondition if the
  // Grant is not valid; otherwise as Pacer::Enqueue (layers in increasing order, bytes > 0).
  Status Enqueue(uint32_t layer, uint64_t bytes);
  // Gives the share back now and drops queued payloads (completion, cancel or failure). Idempotent;
  // the destructor calls it.
  void Release();

 private:
  friend class Scheduler;
  Grant(Scheduler* scheduler, uint64_t id) : scheduler_(scheduler), id_(id) {}

  Scheduler* scheduler_ = nullptr;
  uint64_t id_ = 0;
};

class Scheduler {
 public:
  // kInvalidArgument if options.Validate() fails. `clock` must outlive the Scheduler.
  static Result<std::unique_ptr<Scheduler>> Create(const SchedulerOptions& options,
                                                   const Clock& clock);
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // True if a request of `total_bytes` (W) is layerwise here: W >= Θ.
  bool IsLayerwise(uint64_t total_bytes) const {
    return sched::IsLayerwise(total_bytes, options_.layerwise_threshold_bytes);
  }

  // Admits a layerwise request and assigns its rate (see the header comment). kFailedPrecondition
  // if total_bytes < Θ (chunkwise requests run outside); kInvalidArgument if layer_bytes == 0 or
  // compute_us is negative or not finite.
  Result<Grant> Admit(const RequestSpec& spec) OC_EXCLUDES(mu_);

  // The next payload a delivery thread should send, or when to ask again: kWait also covers the
  // next epoch boundary when payloads wait on a rate of 0.
  NextStep Next() OC_EXCLUDES(mu_);

  // A snapshot for /stats.
  SchedulerStats Stats() const OC_EXCLUDES(mu_);
  const SchedulerOptions& options() const { return options_; }

 private:
  friend class Grant;
  struct Entry {
    uint64_t id = 0;
    std::string name;
    Demand demand;
    ComputeSource source = ComputeSource::kUnknown;
    double target = 0;
    double rate = 0;
    uint64_t epoch = 0;
    uint64_t delivered_at_release = 0;
    bool released = false;
    bool fixed = false;  // fixed_at_admission: its batch has closed, the rate is final
  };

  Scheduler(const SchedulerOptions& options, const Clock& clock);
  Status Enqueue(uint64_t id, uint32_t layer, uint64_t bytes) OC_EXCLUDES(mu_);
  void Release(uint64_t id) OC_EXCLUDES(mu_);
  // Starts a new epoch if `now` has reached the boundary (epoch mode only).
  void MaybeAdvanceEpoch(Time now) OC_REQUIRES(mu_);
  // Drops released entries and recomputes every rate at `now`; bumps the epoch.
  void Reallocate(Time now) OC_REQUIRES(mu_);
  // fixed_at_admission, on the arrival of request `arrival`: closes the open batch if its epoch
  // is over, then shares what the closed batches' requests leave of the cap among the open
  // batch's requests.
  void AdmitIntoBatch(uint64_t arrival, Time now) OC_REQUIRES(mu_);
  // Runs the policy over the open batch with the cap the closed batches leave.
  void ShareOpenBatch(Time now) OC_REQUIRES(mu_);
  // `demand` with remaining_bytes = what request `id` has not sent yet.
  Demand WithProgress(uint64_t id, Demand demand) const OC_REQUIRES(mu_);

  const SchedulerOptions options_;
  const Clock& clock_;
  const double cap_;     // bytes per second
  const double margin_;  // bytes per second, 0 unless cal-stall-opt

  mutable std::mutex mu_;
  // Guarded by mu_.
  Pacer pacer_ OC_GUARDED_BY(mu_);
  std::map<uint64_t, Entry> entries_ OC_GUARDED_BY(mu_);  // by id = admission order
  uint64_t next_id_ OC_GUARDED_BY(mu_) = 1;
  uint64_t epoch_ OC_GUARDED_BY(mu_) = 0;
  Time epoch_end_ OC_GUARDED_BY(mu_){0};
};

}  // namespace oc::sched
