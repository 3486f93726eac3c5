#pragma once
// Bandwidth-allocation policies and the per-request demand they read (docs/design.md: Scheduler).
//
// A layerwise request i is described by its per-layer payload s_i (bytes), its per-layer compute
// window c_i (µs: how long the serving node computes one layer) and its total matched bytes W_i.
// Its zero-stall rate is r*_i = s_i / c_i: at that rate layer l+1 arrives exactly while layer l is
// computed. The calibrated target adds a margin: r̂_i = r*_i + δ.
//
// Units: rates and caps are bytes per second (double) inside the library; the CLI and the config
// speak Gbps (10^9 bit/s) and convert with GbpsToBytesPerSec / BytesPerSecToGbps. Everything here
// is a pure function; thread-safe.

#include <array>
#include <cstdint>
#include <string_view>

#include "oc/common/result.h"

namespace oc::sched {

enum class Policy {
  kEqual,        // r_i = B / n
  kKvProp,       // r_i = B * W_i / sum W      (proportional to matched bytes)
  kBwProp,       // r_i = B * r*_i / sum r*    (proportional to zero-stall rate, uncapped)
  kStallOpt,     // water-filling, targets r*_i (margin 0)
  kCalStallOpt,  // water-filling, targets r*_i + margin (the paper's calibrated stall-opt)
  // Fewest remaining bytes first, each request at min(r*_i, what is left of B), the surplus to
  // the first: stall-aware and work-conserving (docs/decisions/scheduler-shortest-first.md).
  kShortestFirst,
};

// Every policy, in the order `oc schedule --policy all` prints them.
inline constexpr std::array<Policy, 6> kAllPolicies = {
    Policy::kEqual,    Policy::kKvProp,      Policy::kBwProp,
    Policy::kStallOpt, Policy::kCalStallOpt, Policy::kShortestFirst};

// "equal", "kv-prop", "bw-prop", "stall-opt", "cal-stall-opt", "shortest-first".
std::string_view PolicyName(Policy policy);
// The inverse of PolicyName; kInvalidArgument (field "policy") for any other text.
Result<Policy> ParsePolicy(std::string_view name);

// What one request asks of the shared cap.
struct Demand {
  // s_i: bytes of one layer payload (all matched chunks' slices of one layer).
  uint64_t layer_bytes = 0;
  // c_i: per-layer compute window in microseconds. 0 means the serving node does not wait on
  // compute between layers (or the window is unknown): r*_i is unbounded and the request can absorb
  // any rate up to the cap. REQUIRES: finite and >= 0 (Allocate checks).
  double compute_us = 0;
  // W_i = N * L * S: total matched bytes; kv-prop's weight.
  uint64_t total_bytes = 0;
  // Bytes not sent yet; shortest-first's order. 0 means none sent yet: total_bytes is used.
  uint64_t remaining_bytes = 0;
};

inline constexpr double kBitsPerByte = 8.0;
inline constexpr double GbpsToBytesPerSec(double gbps) { return gbps * 1e9 / kBitsPerByte; }
inline constexpr double BytesPerSecToGbps(double bytes_per_sec) {
  return bytes_per_sec * kBitsPerByte / 1e9;
}

// r*_i = s_i / c_i in bytes per second; +infinity when compute_us == 0 and s_i > 0;
// 0 when s_i == 0.
double ZeroStallRate(const Demand& demand);

// The rate request i can use without waste under water-filling: min(r*_i + margin, cap). A zero
// compute window therefore targets the whole cap (it can absorb any rate), no target ever exceeds
// the cap, and a request with layer_bytes == 0 (nothing to send) targets 0. For kStallOpt callers
// pass margin 0. Never NaN or negative for finite, non-negative inputs.
double TargetRate(const Demand& demand, double cap_bytes_per_sec, double margin_bytes_per_sec);

// True when a request of `total_bytes` (W = N*L*S) is delivered layerwise and so shares the cap:
// W >= Θ (docs/design.md: Delivery). Smaller requests run chunkwise, outside the scheduler.
inline constexpr bool IsLayerwise(uint64_t total_bytes, uint64_t threshold_bytes) {
  return total_bytes >= threshold_bytes;
}

}  // namespace oc::sched
