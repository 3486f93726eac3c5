#include "kv/pacing.h"

#include <sys/prctl.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "oc/sched/policy.h"

namespace oc::storage::kv {

RequestPacer::RequestPacer(PacingService* service, sched::Grant grant, double rate_gbps,
                           uint64_t layers)
    : service_(service),
      id_(grant.id()),
      admitted_rate_gbps_(rate_gbps),
      layers_(layers),
      grant_(std::move(grant)) {}

RequestPacer::~RequestPacer() { service_->Unregister(this); }

Status RequestPacer::BeforeLayer(uint32_t layer, uint64_t bytes) {
  PacingService& s = *service_;
  std::unique_lock<std::mutex> lock(s.mu_);
  if (cancelled_ || s.stopping_) {
    return Status::Cancelled("request cancelled while paced");
  }
  if (int64_t{layer} > enqueued_layer_) {
    OC_RETURN_IF_ERROR(grant_.Enqueue(layer, bytes));
    enqueued_layer_ = layer;
  }
  if (uint64_t{layer} + 1 < layers_ && enqueued_layer_ == int64_t{layer}) {
    OC_RETURN_IF_ERROR(grant_.Enqueue(layer + 1, bytes));  // the lookahead (header comment)
    enqueued_layer_ = int64_t{layer} + 1;
  }
  layer_ = layer;
  layer_bytes_ = bytes;
  written_ = 0;
  s.dispatcher_cv_.notify_one();       // the dispatcher may be idle
  return WaitCovered(lock, layer, 1);  // its first part
}

Status RequestPacer::BeforeBytes(uint64_t bytes) {
  PacingService& s = *service_;
  std::unique_lock<std::mutex> lock(s.mu_);
  if (layer_ < 0) {
    return Status::FailedPrecondition(Subject::kNone, "BeforeBytes before any BeforeLayer");
  }
  written_ = std::min(layer_bytes_, written_ + bytes);
  return WaitCovered(lock, layer_, written_);
}

Status RequestPacer::WaitCovered(std::unique_lock<std::mutex>& lock, int64_t layer,
                                 uint64_t bytes) {
  PacingService& s = *service_;
  if (cancelled_ || s.stopping_) {
    return Status::Cancelled("request cancelled while paced");
  }
  if (Covered(layer, bytes)) {
    return Status::Ok();
  }
  wait_layer_ = layer;
  wait_bytes_ = bytes;
  waiting_ = true;
  --s.running_;
  s.quiet_cv_.notify_all();  // a manual driver may be waiting for quiescence
  const bool dispatched = cv_.wait_for(lock, s.options_.max_wait, [&] {
    return Covered(layer, bytes) || cancelled_ || s.stopping_;
  });
  // Whoever woke the request (a dispatch, Cancel) already counted it as running; a timeout or a
  // stop did not.
  s.MarkRunning(this);
  if (cancelled_ || s.stopping_) {
    return Status::Cancelled("request cancelled while paced");
  }
  if (!dispatched) {
    return Status::Unavailable("layer not dispatched by the scheduler in time");
  }
  return Status::Ok();
}

void RequestPacer::Cancel() {
  PacingService& s = *service_;
  std::lock_guard<std::mutex> lock(s.mu_);
  cancelled_ = true;
  grant_.Release();
  s.MarkRunning(this);
  cv_.notify_all();
  s.quiet_cv_.notify_all();
  s.dispatcher_cv_.notify_one();
}

Result<std::unique_ptr<PacingService>> PacingService::Create(const PacingOptions& options,
                                                             const sched::Clock& clock,
                                                             uint64_t threshold) {
  sched::SchedulerOptions o = options.scheduler;
  o.layerwise_threshold_bytes = threshold;
  OC_ASSIGN_OR_RETURN(std::unique_ptr<sched::Scheduler> scheduler,
                      sched::Scheduler::Create(o, clock));
  return std::unique_ptr<PacingService>(new PacingService(options, clock, std::move(scheduler)));
}

PacingService::PacingService(const PacingOptions& options, const sched::Clock& clock,
                             std::unique_ptr<sched::Scheduler> scheduler)
    : options_(options), clock_(clock), scheduler_(std::move(scheduler)) {}

PacingService::~PacingService() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (auto& [id, pacer] : pacers_) {
      pacer->cv_.notify_all();
    }
  }
  quiet_cv_.notify_all();
  dispatcher_cv_.notify_all();
  if (dispatcher_.joinable()) {
    dispatcher_.join();
  }
}

void PacingService::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!dispatcher_.joinable()) {
    dispatcher_ = std::thread([this] { Run(); });
  }
}

Result<std::unique_ptr<RequestPacer>> PacingService::ForPlan(const descriptor::Descriptor& d,
                                                             const KvPlan& plan) {
  if (plan.mode != descriptor::ServeMode::kLayerwise || plan.matched == 0) {
    return std::unique_ptr<RequestPacer>();
  }
  OC_ASSIGN_OR_RETURN(sched::RequestSpec spec, sched::SpecFromDescriptor(d, plan.matched));
  if (spec.name.empty()) {
    spec.name = plan.request_id;
  }
  return Admit(spec);
}

