// Experiment 7 (Emulator::Sched): the scheduling workloads of issue 6 (sizes.h) run together
// through one engine per policy and variant (epochs or work-conserving), against the same
// workload unthrottled before and after; per request the added TTFT and Equation 3 at the rates
// the scheduler assigned when each layer landed.
#include "emulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "oc/sched/grant.h"
#include "oc/sched/policy.h"

namespace oc::bench::ttft {

Status Emulator::Sched(Json* out) {
  const double ks = k_ / 2;
  const double phi = static_cast<double>(size_.sched_phi);
  Json workloads = Json::array();
  for (const Workload& wl : Workloads()) {
    if (std::find(size_.sched_workloads.begin(), size_.sched_workloads.end(), wl.name) ==
        size_.sched_workloads.end()) {
      continue;
    }
    std::vector<Request> reqs;
    double demand = 0;
    for (const Profile& p : wl.profiles) {
      Request r;
      r.g = size_.sched_g;
      r.layers = size_.sched_layers;
      r.chunks = static_cast<uint64_t>(static_cast<double>(p.context) * p.hit / phi) / r.g;
      r.compute_us = PaperComputeMsPerLayer(table_a8_, p.context, p.hit) * 1e3 / (phi * ks);
      r.label = std::to_string(reqs.size()) + ":" + std::to_string(p.context / 1024) + "K@" +
                (p.hit > 0.7 ? "87.5%" : "50%");
      if (r.chunks == 0) return Status::InvalidArgument("sched", "a request of no chunks");
      OC_RETURN_IF_ERROR(w_.Fill(r.g, r.layers, r.chunks));
      demand += static_cast<double>(r.layer_bytes()) / (r.compute_us * 1e-6);
      reqs.push_back(r);
    }
    const double cap = sched::GbpsToBytesPerSec(wl.paper_cap_gbps) * ks;
    std::fprintf(stderr,
                 "sched workload %s: %zu requests, demand %.3f Gbps, cap %.3f Gbps "
                 "(ratio %.2f)\n",
                 wl.name, reqs.size(), sched::BytesPerSecToGbps(demand),
                 sched::BytesPerSecToGbps(cap), demand / cap);
    // Each request's median TTFT over the repetitions; every Measured of the median run.
    auto median_run = [&](storage::kv::KvEngine& engine) {
      std::vector<std::vector<Measured>> runs;
      for (int rep = 0; rep < size_.sched_reps; ++rep) {
        runs.push_back(w_.RunStore(engine, reqs, true, 0));
      }
      std::vector<Measured> med(reqs.size());
      for (size_t i = 0; i < reqs.size(); ++i) {
        std::vector<std::pair<double, size_t>> t;
        for (size_t k = 0; k < runs.size(); ++k) t.push_back({runs[k][i].ttft_ms, k});
        std::sort(t.begin(), t.end());
        med[i] = runs[t[t.size() / 2].second][i];
        for (const auto& run : runs) {
          if (!run[i].ok) {
            med[i].ok = false;
            med[i].error = run[i].error;
            ok_ = false;
          }
        }
      }
      return med;
    };
    const std::vector<Measured> before = median_run(w_.layerwise());
    struct PolicyRun {
      sched::Policy policy;
      bool wc;
      std::vector<Measured> res;
    };
    std::vector<PolicyRun> policy_runs;
    for (bool wc : {false, true}) {
      for (sched::Policy policy : sched::kAllPolicies) {
        auto so = std::make_shared<sched::SchedulerOptions>();
        so->cap_gbps = sched::BytesPerSecToGbps(cap);
        so->margin_gbps = 5 * ks;
        so->policy = policy;
        so->work_conserving = wc;
        so->epoch =
            std::chrono::microseconds(std::max<int64_t>(1000, std::llround(10'000 / (phi * ks))));
        so->drr_quantum_bytes = 256 << 10;
        OC_ASSIGN_OR_RETURN(auto engine, w_.MakeEngine(1, so));
        policy_runs.push_back({policy, wc, median_run(*engine)});
        std::fprintf(stderr, "  ran %s %s\n", std::string(sched::PolicyName(policy)).c_str(),
                     wc ? "work-conserving" : "epoch");
      }
    }
    const std::vector<Measured> after = median_run(w_.layerwise());
    std::vector<double> base(reqs.size());
    Json unthrottled = Json::array();
    for (size_t i = 0; i < reqs.size(); ++i) {
      base[i] = (before[i].ttft_ms + after[i].ttft_ms) / 2;
      unthrottled.push_back({{"profile", reqs[i].label},
                             {"before_ms", before[i].ttft_ms},
                             {"after_ms", after[i].ttft_ms},
                             {"ttft_ms", base[i]}});
    }
    Json runs = Json::array();
    for (const PolicyRun& pr : policy_runs) {
      Json rq = Json::array();
      double sum_added = 0, max_added = -1e300, sum_eq3_added = 0;
      int n_modelled = 0;
      for (size_t i = 0; i < reqs.size(); ++i) {
        const Request& r = reqs[i];
        const Measured& m = pr.res[i];
        const double c_ms = r.compute_us * 1e-3;
        // Equation 3 with layer l's transfer at the rate the scheduler gave the request when
        // layer l landed (the data plane's rate if that was more, or if none was known).
        std::vector<double> xs;
        double rate_sum = 0;
        for (double g : m.layer_rates_gbps) {
          const double bps = sched::GbpsToBytesPerSec(g);
          rate_sum += g;
          xs.push_back(static_cast<double>(r.layer_bytes()) /
                       (bps > 0 ? std::min(bps, rate_) : rate_) * 1e3);
        }
        const double mean_rate = xs.empty() ? 0 : rate_sum / static_cast<double>(xs.size());
        // The grant is gone once the last layer is written, so the last notifications may find
        // no rate: they keep the last one seen.
        const bool modelled = !xs.empty();
        while (modelled && static_cast<int>(xs.size()) < r.layers) xs.push_back(xs.back());
        double eq3 = 0;
        if (modelled) {
          eq3 = xs[0] + c_ms;
          for (int l = 0; l + 1 < r.layers; ++l)
            eq3 += std::max(xs[static_cast<size_t>(l) + 1], c_ms);
        }
        // The unthrottled model: every layer at the data plane's calibrated rate.
        const double eq3_base = PredictMs(Path::kS3AggLW, r, rate_);
        const double added = m.ttft_ms - base[i];
        sum_added += added;
        max_added = std::max(max_added, added);
        if (modelled) {
          sum_eq3_added += eq3 - eq3_base;
          ++n_modelled;
        }
        const double zero_stall = static_cast<double>(r.layer_bytes()) / (c_ms * 1e-3);
        rq.push_back({{"profile", r.label},
                      {"layer_bytes", r.layer_bytes()},
                      {"compute_us", r.compute_us},
                      {"zero_stall_gbps", sched::BytesPerSecToGbps(zero_stall)},
                      {"admitted_gbps", m.admitted_gbps},
                      {"rate_gbps", mean_rate},
                      {"layer_rates_gbps", m.layer_rates_gbps},
                      {"ttft_ms", m.ttft_ms},
                      {"added_ttft_ms", added},
                      {"eq3_ms", eq3},
                      {"eq3_added_ms", modelled ? Json(eq3 - eq3_base) : Json(nullptr)},
                      {"ok", m.ok}});
        if (modelled) {
          AddModelRow("sched",
                      std::string(wl.name) + " " + std::string(sched::PolicyName(pr.policy)) +
                          (pr.wc ? " wc " : " epoch ") + r.label,
                      m.ttft_ms, eq3);
        }
      }
      const double n = static_cast<double>(reqs.size());
      runs.push_back({{"policy", std::string(sched::PolicyName(pr.policy))},
                      {"variant", pr.wc ? "work-conserving" : "epoch"},
                      {"requests", rq},
                      {"mean_added_ttft_ms", sum_added / n},
                      {"max_added_ttft_ms", max_added},
                      {"mean_eq3_added_ms",
                       n_modelled > 0 ? Json(sum_eq3_added / n_modelled) : Json(nullptr)}});
      std::fprintf(stderr,
                   "  %-14s %-15s added TTFT mean %8.2f ms, max %8.2f ms; Eq. 3 "
                   "added mean %8.2f ms\n",
                   std::string(sched::PolicyName(pr.policy)).c_str(),
                   pr.wc ? "work-conserving" : "epoch", sum_added / n, max_added,
                   n_modelled > 0 ? sum_eq3_added / n_modelled : 0.0);
    }
    workloads.push_back({{"name", wl.name},
                         {"paper_cap_gbps", wl.paper_cap_gbps},
                         {"cap_gbps", sched::BytesPerSecToGbps(cap)},
                         {"demand_gbps", sched::BytesPerSecToGbps(demand)},
                         {"demand_over_cap", demand / cap},
                         {"epoch_us", std::max<int64_t>(1000, std::llround(10'000 / (phi * ks)))},
                         {"unthrottled", unthrottled},
                         {"runs", runs}});
  }
  (*out)["workloads"] = workloads;
  return Status::Ok();
}

}  // namespace oc::bench::ttft
