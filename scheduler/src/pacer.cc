#include "oc/sched/pacer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include <fmt/core.h>

#include "oc/common/check.h"

namespace oc::sched {
namespace {

// Longest spacing one payload can impose (~31 years): keeps Time arithmetic far from overflow when
// a rate is tiny.
constexpr int64_t kMaxSpacingNs = 1'000'000'000'000'000'000;

// Time for `bytes` at `rate` bytes/s, rounded UP to whole nanoseconds so the buckets never admit
// more than their rate. REQUIRES: rate > 0.
Time Spacing(uint64_t bytes, double rate) {
  const double ns = std::ceil(static_cast<double>(bytes) * 1e9 / rate);
  if (!(ns < static_cast<double>(kMaxSpacingNs))) {
    return Time{kMaxSpacingNs};
  }
  return Time{static_cast<int64_t>(ns)};
}

bool ValidRate(double rate) { return std::isfinite(rate) && rate >= 0.0; }

}  // namespace

Time SteadyClock::Now() const {
  return std::chrono::duration_cast<Time>(std::chrono::steady_clock::now().time_since_epoch());
}

Status PacerOptions::Validate() const {
  if (!ValidRate(cap_bytes_per_sec)) {
    return Status::InvalidArgument("cap", "must be finite and >= 0");
  }
  if (quantum_bytes == 0) {
    return Status::InvalidArgument("drr_quantum", "must be > 0");
  }
  return Status::Ok();
}

Pacer::Pacer(const PacerOptions& options) : options_(options) {
  OC_CHECK(options_.Validate().ok());
}

Status Pacer::AddRequest(uint64_t request, double rate) {
  if (!ValidRate(rate)) {
    return Status::InvalidArgument("rate", "must be finite and >= 0");
  }
  auto [it, inserted] = flows_.try_emplace(request, nullptr);
  if (!inserted) {
    return Status::AlreadyExists(Subject::kNone, fmt::format("request {} already paced", request));
  }
  it->second = std::make_unique<Flow>();
  it->second->id = request;
  it->second->rate = rate;
  return Status::Ok();
}

Status Pacer::SetRate(uint64_t request, double rate, Time now) {
  if (!ValidRate(rate)) {
    return Status::InvalidArgument("rate", "must be finite and >= 0");
  }
  auto it = flows_.find(request);
  if (it == flows_.end()) {
    return Status::NotFound(Subject::kNone, fmt::format("request {} not paced", request));
  }
  Flow& f = *it->second;
  if (f.rate == 0 && rate > 0) {
    f.ready = std::max(f.ready, now);  // time spent parked is not a wait the flow is owed
  }
  if (options_.pace_first_payload && rate == 0 && f.delivered == 0) {
    // Parked before its first byte: it owes nothing yet, and its first spacing starts afresh
    // when it resumes.
    f.first_paced = false;
    f.ready = Time{0};
  }
  if (f.rate > 0 && rate > 0 && f.ready > now) {
    // The bytes still owed at the old rate, paid at the new one.
    const double owed_ns = static_cast<double>((f.ready - now).count()) * f.rate / rate;
    f.ready = now + Time{static_cast<int64_t>(
                        std::ceil(std::min(owed_ns, static_cast<double>(kMaxSpacingNs))))};
  }
  f.rate = rate;
  PaceFirstPayload(f, now);
  return Status::Ok();
}

void Pacer::PaceFirstPayload(Flow& f, Time now) const {
  if (!options_.pace_first_payload || f.first_paced || f.delivered != 0 || f.rate <= 0 ||
      f.queue.empty()) {
    return;
  }
  f.first_paced = true;
  f.ready = std::max(f.ready, now) + Spacing(PartBytes(f.queue.front()), f.rate);
}

uint64_t Pacer::PartBytes(const Payload& p) const {
  if (p.whole || options_.part_bytes == 0 || p.bytes <= options_.part_bytes) {
    return p.bytes - p.sent;
  }
  const uint64_t parts = p.bytes / options_.part_bytes + (p.bytes % options_.part_bytes != 0);
  return p.bytes / parts + (p.parts_sent < p.bytes % parts ? 1 : 0);
}

Status Pacer::Enqueue(uint64_t request, uint32_t layer, uint64_t bytes, Time now) {
  auto it = flows_.find(request);
  if (it == flows_.end()) {
    return Status::NotFound(Subject::kNone, fmt::format("request {} not paced", request));
  }
  Flow& f = *it->second;
  if (bytes == 0) {
    return Status::InvalidArgument("bytes", "a layer payload must not be empty");
  }
  if (static_cast<int64_t>(layer) <= f.last_layer) {
    return Status::InvalidArgument(
        "layer", fmt::format("layer {} enqueued after layer {}: layers go in increasing order",
                             layer, f.last_layer));
  }
  const bool whole = !options_.pace_first_payload && f.last_layer < 0;
  f.last_layer = layer;
  f.queue.push_back({layer, bytes, 0, 0, now, whole});
  PaceFirstPayload(f, now);
  if (f.queue.size() == 1) {
    if (ring_.empty()) {
      fresh_ = true;
    }
    ring_.push_back(&f);
  }
  return Status::Ok();
}

void Pacer::RemoveFromRing(size_t index) {
  ring_.erase(ring_.begin() + static_cast<std::ptrdiff_t>(index));
  if (ring_.empty()) {
    cursor_ = 0;
    in_visit_ = false;
    promised_.reset();  // nothing is due any more
    return;
  }
  if (index < cursor_) {
    --cursor_;
  } else if (index == cursor_) {
    // The flow visited last is gone; the next visit starts at the one that followed it, which now
    // sits at `index`.
    in_visit_ = false;
    cursor_ = (index == 0 ? ring_.size() : index) - 1;
  }
}

void Pacer::Remove(uint64_t request) {
  auto it = flows_.find(request);
  if (it == flows_.end()) {
    return;
  }
  auto pos = std::find(ring_.begin(), ring_.end(), it->second.get());
  if (pos != ring_.end()) {
    RemoveFromRing(static_cast<size_t>(pos - ring_.begin()));
  }
  flows_.erase(it);
}

uint64_t Pacer::DeliveredBytes(uint64_t request) const {
  auto it = flows_.find(request);
  return it == flows_.end() ? 0 : it->second->delivered;
}

uint64_t Pacer::QueuedPayloads(uint64_t request) const {
  auto it = flows_.find(request);
  return it == flows_.end() ? 0 : it->second->queue.size();
}

NextStep Pacer::Send(size_t ring_index, Time now, Time start) {
  Flow& f = *ring_[ring_index];
  Payload& p = f.queue.front();
  const uint64_t part = PartBytes(p);
  const Dispatch d{f.id, p.layer, part, p.sent, p.sent + part == p.bytes};
  if (!p.whole) {
    f.deficit -= static_cast<double>(part);  // a whole first payload went outside the round
  }
  f.delivered += part;
  const Time spacing = Spacing(part, f.rate);
  const Time layer_spacing = Spacing(p.bytes, f.rate);
  const Time cap_spacing = Spacing(part, options_.cap_bytes_per_sec);
  const Time layer_cap_spacing = Spacing(p.bytes, options_.cap_bytes_per_sec);
  // The flow's bucket. The part was due at `due`; a punctual caller could have sent it at
  // max(due, global_ready_), the cap's bucket being busy with other flows' parts until then.
  // That wait is the pacer's and is made up in full: the dispatch counts as `held` earlier. Of the
  // rest (a late caller, a layer queued after its ready time) up to one layer is made up: the
  // bucket is two layers deep (2 * layer_spacing - spacing before this part's own spacing), so a
  // backlogged flow averages its rate however the cap interleaves it with other flows' parts.
  // With whole-layer parts this is the one-payload make-up of
  // docs/decisions/pacer-two-payload-flow-buckets.md exactly.
  const Time due = std::max(f.ready, p.enqueued);
  const Time held = std::max(Time{0}, std::min(now, global_ready_) - due);
  const Time counted = now - held;
  const Time depth = std::min(layer_spacing + layer_spacing - spacing, counted);
  f.ready = std::max(f.ready, counted - depth) + spacing;
  // The cap's bucket makes up its caller's lateness, up to one layer: a part was due at the
  // time the last kWait named (`promised_`) or, if rates changed since, at `start`, so a call
  // after both counts the dispatch as made then, but no more than one layer's spacing at B before
  // `now`. A punctual caller (now == promised_) and an arrival after an idle spell (no promise) get
  // no credit, so the total stays within B * window + one part for them; a late caller's
  // catch-up sends at most one layer more (docs/decisions/pacer-cap-makes-up-late-dispatcher.md).
  // Either way the cap's bucket ends at most one part's spacing after `now`: that is the longest a
  // punctual flow waits behind this dispatch.
  Time counted_at = now;
  if (promised_.has_value() && std::max(*promised_, start) < now) {
    counted_at = std::max({*promised_, start, now - std::min(layer_cap_spacing, now)});
  }
  promised_.reset();
  global_ready_ = std::max(global_ready_, counted_at) + cap_spacing;
  // A late call often finds several parts due and sends them back to back. Each of them was due
  // when the cap's bucket let it go, so the credit holds for the rest of the catch-up: the next
  // part counts from where this one ended (still no more than one layer at B before `now`).
  if (counted_at < now && global_ready_ < now) {
    promised_ = global_ready_;
  }
  p.sent += part;
  ++p.parts_sent;
  if (p.sent == p.bytes) {
    f.queue.pop_front();
  }
  if (f.queue.empty()) {
    f.deficit = 0;  // DRR: an idle flow keeps no credit
    RemoveFromRing(ring_index);
  }
  NextStep step;
  step.kind = NextStep::Kind::kDispatch;
  step.dispatch = d;
  return step;
}

NextStep Pacer::Next(Time now) {
  NextStep idle;
  if (ring_.empty() || !(options_.cap_bytes_per_sec > 0.0)) {
    promised_.reset();
    return idle;
  }
  Time earliest = Time::max();
  for (const Flow* f : ring_) {
    if (f->rate > 0) {
      earliest = std::min(earliest, f->ready);
    }
  }
  if (earliest == Time::max()) {
    promised_.reset();
    return idle;  // every backlogged flow is parked at rate 0
  }
  const Time start = std::max(earliest, global_ready_);
  if (now < start) {
    NextStep wait;
    wait.kind = NextStep::Kind::kWait;
    wait.wait_until = start;
    promised_ = start;
    return wait;
  }

  // A request's first layer under the default start leaves whole, before the round's parts.
  for (size_t i = 0; i < ring_.size(); ++i) {
    if (ring_[i]->queue.front().whole && Eligible(*ring_[i], now)) {
      return Send(i, now, start);
    }
  }

  // The flow in its visit keeps sending while its deficit covers its head payload.
  if (in_visit_ && cursor_ < ring_.size()) {
    const Flow& f = *ring_[cursor_];
    if (Eligible(f, now) && f.deficit >= static_cast<double>(PartBytes(f.queue.front()))) {
      return Send(cursor_, now, start);
    }
  }
  in_visit_ = false;

  // Deficit round robin over the eligible flows, in closed form. Visits go
  // round the ring after cursor_ (from index 0 while fresh_); each visit adds
  // the flow's quantum Q_j, and flow j can send on its k_j-th visit, k_j =
  // max(1, ceil((head_j - deficit_j) / Q_j)), which is visit number v_j = (k_j
  // - 1) * m + pos_j overall. The smallest v_j wins; every flow visited before
  // it is credited the quanta of its visits, exactly as the round-by-round loop
  // would.
  std::vector<Candidate>& cands = candidates_;
  cands.clear();
  const size_t n = ring_.size();
  const size_t first = fresh_ ? 0 : cursor_ + 1;
  for (size_t step = 0; step < n; ++step) {
    const size_t idx = (first + step) % n;
    const Flow& f = *ring_[idx];
    if (!Eligible(f, now)) {
      continue;
    }
    const double quantum =
        std::max(static_cast<double>(options_.quantum_bytes) * f.rate / options_.cap_bytes_per_sec,
                 std::numeric_limits<double>::min());
    cands.push_back({idx, static_cast<double>(cands.size() + 1), quantum, 0});
  }
  OC_CHECK(!cands.empty());  // start <= now implies some flow is eligible
  const double m = static_cast<double>(cands.size());
  size_t best = 0;
  for (size_t c = 0; c < cands.size(); ++c) {
    const Flow& f = *ring_[cands[c].index];
    const double need = static_cast<double>(PartBytes(f.queue.front())) - f.deficit;
    const double k = need <= 0 ? 1.0 : std::max(1.0, std::ceil(need / cands[c].quantum));
    cands[c].visit = (k - 1.0) * m + cands[c].pos;
    if (cands[c].visit < cands[best].visit) {
      best = c;
    }
  }
  const double v = cands[best].visit;
  for (const Candidate& c : cands) {
    if (c.pos <= v) {
      ring_[c.index]->deficit += (std::floor((v - c.pos) / m) + 1.0) * c.quantum;
    }
  }
  Flow& winner = *ring_[cands[best].index];
  // Rounding must not leave the winner a hair short of the part it was chosen for.
  winner.deficit = std::max(winner.deficit, static_cast<double>(PartBytes(winner.queue.front())));
  cursor_ = cands[best].index;
  in_visit_ = true;
  fresh_ = false;
  return Send(cursor_, now, start);
}

}  // namespace oc::sched