Result<std::unique_ptr<RequestPacer>> PacingService::Admit(const sched::RequestSpec& spec) {
  OC_ASSIGN_OR_RETURN(sched::Grant grant, scheduler_->Admit(spec));
  double rate = 0;
  for (const sched::RequestStats& r : scheduler_->Stats().requests) {
    if (r.id == grant.id()) {
      rate = sched::BytesPerSecToGbps(r.rate_bytes_per_sec);
    }
  }
  const uint64_t layers = spec.layer_bytes > 0 ? spec.total_bytes / spec.layer_bytes : 0;
  std::unique_ptr<RequestPacer> p(new RequestPacer(this, std::move(grant), rate, layers));
  std::lock_guard<std::mutex> lock(mu_);
  pacers_.emplace(p->id_, p.get());
  ++running_;
  return p;
}

void PacingService::MarkRunning(RequestPacer* p) {
  if (p->waiting_) {
    p->waiting_ = false;
    ++running_;
  }
}

void PacingService::Unregister(RequestPacer* p) {
  std::lock_guard<std::mutex> lock(mu_);
  p->grant_.Release();
  if (pacers_.erase(p->id_) != 0 && !p->waiting_) {
    --running_;
  }
  quiet_cv_.notify_all();
  dispatcher_cv_.notify_one();
}

size_t PacingService::active() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pacers_.size();
}

sched::NextStep PacingService::DispatchLocked() {
  sched::NextStep step = scheduler_->Next();
  if (step.kind == sched::NextStep::Kind::kDispatch) {
    auto it = pacers_.find(step.dispatch.request);
    if (it != pacers_.end()) {
      RequestPacer& p = *it->second;
      if (p.dispatched_layer_ != int64_t{step.dispatch.layer}) {
        p.dispatched_layer_ = step.dispatch.layer;
        p.dispatched_in_layer_ = 0;
      }
      p.dispatched_in_layer_ += step.dispatch.bytes;
      if (p.waiting_ && p.Covered(p.wait_layer_, p.wait_bytes_)) {
        // Counted as running from now, not from when its thread wakes: a manual driver must not
        // see quiescence (and move the clock) before the request has written what was let go.
        MarkRunning(&p);
        p.cv_.notify_one();
      }
    }
  }
  return step;
}

sched::NextStep PacingService::DispatchOnce() {
  std::lock_guard<std::mutex> lock(mu_);
  return DispatchLocked();
}

void PacingService::WaitQuiescent() {
  std::unique_lock<std::mutex> lock(mu_);
  quiet_cv_.wait(lock, [&] { return running_ == 0 || stopping_; });
}

void PacingService::Run() {
  // The dispatcher's waits are due times, often one part's spacing (~0.1 ms) apart; Linux lets a
  // normal thread's timed wait run up to 50 us late by default (timer slack), and every late
  // dispatch at a fully shared cap is transfer time lost for good. 1 ns: wake when due.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    const sched::NextStep step = DispatchLocked();
    switch (step.kind) {
      case sched::NextStep::Kind::kDispatch:
        break;
      case sched::NextStep::Kind::kWait: {
        const sched::Time delay = step.wait_until - clock_.Now();
        if (delay.count() > 0) {
          dispatcher_cv_.wait_for(lock, delay);
        }
        break;
      }
      case sched::NextStep::Kind::kIdle:
        // Woken by an enqueue or a release; the bound also catches epoch boundaries the
        // scheduler did not announce as kWait.
        dispatcher_cv_.wait_for(lock, options_.scheduler.epoch);
        break;
    }
  }
}

void AppendStatsFigures(const sched::SchedulerStats& stats,
                        std::vector<std::pair<std::string, uint64_t>>* figures) {
  auto bps = [](double bytes_per_sec) {
    return static_cast<uint64_t>(std::llround(bytes_per_sec * sched::kBitsPerByte));
  };
  figures->emplace_back("sched.cap_bps", bps(stats.cap_bytes_per_sec));
  figures->emplace_back("sched.epoch", stats.epoch);
  figures->emplace_back("sched.work_conserving", stats.work_conserving ? 1 : 0);
  figures->emplace_back("sched.active_requests", stats.requests.size());
  for (const sched::RequestStats& r : stats.requests) {
    const std::string key = "sched.request." + std::to_string(r.id) + ":" + r.name + ".";
    figures->emplace_back(key + "target_bps", bps(r.target_bytes_per_sec));
    figures->emplace_back(key + "rate_bps", bps(r.rate_bytes_per_sec));
    figures->emplace_back(key + "epoch", r.epoch);
    figures->emplace_back(key + "delivered_bytes", r.delivered_bytes);
    figures->emplace_back(key + "compute_us", static_cast<uint64_t>(std::llround(r.compute_us)));
    figures->emplace_back(key + "released", r.released ? 1 : 0);
  }
}

}  // namespace oc::storage::kv
