#pragma once
// The pacer: turns per-request rates into a dispatch order for layer payloads (docs/design.md:
// Scheduler; issue 6, "The pacer").
//
// Each request is a flow with a FIFO of layer payloads and a token bucket at its assigned rate,
// kept in its "ready time" form. A layer leaves in parts of at most `part_bytes`
// (docs/decisions/pacer-sub-layer-parts.md): a part of p bytes is due at max(ready, the time its
// layer was queued), and after it leaves the flow may send again p / rate later. Time the flow
// then waited for the cap's bucket (other flows' parts going first) is the pacer's doing and is
// made up in full; other lateness (a late caller, a layer queued after its ready time) is made up
// by up to one layer, as if the bucket were two layers deep. So a backlogged flow gets its rate
// even when the rates sum to B and other flows' layers are larger than its own
// (docs/decisions/pacer-two-payload-flow-buckets.md and docs/decisions/pacer-waits-for-the-cap.md);
// from its first dispatch to any later one it sends at most rate * elapsed + two layers. A second
// bucket at the cap B spans every flow, so over ANY window [a, b] the bytes dispatched are at most
// B * (b - a) + one part when the caller comes back when told: the k-th part in the window leaves
// no earlier than a + (bytes of the previous k-1) / B. A caller that comes back late gets up to one
// layer of that lateness made up (B * (b - a) + one part + one layer). Because the cap's bucket is
// charged part by part, a flow whose part is due never waits behind another flow's whole layer:
// with a DRR quantum of one part it waits at most about part / rate (DRR credits it quantum *
// rate / B per visit) plus a part at B (pacer_test PartsBoundTheWaitBehindAnotherFlowsLayer).
// Under the default start (pace_first_payload false) a flow's first layer is one part that leaves
// as soon as the cap's bucket allows, ahead of the round (its request's model waits for it), so
// the bounds above then hold with that layer as the part. Among flows whose buckets
// allow a part, weighted deficit round robin (quantum proportional to the flow's rate) picks the
// next one, in closed form so one call costs O(flows) however small a quantum is. A flow's parts
// leave in order (offset within the layer, then layer), layers must be enqueued in increasing
// order, and the part that ends a layer says so (Dispatch::last), so per-layer notifications built
// on dispatches stay in layer order.
//
// Time is injected: every call takes `now` (a Time read from a Clock), so tests drive the pacer
// with a ManualClock and check bytes, never wall-clock time. Thread safety: Pacer is not
// synchronised; the Scheduler (grant.h) serialises access. Clock implementations below are
// thread-safe.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "oc/common/status.h"
#include "oc/sched/policy.h"

namespace oc::sched {

// Nanoseconds since an arbitrary origin (a steady clock's epoch).
using Time = std::chrono::nanoseconds;

// The time source. The storage server uses SteadyClock; tests and the emulator ManualClock.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual Time Now() const = 0;
};

// std::chrono::steady_clock.
class SteadyClock final : public Clock {
 public:
  Time Now() const override;
};

// A clock that moves only when told to. Thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(Time start = Time{0}) : now_(start.count()) {}
  Time Now() const override { return Time{now_.load(std::memory_order_acquire)}; }
  void Set(Time t) { now_.store(t.count(), std::memory_order_release); }
  void Advance(Time d) { now_.fetch_add(d.count(), std::memory_order_acq_rel); }

 private:
  std::atomic<int64_t> now_;
};

struct PacerOptions {
  // B: the cap over all flows, bytes per second. 0 dispatches nothing.
  // Default: 100 Gbps (12.5e9 bytes/s)
  double cap_bytes_per_sec = GbpsToBytesPerSec(100);
  // Deficit added per round robin visit to a flow running at the full cap; a flow at rate r gets
  // quantum * r / B. Only the ratios matter for the order; this sets the granularity.
  // Default: 1 MiB
  uint64_t quantum_bytes = uint64_t{1} << 20;
  // A flow's first payload waits its own spacing too (bytes / rate after the flow can first send),
  // so the flow's rate holds from its first byte: layer l leaves (l + 1) * bytes / rate after the
  // start, as a fluid rate limit would deliver it (the paper's protocol). False: the first payload
  // leaves at once, as from a full bucket; every request's layer 0 is on its critical path.
  // Default: false
  bool pace_first_payload = false;
  // Largest part of a layer paced as one unit: a layer of s bytes leaves as ceil(s / part_bytes)
  // parts of equal size (within a byte), each charged to both buckets on its own, so another flow's
  // wait for the cap is bounded by part_bytes / B instead of a whole layer's s / B. Under the
  // default start (pace_first_payload false) a flow's first payload still leaves whole, and ahead
  // of the round: it is on the request's critical path, and split it would wait out every other
  // due flow's parts. 0 paces whole layers. Default: 0
  uint64_t part_bytes = 0;

  // kInvalidArgument if the cap is negative or not finite, or the quantum is 0.
  Status Validate() const;
};

// One part of a layer payload handed to a delivery thread: bytes [offset, offset + bytes) of the
// layer may leave now. With PacerOptions::part_bytes == 0 every dispatch is a whole layer
// (offset 0, last true).
struct Dispatch {
  uint64_t request = 0;
  uint32_t layer = 0;
  uint64_t bytes = 0;
  uint64_t offset = 0;  // bytes of this layer dispatched before this part
  bool last = true;     // this part ends the layer
};

