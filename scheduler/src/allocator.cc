#include "oc/sched/allocator.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include <fmt/core.h>

#include "oc/common/check.h"

namespace oc::sched {
namespace {

bool FiniteNonNegative(double v) { return std::isfinite(v) && v >= 0.0; }

std::vector<double> EqualSplit(size_t n, double cap) {
  return std::vector<double>(n, cap / static_cast<double>(n));
}

// r_i = cap * w_i / sum w; the equal split when every weight is 0 (nobody stands out).
std::vector<double> Proportional(const std::vector<double>& weights, double cap) {
  double sum = 0.0;
  for (double w : weights) {
    sum += w;
  }
  if (!(sum > 0.0)) {
    return EqualSplit(weights.size(), cap);
  }
  std::vector<double> rates(weights.size());
  for (size_t i = 0; i < weights.size(); ++i) {
    // w_i <= sum, so the share is in [0, 1] and the rate never exceeds the cap.
    rates[i] = cap * std::min(1.0, weights[i] / sum);
  }
  return rates;
}

// bw-prop: r_i = B * r*_i / sum r*, the weights uncapped (the paper's definition; its Table A9
// gives 16K@87.5% 29.28 Gbps of B = 50 Gbps, which weighting by min(r*_i, B) misses at 28.49).
// A request with c_i = 0 has an unbounded r*: in the limit those requests split B equally and
// the others get 0. Finite weights are divided by the largest first, so no sum overflows.
std::vector<double> ZeroStallProportional(std::span<const Demand> demands, double cap) {
  const size_t n = demands.size();
  std::vector<double> w(n);
  size_t unbounded = 0;
  double largest = 0.0;
  for (size_t i = 0; i < n; ++i) {
    w[i] = ZeroStallRate(demands[i]);
    if (std::isinf(w[i])) {
      ++unbounded;
    } else {
      largest = std::max(largest, w[i]);
    }
  }
  for (double& x : w) {
    if (unbounded > 0) {
      x = std::isinf(x) ? 1.0 : 0.0;
    } else if (largest > 0.0) {
      x /= largest;
    }
  }
  return Proportional(w, cap);
}

// Below this fraction of its target a share is not worth starting a request on: it would crawl
// (a fixed-at-admission rate holds for the whole load, so such a crumb never grows), where 0
// leaves it waiting for a share that lets it run.
constexpr double kShortestFirstMinShare = 0.01;

// shortest-first: in order of remaining bytes (ties by index), each request gets
// min(t_i = min(r*_i, B), what is left of B), or 0 if that is under 1% of t_i; what no target
// takes goes to the first, which can run ahead of its compute and so leaves the cap sooner.
// Requests with nothing to send get 0.
std::vector<double> ShortestFirst(std::span<const Demand> demands, double cap) {
  const size_t n = demands.size();
  std::vector<size_t> order;
  for (size_t i = 0; i < n; ++i) {
    if (demands[i].layer_bytes > 0) {
      order.push_back(i);
    }
  }
  auto remaining = [&](size_t i) {
    return demands[i].remaining_bytes > 0 ? demands[i].remaining_bytes : demands[i].total_bytes;
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return remaining(a) < remaining(b); });
  std::vector<double> rates(n, 0.0);
  double left = cap;
  for (size_t i : order) {
    const double target = TargetRate(demands[i], cap, 0.0);
    rates[i] = left >= target * kShortestFirstMinShare ? std::min(target, left) : 0.0;
    left -= rates[i];
  }
  if (!order.empty() && left > 0.0) {
    rates[order.front()] += left;
  }
  return rates;
}

}  // namespace

