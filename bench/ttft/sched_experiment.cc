// Experiment 7 (Emulator::Sched): the paper's scheduling measurement (its Tables A9-A12). Each
// workload (sizes.h: A, B and C as the paper defines them) runs with all its requests starting
// together, through one engine per policy and per way of sharing the cap:
//   admission        the paper's protocol: a rate fixed at admission for the whole load, from
//                    the first byte, freed bandwidth only for later arrivals
//                    (SchedulerOptions::fixed_at_admission and pace_first_layer)
//   admission-whole-layer  the paper's protocol with whole layers paced as one payload (no
//                    parts, pace_part_bytes = 0): how it ran before issue 34; a request then
//                    waits behind another's whole layer in the cap's bucket
//   admission-burst  the same rates with the pacer's default start: each request's layer 0
//                    leaves at once instead of one layer's transfer time at its rate
//   epoch            rates recomputed every epoch (the default)
//   work-conserving  rates recomputed at every arrival and departure
// Except admission-whole-layer, layers are paced in parts of Size::sched_part_bytes with a DRR
// quantum of one part (docs/decisions/pacer-sub-layer-parts.md).
// The baseline is each request alone and uncapped (no scheduler), as in the paper. Per request:
// the median TTFT over the repetitions, the added TTFT over the baseline (a negative one is a
// baseline failure, counted and reported), and Equation 3 both at the rates the scheduler held
// when each layer landed and at the policy's rates for the whole workload (what the paper's
// Table A9 lists); per run the sum of added TTFT, as the paper reports it.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "emulator.h"
#include "oc/sched/allocator.h"
#include "oc/sched/grant.h"
#include "oc/sched/policy.h"

