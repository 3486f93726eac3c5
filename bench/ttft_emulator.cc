// ttft_emulator: time to first token of emulated serving nodes fed through the storage server's
// pacing path (storage-server/src/kv/pacing.h: admission, the scheduler's policies and epochs, the
// DWRR pacer and its dispatcher thread on the real steady clock).
//
// Each request is a delivery thread and a serving node. The delivery thread does what layerwise
// GetLayers does per layer: RequestPacer::BeforeLayer (blocks until the pacer lets the layer go),
// then copies the layer payload into the node's target memory (the emulated data plane: one
// memcpy) and signals layer-ready. The node waits for layer l, "computes" it for c (sleeping), and
// its TTFT is when layer L-1's compute ends: Equation 3, T = X_0 + sum max(X_{l+1}, C_l) + C_{L-1},
// emerges from the overlap (the Eq. 3 value from the assigned rate is reported beside it).
//
// Workloads (Llama-3.1-8B, Table A8 of the ObjectCache paper: c per layer and cached bytes per
// context and hit rate), scaled: every rate (demands r* = s/c, the cap, δ) is multiplied by
// k = (cap measured here) / (paper cap), and every time (c, the epoch) divided by the time scale
// with L reduced; s = r* * k * c / time_scale keeps each request's bytes-per-layer to
// compute-per-layer ratio at r* * k, so demand / cap stays the paper's.
//
// Usage: ttft_emulator [--full] [--out results.json]   (progress on stderr, JSON on stdout or
// --out)

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kv/pacing.h"
#include "oc/sched/grant.h"
#include "oc/sched/options.h"
#include "oc/sched/pacer.h"
#include "oc/sched/policy.h"

namespace {

using Steady = std::chrono::steady_clock;
using oc::sched::Policy;

// One row of Table A8 (objectcache-table-a8.csv).
struct Profile {
  const char* name;
  uint64_t context;
  double hit;
  double per_layer_ms;  // c
};
constexpr Profile k16_50{"16K@50%", 16384, 0.5, 29.87};
constexpr Profile k16_88{"16K@87.5%", 16384, 0.875, 8.80};
constexpr Profile k32_50{"32K@50%", 32768, 0.5, 80.91};
constexpr Profile k32_88{"32K@87.5%", 32768, 0.875, 23.85};
constexpr Profile k64_50{"64K@50%", 65536, 0.5, 271.02};
constexpr Profile k64_88{"64K@87.5%", 65536, 0.875, 75.75};

constexpr uint64_t kKvBytesPerTokenPerLayer = 4096;
constexpr int kPaperLayers = 32;

// r*_i in the paper's units, bytes/s: cached bytes of one layer / c.
double PaperDemand(const Profile& p) {
  const double layer_bytes = p.hit * static_cast<double>(p.context) * kKvBytesPerTokenPerLayer;
  return layer_bytes / (p.per_layer_ms * 1e-3);
}

struct Workload {
  const char* name;
  double paper_cap_gbps;
  std::vector<Profile> requests;
};

std::vector<Workload> Workloads() {
  return {
      // ~91 Gbps of zero-stall demand against 80.
      {"A", 80, {k16_88, k64_88, k16_50, k64_50}},
      // ~73 Gbps against 50.
      {"B", 50, {k32_88, k64_88, k16_50}},
      // six tenants, ~137 Gbps against 50.
      {"C", 50, {k16_50, k16_88, k32_50, k32_88, k64_50, k64_88}},
  };
}

double Ms(Steady::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// Single-thread memcpy throughput of `block` bytes, bytes/s (the emulated data plane's ceiling).
double MeasureCopy(uint64_t block) {
  std::vector<char> a(block, 1);
  std::vector<char> b(block, 0);
  uint64_t moved = 0;
  const Steady::time_point start = Steady::now();
  while (Steady::now() - start < std::chrono::milliseconds(300)) {
    std::memcpy(b.data(), a.data(), block);
    a[moved % block] ^= b[block / 2];
    moved += block;
  }
  return static_cast<double>(moved) / std::chrono::duration<double>(Steady::now() - start).count();
}

struct Scaled {
  std::string profile;
  uint64_t layer_bytes;
  double compute_us;
};

struct Outcome {
  std::string profile;
  uint64_t layer_bytes = 0;
  double compute_us = 0;
  double target_gbps = 0;  // r* (scaled)
  double rate_gbps = 0;    // assigned when layer 0 was dispatched
  double ttft_ms = 0;
  double eq3_ms = 0;  // Equation 3 with X = s / rate
  bool ok = true;
};

class LayerSignal {
 public:
  void Set(int l) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready_ = l;
    }
    cv_.notify_one();
  }
  bool Wait(int l) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(60), [&] { return ready_ >= l || failed_; }) &&
           !failed_;
  }
  void Fail() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      failed_ = true;
    }
    cv_.notify_one();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int ready_ = -1;
  bool failed_ = false;
};

