// Scheduler benchmarks (issue 6): the cost of deciding rates and dispatch order, which the storage
// server pays once per epoch (Allocate) and once per layer payload (Pacer::Next).
//
//   BM_Allocate/<policy>/<n>   Allocate() for n = 10, 100, 10,000 random layerwise requests
//                              under each policy (0 equal, 1 kv-prop, 2 bw-prop, 3 stall-opt,
//                              4 cal-stall-opt, 5 shortest-first); the cap is half the sum
//                              of targets, so water-filling caps part of the requests.
//                              items/s = requests/s.
//   BM_PacerNext/<n>           Pacer::Next() with n backlogged flows at water-filled rates,
//                              the fake clock jumping to each wait; items/s = payloads/s.
//
// Compare policies at the same n in one run: stall-opt's sort makes it O(n log n) against the
// baselines' O(n). Run: scheduler_bench --benchmark_format=json

#include <cmath>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

#include "oc/sched/allocator.h"
#include "oc/sched/pacer.h"
#include "oc/sched/policy.h"

namespace {

namespace sched = oc::sched;

struct Workload {
  std::vector<sched::Demand> demands;
  double cap = 0;
  double margin = 0;
};

// s from 256 KiB to 64 MiB, c from 1 ms to 300 ms (Table A8's range), 32 layers; fixed seed.
Workload MakeWorkload(size_t n) {
  std::mt19937_64 rng(1234);
  std::uniform_real_distribution<double> log_s(std::log(256e3), std::log(64e6));
  std::uniform_real_distribution<double> log_c(std::log(1e3), std::log(3e5));
  Workload w;
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    sched::Demand d;
    d.layer_bytes = static_cast<uint64_t>(std::exp(log_s(rng)));
    d.compute_us = std::exp(log_c(rng));
    d.total_bytes = d.layer_bytes * 32;
    sum += sched::ZeroStallRate(d);
    w.demands.push_back(d);
  }
  w.cap = sum / 2;
  w.margin = sched::GbpsToBytesPerSec(5);
  return w;
}

void BM_Allocate(benchmark::State& state) {
  const auto policy = sched::kAllPolicies[static_cast<size_t>(state.range(0))];
  const Workload w = MakeWorkload(static_cast<size_t>(state.range(1)));
  for (auto _ : state) {
    auto rates = sched::Allocate(policy, w.demands, w.cap, w.margin);
    benchmark::DoNotOptimize(rates);
  }
  state.SetLabel(std::string(sched::PolicyName(policy)));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * state.range(1));
}
BENCHMARK(BM_Allocate)->ArgsProduct({{0, 1, 2, 3, 4, 5}, {10, 100, 10'000}});

void BM_PacerNext(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const Workload w = MakeWorkload(n);
  auto rates = sched::Allocate(sched::Policy::kCalStallOpt, w.demands, w.cap, w.margin);
  sched::Pacer pacer(sched::PacerOptions{w.cap, 1 << 20});
  for (size_t i = 0; i < n; ++i) {
    (void)pacer.AddRequest(i, (*rates)[i]);
  }
  // Keep every flow backlogged: refill a flow's next layer whenever one leaves.
  std::vector<uint32_t> next_layer(n, 0);
  for (size_t i = 0; i < n; ++i) {
    (void)pacer.Enqueue(i, next_layer[i]++, w.demands[i].layer_bytes, sched::Time{0});
    (void)pacer.Enqueue(i, next_layer[i]++, w.demands[i].layer_bytes, sched::Time{0});
  }
  sched::Time now{0};
  int64_t dispatched = 0;
  for (auto _ : state) {
    sched::NextStep step = pacer.Next(now);
    if (step.kind == sched::NextStep::Kind::kWait) {
      now = step.wait_until;
      step = pacer.Next(now);
    }
    if (step.kind == sched::NextStep::Kind::kDispatch) {
      ++dispatched;
      const size_t i = step.dispatch.request;
      (void)pacer.Enqueue(i, next_layer[i]++, w.demands[i].layer_bytes, now);
    }
  }
  state.SetItemsProcessed(dispatched);
}
BENCHMARK(BM_PacerNext)->Arg(10)->Arg(100)->Arg(1000);

}  // namespace

BENCHMARK_MAIN();
