#pragma once
// The allocator: given the active layerwise requests' demands and the cap B, one rate per request
// under a policy (docs/design.md: Scheduler; decisions in docs/decisions/README.md).
//
//   equal          B / n
//   kv-prop        B * W_i / sum W        (equal split if every W_i is 0)
//   bw-prop        B * r*_i / sum r*      uncapped; c_i = 0 (r* unbounded) requests split B
//   stall-opt      water-filling with targets t_i = min(r*_i, B)
//   cal-stall-opt  water-filling with targets t_i = min(r*_i + δ, B)
//   shortest-first fewest remaining bytes first, r_i = min(min(r*_i, B), left), surplus to the
//   first; a share under 1% of min(r*_i, B) is 0 instead (the request waits, it does not crawl)
//
// Water-filling solves  minimise sum s_i / r_i  s.t.  sum r_i = B, 0 < r_i <= t_i  in closed form,
// O(n log n): r_i = min(t_i, sqrt(s_i / λ)), λ found by sorting the breakpoints t_i / sqrt(s_i).
// When sum t_i <= B every request gets its target (and sum r_i < B). A request with s_i = 0 has
// nothing to send: its target, hence its rate, is 0. The baselines follow the paper's definitions
// exactly: they are not capped at targets and do not redistribute (a share above what a request
// needs makes it finish early).
//
// Guarantees for valid input: every rate finite, >= 0, sum r_i <= B (up to rounding of one ulp per
// request), and for water-filling r_i <= t_i. B = 0 gives all-zero rates; n = 0 an empty vector.
// Pure and thread-safe.

#include <span>
#include <vector>

#include "oc/common/result.h"
#include "oc/sched/policy.h"

namespace oc::sched {

// Rates in bytes per second, one per demand, in the same order. kInvalidArgument when cap or margin
// is negative or not finite, or when a demand's compute_us is negative or not finite (field
// "compute_us", message naming the index).
Result<std::vector<double>> Allocate(Policy policy, std::span<const Demand> demands,
                                     double cap_bytes_per_sec, double margin_bytes_per_sec);

// Water-filling on explicit targets: minimise sum s_i / r_i s.t. sum r_i <= B, r_i <= t_i.
// REQUIRES: layer_bytes.size() == targets.size(), every value finite and >= 0, cap >= 0. Exposed
// for tests and for callers that compute targets themselves.
std::vector<double> WaterFill(std::span<const double> layer_bytes, std::span<const double> targets,
                              double cap_bytes_per_sec);

}  // namespace oc::sched
