#pragma once
// The TTFT emulator's experiments (issue 6's benchmark, issue 7's experiments 5-8;
// bench/README.md has the flags, the JSON and the scaling rule). Calibrate() measures memcpy and
// every path's rate first; E2e() (exp. 5) times each path at each context, hit rate and G;
// Bandwidth() (exp. 6) caps each path at 10% of its rate; Sched() (exp. 7, sched_experiment.cc)
// runs the scheduling workloads under every policy; each adds Equation 3's prediction to the
// model rows (exp. 8). Each experiment returns its JSON object; progress goes to stderr.
//
// Scaling (recorded in the JSON): the data plane's rate R here stands for the paper's 100 Gbps
// link, k = R / 12.5 GB/s. A request keeps the paper's bytes per layer to compute per layer ratio
// times k: its KV is context·hit/φ tokens at 4 KiB per token per layer (φ: context scale), its
// per-layer compute c_paper/(φ·k). Layers are reduced to L (32 in --full).
// Not thread-safe: one thread drives an Emulator.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "paper_model.h"
#include "request.h"
#include "sizes.h"
#include "world.h"

namespace oc::bench::ttft {

class Emulator {
 public:
  // `table_a8`: the paper's Table A8 (LoadTableA8), the source of every compute window.
  Emulator(World& world, Size size, std::vector<A8Row> table_a8);

  // false once any request failed.
  bool ok() const { return ok_; }

  // Single-thread memcpy rate and each path's rate with no compute, at 4K@87.5% and G = 64
  // (or the smallest size's configuration).
  Status Calibrate(Json* machine);

  Json Scaling() const;

  Status E2e(Json* out);
  Status Bandwidth(Json* out);
  Status Sched(Json* out);
  // The calibration margin δ from a rate sweep of one request (delta_experiment.cc). Run before
  // Sched, cal-stall-opt then uses the δ measured (else the paper's 5 Gbps).
  Status Delta(Json* out);

  Json ModelRows() const { return model_rows_; }

 private:
  Request E2eRequest(uint64_t context, double hit, uint64_t g) const;
  Measured RunPath(Path p, const Request& r, double link_cap);
  // Median TTFT over the repetitions (the whole Measured of the median run).
  Measured RunMedian(Path p, const Request& r, double link_cap);
  double PredictMs(Path p, const Request& r, double rate) const;
  // One untimed run of `reqs` through `engine`: its data plane attaches the nodes' target buffers
  // and fills its page tables for them, once per engine, as a long-running server does
  // (docs/decisions/ttft-one-target-buffer.md).
  void WarmUp(storage::kv::KvEngine& engine, const std::vector<Request>& reqs);
  void AddModelRow(const std::string& experiment, const std::string& config, double measured,
                   double predicted);

  World& w_;
  const Size size_;
  const std::vector<A8Row> table_a8_;
  bool ok_ = true;
  double memcpy_ = 0;
  double rate_ = 0;  // S3Agg-LW bytes/s
  double k_ = 0;
  // The scheduling runs' scale: rates here = paper rates x sched_k (Size::sched_link_gbytes).
  double SchedK() const;
  std::map<Path, double> path_rate_;
  double measured_delta_paper_gbps_ = -1;  // < 0: Delta has not run
  std::map<std::pair<std::string, std::string>, double> e2e_;
  Json model_rows_ = Json::array();
};

}  // namespace oc::bench::ttft