// One run: every request of `reqs` starts at once; `service` null = unthrottled.
std::vector<Outcome> Run(const std::vector<Scaled>& reqs, int layers,
                         oc::storage::kv::PacingService* service) {
  const size_t n = reqs.size();
  std::vector<Outcome> out(n);
  std::vector<std::unique_ptr<oc::storage::kv::RequestPacer>> pacers(n);
  for (size_t i = 0; i < n; ++i) {
    out[i].profile = reqs[i].profile;
    out[i].layer_bytes = reqs[i].layer_bytes;
    out[i].compute_us = reqs[i].compute_us;
    out[i].target_gbps = oc::sched::BytesPerSecToGbps(static_cast<double>(reqs[i].layer_bytes) /
                                                      (reqs[i].compute_us * 1e-6));
  }
  std::vector<std::vector<char>> src(n), dst(n);
  for (size_t i = 0; i < n; ++i) {
    src[i].assign(reqs[i].layer_bytes, static_cast<char>(i + 1));
    dst[i].assign(reqs[i].layer_bytes * static_cast<uint64_t>(layers), 0);
  }
  std::vector<LayerSignal> signals(n);
  const Steady::time_point start = Steady::now();
  if (service != nullptr) {
    for (size_t i = 0; i < n; ++i) {
      oc::sched::RequestSpec spec;
      spec.name = std::to_string(i) + ":" + reqs[i].profile;
      spec.layer_bytes = reqs[i].layer_bytes;
      spec.total_bytes = reqs[i].layer_bytes * static_cast<uint64_t>(layers);
      spec.compute_us = reqs[i].compute_us;
      auto p = service->Admit(spec);
      if (!p.has_value()) {
        std::fprintf(stderr, "admit: %s\n", p.error().ToString().c_str());
        std::exit(1);
      }
      pacers[i] = std::move(*p);
    }
  }
  std::vector<std::thread> threads;
  for (size_t i = 0; i < n; ++i) {
    // Delivery.
    threads.emplace_back([&, i] {
      for (int l = 0; l < layers; ++l) {
        if (pacers[i] != nullptr) {
          if (!pacers[i]->BeforeLayer(static_cast<uint32_t>(l), reqs[i].layer_bytes).ok()) {
            signals[i].Fail();
            return;
          }
          if (l == 0) {
            // The rate that let layer 0 go (under epochs an arrival may be admitted at rate 0
            // and get its share at the next boundary).
            for (const oc::sched::RequestStats& r : service->Stats().requests) {
              if (r.id == pacers[i]->id()) {
                out[i].rate_gbps = oc::sched::BytesPerSecToGbps(r.rate_bytes_per_sec);
              }
            }
          }
        }
        std::memcpy(dst[i].data() + static_cast<uint64_t>(l) * reqs[i].layer_bytes, src[i].data(),
                    reqs[i].layer_bytes);
        signals[i].Set(l);
      }
      pacers[i].reset();  // releases the grant
    });
    // Serving node.
    threads.emplace_back([&, i] {
      const auto c = std::chrono::duration<double, std::micro>(reqs[i].compute_us);
      for (int l = 0; l < layers; ++l) {
        if (!signals[i].Wait(l)) {
          out[i].ok = false;
          return;
        }
        const Steady::time_point until =
            Steady::now() + std::chrono::duration_cast<Steady::duration>(c);
        std::this_thread::sleep_until(until);
      }
      out[i].ttft_ms = Ms(Steady::now() - start);
    });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  for (Outcome& o : out) {
    if (o.rate_gbps > 0) {
      const double x =
          static_cast<double>(o.layer_bytes) / oc::sched::GbpsToBytesPerSec(o.rate_gbps) * 1e3;
      const double c = o.compute_us * 1e-3;
      o.eq3_ms = x + (layers - 1) * std::max(x, c) + c;
    }
  }
  return out;
}

std::string Json(const std::string& s) { return "\"" + s + "\""; }

}  // namespace