// What a delivery thread should do next.
struct NextStep {
  enum class Kind {
    kDispatch,  // send `dispatch` now
    kWait,      // nothing may leave before `wait_until`; ask again then (or on Enqueue)
    kIdle,      // nothing can leave until something changes (Enqueue, a rate, a release)
  };
  Kind kind = Kind::kIdle;
  Dispatch dispatch;
  Time wait_until{0};
};

class Pacer {
 public:
  // REQUIRES: options.Validate().ok().
  explicit Pacer(const PacerOptions& options);
  Pacer(const Pacer&) = delete;
  Pacer& operator=(const Pacer&) = delete;

  // Adds a flow for `request` at `rate` bytes/s (0 parks it: it queues but never sends).
  // kAlreadyExists if the request is present; kInvalidArgument if the rate is negative or not
  // finite.
  Status AddRequest(uint64_t request, double rate);
  // Changes a flow's rate at `now`. The wait still owed for its last payload (ready - now, at
  // the old rate) is rescaled to the new rate, so a flow that sent its first payload at a crumb
  // of a rate (an arrival when the cap was nearly taken) is not held for that crumb's spacing
  // once it gets its share (docs/decisions/many-clients-admission-queue.md). A flow moving to 0
  // keeps its ready time; a parked flow given a rate may send no earlier than `now` (parking earns
  // no catch-up; under pace_first_payload one parked before its first byte owes that payload's
  // spacing afresh). kNotFound if absent; kInvalidArgument as for AddRequest.
  Status SetRate(uint64_t request, double rate, Time now);
  // Queues one layer payload of `bytes` at `now`; it leaves in parts (PacerOptions::part_bytes).
  // kNotFound if the request is absent; kInvalidArgument if
  // bytes == 0 or `layer` is not greater than the request's previous layer.
  Status Enqueue(uint64_t request, uint32_t layer, uint64_t bytes, Time now);
  // Drops the flow and its queued payloads (cancel, failure or completion). No-op if absent.
  void Remove(uint64_t request);

  // The next part to send at `now`, or how long to wait. A kDispatch result is committed: its
  // bytes count as delivered and against both buckets.
  NextStep Next(Time now);

  bool Has(uint64_t request) const { return flows_.count(request) != 0; }
  // Bytes of `request` dispatched so far; 0 if absent.
  uint64_t DeliveredBytes(uint64_t request) const;
  // Layer payloads of `request` not wholly dispatched (a layer partly sent counts); 0 if absent.
  uint64_t QueuedPayloads(uint64_t request) const;
  // True if any flow has a payload waiting.
  bool HasQueued() const { return !ring_.empty(); }
  // Number of flows.
  size_t size() const { return flows_.size(); }

 private:
  struct Payload {
    uint32_t layer;
    uint64_t bytes;       // the whole layer
    uint64_t sent;        // bytes of it dispatched so far (its next part starts here)
    uint64_t parts_sent;  // parts of it dispatched so far
    Time enqueued;        // a payload is not due before it is queued
    bool whole;           // a first payload under the default start: one part, ahead of the round
  };
  struct Flow {
    uint64_t id = 0;
    double rate = 0;     // bytes per second; 0 = parked
    double deficit = 0;  // DRR deficit, bytes
    Time ready{0};       // earliest time its bucket allows the next payload
    int64_t last_layer = -1;
    uint64_t delivered = 0;
    // pace_first_payload: the first payload's spacing has been charged to `ready`.
    bool first_paced = false;
    std::deque<Payload> queue;
  };

  // A flow Next() may pick: its ring index, its place in a round (1..m), its DRR quantum and the
  // number of the visit on which it could send.
  struct Candidate {
    size_t index;
    double pos;
    double quantum;
    double visit;
  };

  bool Eligible(const Flow& f, Time now) const { return f.rate > 0 && f.ready <= now; }
  // Bytes of the next part of `p`. A layer of s bytes leaves as k = ceil(s / part_bytes) parts of
  // equal size (s / k, the first s % k of them one byte more): a part leaves one spacing of the
  // part before it after that part, so equal parts keep a paced layer's end at its fluid time.
  uint64_t PartBytes(const Payload& p) const;
  // pace_first_payload: once a flow that has sent nothing has both a rate and a payload, its first
  // payload is due one spacing after `now`.
  void PaceFirstPayload(Flow& f, Time now) const;
  void RemoveFromRing(size_t index);
  // Sends the head payload of ring_[ring_index] at `now`; `start`: the earliest time the buckets
  // allowed a payload in this call.
  NextStep Send(size_t ring_index, Time now, Time start);

  const PacerOptions options_;
  std::unordered_map<uint64_t, std::unique_ptr<Flow>> flows_;
  // Backlogged flows (non-empty queue) in round-robin order.
  std::vector<Flow*> ring_;
  // Index in ring_ of the flow visited last; the next visit starts after it, or at index 0 while
  // `fresh_` (no visit since the ring was last empty).
  size_t cursor_ = 0;
  bool fresh_ = true;
  // True while the flow at cursor_ is still within its visit (it got its quantum and has not yet
  // run short of deficit): DRR lets it send again without a new quantum.
  bool in_visit_ = false;
  // The cap's bucket: nothing leaves before this time.
  Time global_ready_{0};
  // The time the last kWait told the driver to come back, while payloads wait for it: a dispatch
  // later than this was due then (the driver was late), and the cap's bucket makes that up.
  std::optional<Time> promised_;
  // Scratch for Next(), kept to avoid an allocation per call.
  std::vector<Candidate> candidates_;
};

}  // namespace oc::sched
