#include "oc/sched/policy.h"

#include <algorithm>
#include <limits>
#include <string>

#include <fmt/core.h>

namespace oc::sched {

std::string_view PolicyName(Policy policy) {
  switch (policy) {
    case Policy::kEqual:
      return "equal";
    case Policy::kKvProp:
      return "kv-prop";
    case Policy::kBwProp:
      return "bw-prop";
    case Policy::kStallOpt:
      return "stall-opt";
    case Policy::kCalStallOpt:
      return "cal-stall-opt";
    case Policy::kShortestFirst:
      return "shortest-first";
  }
  return "unknown";
}

Result<Policy> ParsePolicy(std::string_view name) {
  for (Policy p : kAllPolicies) {
    if (PolicyName(p) == name) {
      return p;
    }
  }
  return Status::InvalidArgument("policy",
                                 fmt::format("unknown policy '{}' (equal, kv-prop, bw-prop, "
                                             "stall-opt, cal-stall-opt, shortest-first)",
                                             name));
}

double ZeroStallRate(const Demand& demand) {
  if (demand.layer_bytes == 0) {
    return 0.0;
  }
  if (demand.compute_us <= 0.0) {
    return std::numeric_limits<double>::infinity();
  }
  // bytes / µs -> bytes / s. A tiny window overflows to +inf, which TargetRate caps.
  return static_cast<double>(demand.layer_bytes) * 1e6 / demand.compute_us;
}

double TargetRate(const Demand& demand, double cap_bytes_per_sec, double margin_bytes_per_sec) {
  if (demand.layer_bytes == 0 || cap_bytes_per_sec <= 0.0) {
    return 0.0;
  }
  return std::min(ZeroStallRate(demand) + margin_bytes_per_sec, cap_bytes_per_sec);
}

}  // namespace oc::sched