namespace oc::bench::ttft {
namespace {

enum class Sharing { kAdmission, kAdmissionWholeLayer, kAdmissionBurst, kEpoch, kWorkConserving };
constexpr Sharing kAllSharing[] = {Sharing::kAdmission, Sharing::kAdmissionWholeLayer,
                                   Sharing::kAdmissionBurst, Sharing::kEpoch,
                                   Sharing::kWorkConserving};

// The DRR quantum of the runs that pace whole layers (as before issue 34).
constexpr uint64_t kWholeLayerQuantum = 256 << 10;

// Admission mode's batch window: longer than any workload's arrivals take to start.
constexpr int64_t kAdmissionWindowUs = 1'000'000;

const char* SharingName(Sharing s) {
  switch (s) {
    case Sharing::kAdmission:
      return "admission";
    case Sharing::kAdmissionWholeLayer:
      return "admission-whole-layer";
    case Sharing::kAdmissionBurst:
      return "admission-burst";
    case Sharing::kEpoch:
      return "epoch";
    case Sharing::kWorkConserving:
      return "work-conserving";
  }
  return "?";
}

std::string ProfileLabel(size_t i, const Profile& p) {
  return std::to_string(i) + ":" + std::to_string(p.context / 1024) + "K@" +
         (p.hit > 0.7 ? "87.5%" : "50%");
}

}  // namespace

Status Emulator::Sched(Json* out) {
  const double ks = SchedK();
  const double phi = static_cast<double>(size_.sched_phi);
  const int64_t epoch_us = std::max<int64_t>(1000, std::llround(10'000 / (phi * ks)));
  Json workloads = Json::array();
  for (const Workload& wl : Workloads()) {
    if (std::find(size_.sched_workloads.begin(), size_.sched_workloads.end(), wl.name) ==
        size_.sched_workloads.end()) {
      continue;
    }
    std::vector<Request> reqs;
    std::vector<sched::Demand> demands;
    double demand = 0;
    for (const Profile& p : wl.profiles) {
      Request r;
      r.g = size_.sched_g;
      r.layers = size_.sched_layers;
      r.chunks = static_cast<uint64_t>(static_cast<double>(p.context) * p.hit / phi) / r.g;
      r.compute_us = PaperComputeMsPerLayer(table_a8_, p.context, p.hit) * 1e3 / (phi * ks);
      r.label = ProfileLabel(reqs.size(), p);
      if (r.chunks == 0) return Status::InvalidArgument("sched", "a request of no chunks");
      OC_RETURN_IF_ERROR(w_.Fill(r.g, r.layers, r.chunks));
      demand += static_cast<double>(r.layer_bytes()) / (r.compute_us * 1e-6);
      demands.push_back({r.layer_bytes(), r.compute_us, r.payload()});
      reqs.push_back(r);
    }
    const double cap = sched::GbpsToBytesPerSec(wl.paper_cap_gbps) * ks;
    // δ: the one measured by the delta experiment when it ran first, else the paper's 5 Gbps.
    const bool calibrated = measured_delta_paper_gbps_ >= 0;
    const double margin =
        sched::GbpsToBytesPerSec(calibrated ? measured_delta_paper_gbps_ : 5.0) * ks;
    std::fprintf(stderr,
                 "sched workload %s: %zu requests, demand %.3f Gbps, cap %.3f Gbps "
                 "(ratio %.2f), L = %d, %d repetitions\n",
                 wl.name, reqs.size(), sched::BytesPerSecToGbps(demand),
                 sched::BytesPerSecToGbps(cap), demand / cap, size_.sched_layers, size_.sched_reps);

    // The baseline: each request alone through the unscheduled engine, median of the reps.
    std::vector<double> base(reqs.size());
    Json baseline = Json::array();
    for (size_t i = 0; i < reqs.size(); ++i) {
      std::vector<double> t;
      WarmUp(w_.layerwise(), {reqs[i]});
      for (int rep = 0; rep < size_.sched_reps; ++rep) {
        Measured m = w_.RunStore(w_.layerwise(), {reqs[i]}, true, 0)[0];
        if (!m.ok) {
          ok_ = false;
          std::fprintf(stderr, "  baseline %s failed: %s\n", reqs[i].label.c_str(),
                       m.error.c_str());
        }
        t.push_back(m.ttft_ms);
      }
      std::sort(t.begin(), t.end());
      base[i] = t[t.size() / 2];
      baseline.push_back({{"profile", reqs[i].label},
                          {"ttft_ms", base[i]},
                          {"runs_ms", t},
                          {"eq3_ms", PredictMs(Path::kS3AggLW, reqs[i], rate_)}});
    }

    // Each request's median TTFT over the repetitions; every Measured of the median run.
    auto median_run = [&](storage::kv::KvEngine& engine) {
      std::vector<std::vector<Measured>> runs;
      WarmUp(engine, reqs);
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

    auto wanted = [](const std::vector<std::string>& only, std::string_view name) {
      return only.empty() || std::find(only.begin(), only.end(), name) != only.end();
    };
    Json runs = Json::array();
    for (Sharing sharing : kAllSharing) {
      if (!wanted(size_.sched_variants, SharingName(sharing))) continue;
      for (sched::Policy policy : sched::kAllPolicies) {
        if (!wanted(size_.sched_policies, sched::PolicyName(policy))) continue;
        auto so = std::make_shared<sched::SchedulerOptions>();
        so->cap_gbps = sched::BytesPerSecToGbps(cap);
        so->margin_gbps = sched::BytesPerSecToGbps(margin);
        so->policy = policy;
        so->work_conserving = sharing == Sharing::kWorkConserving;
        const bool admission = sharing == Sharing::kAdmission ||
                               sharing == Sharing::kAdmissionWholeLayer ||
                               sharing == Sharing::kAdmissionBurst;
        so->fixed_at_admission = admission;
        so->pace_first_layer =
            sharing == Sharing::kAdmission || sharing == Sharing::kAdmissionWholeLayer;
        // Under the admission rule the epoch is only the window in which arrivals are shared
        // out together: every request here starts at once, so it spans all their arrivals
        // (threads on a loaded machine start milliseconds apart) and the rates are the policy's.
        so->epoch = std::chrono::microseconds(admission ? kAdmissionWindowUs : epoch_us);
        const bool whole = sharing == Sharing::kAdmissionWholeLayer;
        so->pace_part_bytes = whole ? 0 : size_.sched_part_bytes;
        so->drr_quantum_bytes = whole                           ? kWholeLayerQuantum
                                : size_.sched_quantum_bytes > 0 ? size_.sched_quantum_bytes
                                                                : size_.sched_part_bytes;
        OC_ASSIGN_OR_RETURN(auto engine, w_.MakeEngine(1, so));
        const std::vector<Measured> res = median_run(*engine);
        // The policy's rates for the whole workload together (Table A9's analogue).
        OC_ASSIGN_OR_RETURN(std::vector<double> policy_rates,
                            sched::Allocate(policy, demands, cap, margin));

        Json rq = Json::array();
        double sum_added = 0, max_added = -1e300, sum_eq3_held = 0, sum_eq3_policy = 0;
        int failures = 0, n_modelled = 0;
        bool policy_unmodelled = false;
        for (size_t i = 0; i < reqs.size(); ++i) {
          const Request& r = reqs[i];
          const Measured& m = res[i];
          const double c_ms = r.compute_us * 1e-3;
          const double eq3_base = PredictMs(Path::kS3AggLW, r, rate_);
          // Equation 3 with layer l's transfer at the rate the scheduler held when layer l
          // landed (the data plane's rate if that was more, or if none was known).
          std::vector<double> xs;
          double rate_sum = 0;
          for (double g : m.layer_rates_gbps) {
            const double bps = sched::GbpsToBytesPerSec(g);
            rate_sum += g;
            xs.push_back(static_cast<double>(r.layer_bytes()) /
                         (bps > 0 ? std::min(bps, rate_) : rate_) * 1e3);
          }
          const double mean_rate = xs.empty() ? 0 : rate_sum / static_cast<double>(xs.size());
          // The grant is gone once the last layer is written, so the last notifications may
          // find no rate: they keep the last one seen.
          const bool modelled = !xs.empty();
          while (modelled && static_cast<int>(xs.size()) < r.layers) xs.push_back(xs.back());
          double eq3_held = 0;
          if (modelled) {
            eq3_held = xs[0] + c_ms;
            for (int l = 0; l + 1 < r.layers; ++l)
              eq3_held += std::max(xs[static_cast<size_t>(l) + 1], c_ms);
            sum_eq3_held += eq3_held - eq3_base;
            ++n_modelled;
          }
          // A policy that gives a request 0 for now (shortest-first) has no fixed-rate TTFT.
          const double policy_rate = std::min(policy_rates[i], rate_);
          const double eq3_policy = policy_rate > 0 ? PredictMs(Path::kS3AggLW, r, policy_rate) : 0;
          if (policy_rate > 0) {
            sum_eq3_policy += eq3_policy - eq3_base;
          } else {
            policy_unmodelled = true;
          }
          const double added = m.ttft_ms - base[i];
          const bool baseline_failure = added < 0;
          failures += baseline_failure ? 1 : 0;
          sum_added += added;
          max_added = std::max(max_added, added);
          const double zero_stall = static_cast<double>(r.layer_bytes()) / (c_ms * 1e-3);
          rq.push_back({{"profile", r.label},
                        {"layer_bytes", r.layer_bytes()},
                        {"compute_us", r.compute_us},
                        {"zero_stall_gbps", sched::BytesPerSecToGbps(zero_stall)},
                        {"policy_rate_gbps", sched::BytesPerSecToGbps(policy_rates[i])},
                        {"paper_rate_gbps", sched::BytesPerSecToGbps(policy_rates[i]) / ks},
                        {"admitted_gbps", m.admitted_gbps},
                        {"rate_gbps", mean_rate},
                        {"layer_rates_gbps", m.layer_rates_gbps},
                        {"baseline_ms", base[i]},
                        {"ttft_ms", m.ttft_ms},
                        {"added_ttft_ms", added},
                        {"baseline_failure", baseline_failure},
                        {"eq3_ms", eq3_held},
                        {"eq3_added_ms", modelled ? Json(eq3_held - eq3_base) : Json(nullptr)},
                        {"eq3_policy_added_ms",
                         policy_rate > 0 ? Json(eq3_policy - eq3_base) : Json(nullptr)},
                        {"ok", m.ok},
                        {"trace",
                         {{"landed_ms", m.landed_ms},
                          {"woke_ms", m.woke_ms},
                          {"compute_end_ms", m.compute_end_ms}}}});
          if (modelled) {
            AddModelRow("sched",
                        std::string(wl.name) + " " + std::string(sched::PolicyName(policy)) + " " +
                            SharingName(sharing) + " " + r.label,
                        m.ttft_ms, eq3_held);
          }
        }
        const double n = static_cast<double>(reqs.size());
        runs.push_back({{"policy", std::string(sched::PolicyName(policy))},
                        {"variant", SharingName(sharing)},
                        {"pace_part_bytes", so->pace_part_bytes},
                        {"drr_quantum_bytes", so->drr_quantum_bytes},
                        {"requests", rq},
                        {"sum_added_ttft_ms", sum_added},
                        {"mean_added_ttft_ms", sum_added / n},
                        {"max_added_ttft_ms", max_added},
                        {"baseline_failures", failures},
                        {"sum_eq3_added_ms", n_modelled > 0 ? Json(sum_eq3_held) : Json(nullptr)},
                        {"mean_eq3_added_ms",
                         n_modelled > 0 ? Json(sum_eq3_held / n_modelled) : Json(nullptr)},
                        {"sum_eq3_policy_added_ms",
                         policy_unmodelled ? Json(nullptr) : Json(sum_eq3_policy)}});
        // A policy that parks a request has no Eq. 3 sum at its rates (null in the JSON).
        const std::string eq3_policy_text =
            policy_unmodelled ? std::string("      n/a") : fmt::format("{:9.1f}", sum_eq3_policy);
        std::fprintf(stderr,
                     "  %-14s %-15s added TTFT sum %9.1f ms (Eq. 3 at held rates %9.1f, at "
                     "policy rates %s)%s\n",
                     std::string(sched::PolicyName(policy)).c_str(), SharingName(sharing),
                     sum_added, sum_eq3_held, eq3_policy_text.c_str(),
                     failures > 0 ? " BASELINE FAILURE" : "");
      }
    }
    // Equal's sum of added TTFT over each policy's, per way of sharing: > 1 means it beats equal.
    Json ratios = Json::array();
    for (Sharing sharing : kAllSharing) {
      double equal = 0, equal_eq3 = 0;
      for (const Json& run : runs) {
        if (run["variant"] == SharingName(sharing) && run["policy"] == "equal") {
          equal = run["sum_added_ttft_ms"].get<double>();
          equal_eq3 = run["sum_eq3_policy_added_ms"].is_number()
                          ? run["sum_eq3_policy_added_ms"].get<double>()
                          : 0;
        }
      }
      for (const Json& run : runs) {
        if (run["variant"] != SharingName(sharing) || run["policy"] == "equal") continue;
        const double mine = run["sum_added_ttft_ms"].get<double>();
        const double mine_eq3 = run["sum_eq3_policy_added_ms"].is_number()
                                    ? run["sum_eq3_policy_added_ms"].get<double>()
                                    : 0;
        ratios.push_back(
            {{"variant", SharingName(sharing)},
             {"policy", run["policy"]},
             {"equal_over_policy", mine > 0 ? Json(equal / mine) : Json(nullptr)},
             {"eq3_equal_over_policy", mine_eq3 > 0 ? Json(equal_eq3 / mine_eq3) : Json(nullptr)}});
      }
    }
    workloads.push_back({{"name", wl.name},
                         {"paper_cap_gbps", wl.paper_cap_gbps},
                         {"cap_gbps", sched::BytesPerSecToGbps(cap)},
                         {"margin_gbps", sched::BytesPerSecToGbps(margin)},
                         {"margin_paper_gbps", sched::BytesPerSecToGbps(margin) / ks},
                         {"margin_source", calibrated ? "measured (delta, against a competing flow)"
                                                      : "the paper's 5 Gbps"},
                         {"demand_gbps", sched::BytesPerSecToGbps(demand)},
                         {"demand_over_cap", demand / cap},
                         {"layers", size_.sched_layers},
                         {"repetitions", size_.sched_reps},
                         {"epoch_us", epoch_us},
                         {"baseline_note", "each request alone, uncapped, no scheduler"},
                         {"unthrottled", baseline},
                         {"runs", runs},
                         {"ratios", ratios}});
  }
  (*out)["workloads"] = workloads;
  return Status::Ok();
}

}  // namespace oc::bench::ttft