std::vector<double> WaterFill(std::span<const double> layer_bytes, std::span<const double> targets,
                              double cap_bytes_per_sec) {
  OC_CHECK(layer_bytes.size() == targets.size());
  const size_t n = targets.size();
  std::vector<double> rates(n, 0.0);
  if (n == 0 || !(cap_bytes_per_sec > 0.0)) {
    return rates;
  }
  double target_sum = 0.0;
  for (double t : targets) {
    target_sum += t;
  }
  if (target_sum <= cap_bytes_per_sec) {
    std::copy(targets.begin(), targets.end(), rates.begin());
    return rates;
  }

  // Contention. Unconstrained optimum: r_i = mu * sqrt(s_i) with mu = 1/sqrt(λ)
  // (KKT: s_i / r_i^2 = λ). Request i is capped at t_i once mu >= b_i = t_i / sqrt(s_i).
  // Requests with s_i == 0 or t_i == 0 keep rate 0 and take no part.
  struct Item {
    size_t index;
    double root;        // sqrt(s_i)
    double breakpoint;  // t_i / sqrt(s_i)
  };
  std::vector<Item> items;
  items.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (layer_bytes[i] > 0.0 && targets[i] > 0.0) {
      const double root = std::sqrt(layer_bytes[i]);
      items.push_back({i, root, targets[i] / root});
    }
  }
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return a.breakpoint < b.breakpoint || (a.breakpoint == b.breakpoint && a.index < b.index);
  });
  // Suffix sums of sqrt(s) so no running subtraction drifts below zero.
  const size_t m = items.size();
  std::vector<double> suffix_root(m + 1, 0.0);
  for (size_t k = m; k-- > 0;) {
    suffix_root[k] = suffix_root[k + 1] + items[k].root;
  }
  // Walk breakpoints in increasing order: cap the first k items while the level mu that spends the
  // rest of the cap on the others reaches the next breakpoint.
  double capped_sum = 0.0;
  size_t k = 0;
  double mu = 0.0;
  for (; k < m; ++k) {
    mu = std::max(0.0, (cap_bytes_per_sec - capped_sum) / suffix_root[k]);
    if (mu < items[k].breakpoint) {
      break;
    }
    capped_sum += targets[items[k].index];
  }
  for (size_t j = 0; j < m; ++j) {
    const size_t i = items[j].index;
    rates[i] = j < k ? targets[i] : std::min(targets[i], mu * items[j].root);
  }
  return rates;
}

Result<std::vector<double>> Allocate(Policy policy, std::span<const Demand> demands,
                                     double cap_bytes_per_sec, double margin_bytes_per_sec) {
  if (!FiniteNonNegative(cap_bytes_per_sec)) {
    return Status::InvalidArgument("cap", "must be finite and >= 0");
  }
  if (!FiniteNonNegative(margin_bytes_per_sec)) {
    return Status::InvalidArgument("margin", "must be finite and >= 0");
  }
  for (size_t i = 0; i < demands.size(); ++i) {
    if (!FiniteNonNegative(demands[i].compute_us)) {
      return Status::InvalidArgument("compute_us",
                                     fmt::format("request {}: must be finite and >= 0", i));
    }
  }
  const size_t n = demands.size();
  if (n == 0) {
    return std::vector<double>();
  }
  const double cap = cap_bytes_per_sec;
  switch (policy) {
    case Policy::kEqual:
      return EqualSplit(n, cap);
    case Policy::kKvProp: {
      std::vector<double> w(n);
      for (size_t i = 0; i < n; ++i) {
        w[i] = static_cast<double>(demands[i].total_bytes);
      }
      return Proportional(w, cap);
    }
    case Policy::kBwProp:
      return ZeroStallProportional(demands, cap);
    case Policy::kShortestFirst:
      return ShortestFirst(demands, cap);
    case Policy::kStallOpt:
    case Policy::kCalStallOpt: {
      const double margin = policy == Policy::kStallOpt ? 0.0 : margin_bytes_per_sec;
      std::vector<double> s(n);
      std::vector<double> t(n);
      for (size_t i = 0; i < n; ++i) {
        s[i] = static_cast<double>(demands[i].layer_bytes);
        t[i] = TargetRate(demands[i], cap, margin);
      }
      return WaterFill(s, t, cap);
    }
  }
  return Status::InvalidArgument("policy", "unknown policy value");
}

}  // namespace oc::sched
