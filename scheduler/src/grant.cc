#include "oc/sched/grant.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/core.h>

#include "oc/common/check.h"
#include "oc/descriptor/layout.h"
#include "oc/sched/allocator.h"

namespace oc::sched {
namespace {

// A mid-epoch arrival's share below this fraction of the cap is taken as 0: what is left of a
// cap the other requests' rates fill is rounding error (cap - sum of rates), and a payload sent
// at such a rate would owe years of spacing.
constexpr double kDustFraction = 1e-9;

PacerOptions MakePacerOptions(const SchedulerOptions& o) {
  PacerOptions p;
  p.cap_bytes_per_sec = GbpsToBytesPerSec(o.cap_gbps);
  p.quantum_bytes = o.drr_quantum_bytes;
  p.pace_first_payload = o.pace_first_layer;
  p.part_bytes = o.pace_part_bytes;
  return p;
}

}  // namespace

Result<RequestSpec> SpecFromDescriptor(const descriptor::Descriptor& d, uint64_t matched_chunks) {
  if (matched_chunks == 0 || matched_chunks > d.num_chunks()) {
    return Status::InvalidArgument(
        "matched_chunks", fmt::format("{} matched of {} chunks", matched_chunks, d.num_chunks()));
  }
  RequestSpec spec;
  spec.name = d.request_id;
  OC_ASSIGN_OR_RETURN(spec.layer_bytes, descriptor::PayloadBytes(matched_chunks, 1, d.layer_bytes));
  OC_ASSIGN_OR_RETURN(spec.total_bytes,
                      descriptor::PayloadBytes(matched_chunks, d.num_layers, d.layer_bytes));
  if (d.compute_window_us.has_value()) {
    spec.compute_us = static_cast<double>(*d.compute_window_us);
  }
  if (__builtin_mul_overflow(matched_chunks, uint64_t{d.chunk_tokens}, &spec.cached_tokens)) {
    return Status::InvalidArgument("x-oc-chunk-tokens", "matched tokens overflow 64 bits");
  }
  return spec;
}

std::string_view ComputeSourceName(ComputeSource source) {
  switch (source) {
    case ComputeSource::kDescriptor:
      return "descriptor";
    case ComputeSource::kTable:
      return "table";
    case ComputeSource::kUnknown:
      return "unknown";
  }
  return "unknown";
}

Grant::Grant(Grant&& other) noexcept
    : scheduler_(std::exchange(other.scheduler_, nullptr)), id_(other.id_) {}

Grant& Grant::operator=(Grant&& other) noexcept {
  if (this != &other) {
    Release();
    scheduler_ = std::exchange(other.scheduler_, nullptr);
    id_ = other.id_;
  }
  return *this;
}

Status Grant::Enqueue(uint32_t layer, uint64_t bytes) {
  if (scheduler_ == nullptr) {
    return Status::FailedPrecondition(Subject::kNone, "grant released");
  }
  return scheduler_->Enqueue(id_, layer, bytes);
}

void Grant::Release() {
  if (scheduler_ != nullptr) {
    std::exchange(scheduler_, nullptr)->Release(id_);
  }
}

Result<std::unique_ptr<Scheduler>> Scheduler::Create(const SchedulerOptions& options,
                                                     const Clock& clock) {
  OC_RETURN_IF_ERROR(options.Validate());
  return std::unique_ptr<Scheduler>(new Scheduler(options, clock));
}

Scheduler::Scheduler(const SchedulerOptions& options, const Clock& clock)
    : options_(options),
      clock_(clock),
      cap_(GbpsToBytesPerSec(options.cap_gbps)),
      margin_(options.policy == Policy::kCalStallOpt ? GbpsToBytesPerSec(options.margin_gbps)
                                                     : 0.0),
      pacer_(MakePacerOptions(options)) {
  std::lock_guard<std::mutex> lock(mu_);
  epoch_end_ = clock_.Now() + options_.epoch;
}

Result<Grant> Scheduler::Admit(const RequestSpec& spec) {
  if (!IsLayerwise(spec.total_bytes)) {
    return Status::FailedPrecondition(
        Subject::kDescriptor,
        fmt::format("request of {} bytes is below the layerwise threshold {}: "
                    "chunkwise",
                    spec.total_bytes, options_.layerwise_threshold_bytes));
  }
  if (spec.layer_bytes == 0) {
    return Status::InvalidArgument("layer_bytes", "must be > 0");
  }
  Entry e;
  e.name = spec.name;
  e.demand.layer_bytes = spec.layer_bytes;
  e.demand.total_bytes = spec.total_bytes;
  if (spec.compute_us.has_value()) {
    if (!(std::isfinite(*spec.compute_us) && *spec.compute_us >= 0.0)) {
      return Status::InvalidArgument("compute_us", "must be finite and >= 0");
    }
    e.demand.compute_us = *spec.compute_us;
    e.source = ComputeSource::kDescriptor;
  } else {
    Result<double> est = EstimateComputeUs(options_.compute_table,
                                           spec.model.empty() ? options_.default_model : spec.model,
                                           spec.context_tokens, spec.cached_tokens);
    if (est.has_value()) {
      e.demand.compute_us = *est;
      e.source = ComputeSource::kTable;
    }
  }
  e.target = TargetRate(e.demand, cap_, margin_);

  std::lock_guard<std::mutex> lock(mu_);
  const Time now = clock_.Now();
  e.id = next_id_++;
  const uint64_t id = e.id;
  OC_CHECK(pacer_.AddRequest(id, 0.0).ok());
  entries_.emplace(id, std::move(e));
  if (options_.work_conserving) {
    Reallocate(now);
  } else if (options_.fixed_at_admission) {
    AdmitIntoBatch(id, now);
  } else if (now >= epoch_end_) {
    MaybeAdvanceEpoch(now);  // the new epoch's allocation includes the arrival
  } else {
    // Mid-epoch: the arrival takes what nobody holds, up to its target. Baselines have no target,
    // so the arrival may take all the headroom.
    double held = 0.0;
    for (const auto& [other_id, other] : entries_) {
      if (other_id != id) {
        held += other.rate;
      }
    }
    Entry& mine = entries_.at(id);
    const double want =
        options_.policy == Policy::kStallOpt || options_.policy == Policy::kCalStallOpt
            ? mine.target
            : cap_;
    mine.rate = std::max(0.0, std::min(want, cap_ - held));
    if (mine.rate < cap_ * kDustFraction) {
      mine.rate = 0;  // rounding dust of a full cap: park until the boundary, not crawl
    }
    mine.epoch = epoch_;
    OC_CHECK(pacer_.SetRate(id, mine.rate, now).ok());
  }
  return Grant(this, id);
}

void Scheduler::AdmitIntoBatch(uint64_t arrival, Time now) {
  if (now >= epoch_end_) {
    for (auto& [id, e] : entries_) {
      // Every request here before the arrival is in a closed batch; one that got nothing (the
      // cap was taken) is not admitted yet and waits in the new batch for freed bandwidth.
      e.fixed = id != arrival && e.rate > 0.0;
    }
    ++epoch_;
    epoch_end_ = now + options_.epoch;
  }
  ShareOpenBatch(now);
}

void Scheduler::ShareOpenBatch(Time now) {
  double held = 0.0;
  std::vector<uint64_t> batch;
  std::vector<Demand> demands;
  for (const auto& [id, e] : entries_) {
    if (e.fixed) {
      held += e.rate;
    } else {
      batch.push_back(id);
      demands.push_back(WithProgress(id, e.demand));
    }
  }
  const double free = std::max(0.0, cap_ - held);
  Result<std::vector<double>> rates = Allocate(options_.policy, demands, free, margin_);
  OC_CHECK(rates.has_value());  // inputs were validated at Admit and in Create
  for (size_t i = 0; i < batch.size(); ++i) {
    Entry& e = entries_.at(batch[i]);
    e.rate = (*rates)[i] < cap_ * kDustFraction ? 0.0 : (*rates)[i];
    e.epoch = epoch_;
    OC_CHECK(pacer_.SetRate(batch[i], e.rate, now).ok());
  }
}

Demand Scheduler::WithProgress(uint64_t id, Demand demand) const {
  const uint64_t sent = pacer_.DeliveredBytes(id);
  // At least one byte remains while the request is here (0 would mean "none sent").
  demand.remaining_bytes = demand.total_bytes > sent ? demand.total_bytes - sent : 1;
  return demand;
}

void Scheduler::MaybeAdvanceEpoch(Time now) {
  if (options_.work_conserving || options_.fixed_at_admission || now < epoch_end_) {
    return;
  }
  epoch_end_ = now + options_.epoch;
  Reallocate(now);
}

void Scheduler::Reallocate(Time now) {
  std::erase_if(entries_, [](const auto& kv) { return kv.second.released; });
  ++epoch_;
  std::vector<Demand> demands;
  demands.reserve(entries_.size());
  for (const auto& [id, e] : entries_) {
    demands.push_back(WithProgress(id, e.demand));
  }
  Result<std::vector<double>> rates = Allocate(options_.policy, demands, cap_, margin_);
  OC_CHECK(rates.has_value());  // inputs were validated at Admit and in Create
  size_t i = 0;
  for (auto& [id, e] : entries_) {
    e.rate = (*rates)[i++];
    e.epoch = epoch_;
    OC_CHECK(pacer_.SetRate(id, e.rate, now).ok());
  }
}

Status Scheduler::Enqueue(uint64_t id, uint32_t layer, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  return pacer_.Enqueue(id, layer, bytes, clock_.Now());
}

void Scheduler::Release(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) {
    return;
  }
  it->second.delivered_at_release = pacer_.DeliveredBytes(id);
  pacer_.Remove(id);
  if (options_.work_conserving) {
    entries_.erase(it);
    Reallocate(clock_.Now());
    return;
  }
  if (options_.fixed_at_admission) {
    entries_.erase(it);  // its rate is free for later arrivals; nobody admitted gains it
    const bool waiting = std::any_of(entries_.begin(), entries_.end(), [](const auto& kv) {
      return !kv.second.fixed && kv.second.rate == 0.0;
    });
    if (waiting) {
      // Requests the cap had no room for are admitted now, as the arrivals they are.
      AdmitIntoBatch(0, clock_.Now());
    }
    return;
  }
  // Epoch mode: the share stays held until the next boundary.
  it->second.released = true;
  MaybeAdvanceEpoch(clock_.Now());
}