int main(int argc, char** argv) {
  bool full = false;
  std::string out_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--full") {
      full = true;
    } else if (a == "--out" && i + 1 < argc) {
      out_path = argv[++i];
    } else {
      std::fprintf(stderr, "usage: ttft_emulator [--full] [--out results.json]\n");
      return 2;
    }
  }
  // Reduced: 8 layers, times / 5, 3 repetitions (about a minute); full: 32 layers, times / 2,
  // 5 repetitions (about a quarter of an hour).
  const int layers = full ? kPaperLayers : 8;
  const double time_scale = full ? 2 : 5;
  const int reps = full ? 5 : 3;

  const double copy = MeasureCopy(1 << 20);
  // The cap this machine's emulated data plane can hold with everything else running: a quarter
  // of one core's memcpy rate (the bench shares 2 cores with the sleeping nodes and the
  // dispatcher, and every run of all requests must stay cap-bound, not CPU-bound).
  const double cap_here = copy / 4;
  std::fprintf(stderr, "memcpy %.2f GB/s on one thread; cap for the 80 Gbps workload %.2f Gbps\n",
               copy / 1e9, oc::sched::BytesPerSecToGbps(cap_here));

  std::ostringstream js;
  js << "{\"mode\": " << Json(full ? "full" : "reduced") << ", \"layers\": " << layers
     << ", \"time_scale\": " << time_scale << ", \"repetitions\": " << reps
     << ", \"memcpy_gbytes_per_s\": " << copy / 1e9 << ", \"workloads\": [";
  bool first_w = true;
  for (const Workload& w : Workloads()) {
    // k: the paper's 80 Gbps maps to cap_here; the 50 Gbps workloads keep their ratio to it.
    const double k = cap_here / oc::sched::GbpsToBytesPerSec(80);
    const double cap = oc::sched::GbpsToBytesPerSec(w.paper_cap_gbps) * k;
    static const oc::sched::SteadyClock steady;
    std::vector<Scaled> reqs;
    double demand = 0;
    for (const Profile& p : w.requests) {
      const double c_us = p.per_layer_ms * 1e3 / time_scale;
      const double r = PaperDemand(p) * k;
      reqs.push_back({p.name, static_cast<uint64_t>(r * c_us * 1e-6), c_us});
      demand += r;
    }
    std::fprintf(stderr,
                 "workload %s: %zu requests, demand %.2f Gbps, cap %.2f Gbps (ratio %.2f)\n",
                 w.name, reqs.size(), oc::sched::BytesPerSecToGbps(demand),
                 oc::sched::BytesPerSecToGbps(cap), demand / cap);
    // Median over repetitions of each request's TTFT.
    auto median_run = [&](const oc::storage::kv::PacingOptions* po) {
      std::vector<std::vector<Outcome>> runs;
      for (int r = 0; r < reps; ++r) {
        std::unique_ptr<oc::storage::kv::PacingService> svc;
        if (po != nullptr) {
          auto s = oc::storage::kv::PacingService::Create(*po, steady, 1);
          if (!s.has_value()) {
            std::fprintf(stderr, "scheduler: %s\n", s.error().ToString().c_str());
            std::exit(1);
          }
          svc = std::move(*s);
          svc->Start();
        }
        runs.push_back(Run(reqs, layers, svc.get()));
      }
      std::vector<Outcome> med = runs[0];
      for (size_t i = 0; i < med.size(); ++i) {
        std::vector<double> t;
        for (const auto& run : runs) {
          t.push_back(run[i].ttft_ms);
          med[i].ok = med[i].ok && run[i].ok;
        }
        std::sort(t.begin(), t.end());
        med[i].ttft_ms = t[t.size() / 2];
      }
      return med;
    };
    // The unthrottled baseline is run before and after the policies (the machine's load drifts);
    // each request's baseline TTFT is the median of both sets.
    const std::vector<Outcome> before = median_run(nullptr);
    std::vector<std::vector<Outcome>> policy_runs;
    for (bool wc : {false, true}) {
      for (Policy policy : oc::sched::kAllPolicies) {
        oc::storage::kv::PacingOptions po;
        po.scheduler.cap_gbps = oc::sched::BytesPerSecToGbps(cap);
        po.scheduler.margin_gbps = 5 * k;
        po.scheduler.policy = policy;
        po.scheduler.work_conserving = wc;
        po.scheduler.epoch = std::chrono::microseconds(static_cast<int64_t>(10'000 / time_scale));
        po.scheduler.drr_quantum_bytes = 256 << 10;
        policy_runs.push_back(median_run(&po));
        std::fprintf(stderr, "  ran %s %s\n", std::string(oc::sched::PolicyName(policy)).c_str(),
                     wc ? "work-conserving" : "epoch");
      }
    }
    const std::vector<Outcome> after = median_run(nullptr);
    std::vector<Outcome> base = before;
    for (size_t i = 0; i < base.size(); ++i) {
      base[i].ttft_ms = (before[i].ttft_ms + after[i].ttft_ms) / 2;
      // Equation 3 with X = s / (this machine's memcpy rate): the unthrottled model.
      const double x = static_cast<double>(base[i].layer_bytes) / copy * 1e3;
      const double c = base[i].compute_us * 1e-3;
      base[i].eq3_ms = x + (layers - 1) * std::max(x, c) + c;
    }
    if (!first_w) js << ", ";
    first_w = false;
    js << "{\"name\": " << Json(w.name) << ", \"paper_cap_gbps\": " << w.paper_cap_gbps
       << ", \"cap_gbps\": " << oc::sched::BytesPerSecToGbps(cap)
       << ", \"demand_gbps\": " << oc::sched::BytesPerSecToGbps(demand)
       << ", \"unthrottled_ttft_ms\": [";
    for (size_t i = 0; i < base.size(); ++i) {
      js << (i ? ", " : "") << base[i].ttft_ms;
    }
    js << "], \"unthrottled_eq3_ms\": [";
    for (size_t i = 0; i < base.size(); ++i) {
      js << (i ? ", " : "") << base[i].eq3_ms;
    }
    js << "], \"runs\": [";
    bool first_r = true;
    size_t run_index = 0;
    for (bool wc : {false, true}) {
      for (Policy policy : oc::sched::kAllPolicies) {
        const std::vector<Outcome>& res = policy_runs[run_index++];
        double sum_added = 0, sum_model = 0;
        double max_added = -std::numeric_limits<double>::infinity();
        if (!first_r) js << ", ";
        first_r = false;
        js << "{\"policy\": " << Json(std::string(oc::sched::PolicyName(policy)))
           << ", \"variant\": " << Json(wc ? "work-conserving" : "epoch") << ", \"requests\": [";
        for (size_t i = 0; i < res.size(); ++i) {
          const double added = res[i].ttft_ms - base[i].ttft_ms;
          const double model_added = res[i].eq3_ms - base[i].eq3_ms;
          sum_added += added;
          sum_model += model_added;
          max_added = std::max(max_added, added);
          js << (i ? ", " : "") << "{\"profile\": " << Json(res[i].profile)
             << ", \"layer_bytes\": " << res[i].layer_bytes
             << ", \"compute_us\": " << res[i].compute_us
             << ", \"zero_stall_gbps\": " << res[i].target_gbps
             << ", \"rate_gbps\": " << res[i].rate_gbps << ", \"ttft_ms\": " << res[i].ttft_ms
             << ", \"eq3_ms\": " << res[i].eq3_ms << ", \"added_ttft_ms\": " << added
             << ", \"eq3_added_ms\": " << model_added
             << ", \"ok\": " << (res[i].ok ? "true" : "false") << "}";
        }
        js << "], \"mean_added_ttft_ms\": " << sum_added / static_cast<double>(res.size())
           << ", \"mean_eq3_added_ms\": " << sum_model / static_cast<double>(res.size())
           << ", \"max_added_ttft_ms\": " << max_added << "}";
        std::fprintf(stderr,
                     "  %-14s %-15s added TTFT mean %7.2f ms, max %7.2f ms; Eq. 3 at the assigned "
                     "rates: mean %7.2f ms\n",
                     std::string(oc::sched::PolicyName(policy)).c_str(),
                     wc ? "work-conserving" : "epoch", sum_added / static_cast<double>(res.size()),
                     max_added, sum_model / static_cast<double>(res.size()));
      }
    }
    js << "]}";
  }
  js << "]}\n";
  if (out_path.empty()) {
    std::fputs(js.str().c_str(), stdout);
  } else {
    std::ofstream(out_path) << js.str();
  }
  return 0;
}