NextStep Scheduler::Next() {
  std::lock_guard<std::mutex> lock(mu_);
  const Time now = clock_.Now();
  MaybeAdvanceEpoch(now);
  NextStep step = pacer_.Next(now);
  if (step.kind == NextStep::Kind::kDispatch || options_.work_conserving ||
      options_.fixed_at_admission || !pacer_.HasQueued()) {
    return step;
  }
  // Payloads wait; a new epoch may change the rates that hold them back.
  const Time wake =
      step.kind == NextStep::Kind::kWait ? std::min(step.wait_until, epoch_end_) : epoch_end_;
  step.kind = NextStep::Kind::kWait;
  step.wait_until = wake;
  return step;
}

SchedulerStats Scheduler::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  SchedulerStats s;
  s.policy = options_.policy;
  s.work_conserving = options_.work_conserving;
  s.fixed_at_admission = options_.fixed_at_admission;
  s.cap_bytes_per_sec = cap_;
  s.epoch = epoch_;
  s.epoch_end = epoch_end_;
  s.requests.reserve(entries_.size());
  for (const auto& [id, e] : entries_) {
    RequestStats r;
    r.id = id;
    r.name = e.name;
    r.compute_us = e.demand.compute_us;
    r.compute_source = e.source;
    r.target_bytes_per_sec = e.target;
    r.rate_bytes_per_sec = e.rate;
    r.epoch = e.epoch;
    r.delivered_bytes = e.released ? e.delivered_at_release : pacer_.DeliveredBytes(id);
    r.queued_payloads = pacer_.QueuedPayloads(id);
    r.released = e.released;
    s.requests.push_back(std::move(r));
  }
  return s;
}

}  // namespace oc::sched
