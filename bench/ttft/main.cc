// ttft_emulator: time to first token of emulated serving nodes fed by the real product (issue 6's
// benchmark; issue 7's experiments 5-8). bench/README.md documents the flags and the JSON.
//
// The parts, one idea each: paper_model.h (Table A8, read from bench/data/, and Equation 3),
// sizes.h (what --smallest/--reduced/--full cover, the scheduling workloads), request.h (paths,
// requests, measurements), node.h (a serving node: wait, emulated link, compute by sleeping),
// world.h (the store, KV engines, UCX data plane and clients), local_paths.h (KV already in
// memory), emulator.h (calibration and experiments 5-8). This file parses the flags, runs the
// experiments asked for and writes the JSON.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "emulator.h"
#include "paper_model.h"
#include "request.h"
#include "sizes.h"
#include "world.h"

#ifndef OC_TTFT_TABLE_A8
#error "OC_TTFT_TABLE_A8 (bench/data/objectcache-table-a8.csv) is set by bench/CMakeLists.txt"
#endif

namespace {

using namespace oc;               // NOLINT: a benchmark's main file
using namespace oc::bench::ttft;  // NOLINT

std::vector<double> LoadAverage() {
  std::ifstream f("/proc/loadavg");
  double a = 0, b = 0, c = 0;
  f >> a >> b >> c;
  return {a, b, c};
}

int Usage() {
  std::fprintf(stderr,
               "usage: ttft_emulator [--smallest | --reduced | --full] [--experiments LIST] "
               "[--reps N] [--out FILE] [--table-a8 CSV]\n"
               "  [--sched-workloads LIST] [--sched-policies LIST] [--sched-variants LIST]\n"
               "  [--sched-link-gbytes X] (exp. 7 and delta: the paper's 100 Gbps is X GB/s;\n"
               "  default half the calibrated data-plane rate)\n"
               "  [--sched-part-bytes N] (exp. 7 and delta: layers are paced in parts of N\n"
               "  bytes, 1 KiB to 64 MiB; default 32768)\n"
               "  [--sched-quantum-bytes N] (the same: the DRR quantum, 1 KiB to 64 MiB;\n"
               "  default one part)\n"
               "  (exp. 7 subsets, e.g. C / equal,cal-stall-opt / admission; default all)\n"
               "  LIST: comma list of e2e, bandwidth, sched, delta, model (default all)\n"
               "  CSV: the paper's Table A8 (default " OC_TTFT_TABLE_A8 ")\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Size size = ReducedSize();
  std::set<std::string> experiments = {"e2e", "bandwidth", "sched", "delta", "model"};
  std::string out_path;
  std::string table_path = OC_TTFT_TABLE_A8;
  int reps = 0;
  double sched_link = 0;
  uint64_t sched_part = 0;
  uint64_t sched_quantum = 0;
  std::vector<std::string> sched_policies, sched_variants, sched_workloads;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--smallest") {
      size = SmallestSize();
    } else if (a == "--reduced") {
      size = ReducedSize();
    } else if (a == "--full") {
      size = FullSize();
    } else if (a == "--out" && i + 1 < argc) {
      out_path = argv[++i];
    } else if ((a == "--sched-policies" || a == "--sched-variants" || a == "--sched-workloads") &&
               i + 1 < argc) {
      std::vector<std::string> list;
      std::stringstream ss(argv[++i]);
      for (std::string e; std::getline(ss, e, ',');) list.push_back(e);
      (a == "--sched-policies"   ? sched_policies
       : a == "--sched-variants" ? sched_variants
                                 : sched_workloads) = list;
    } else if (a == "--sched-link-gbytes" && i + 1 < argc) {
      sched_link = std::atof(argv[++i]);
      if (!(sched_link > 0 && sched_link < 1000)) return Usage();
    } else if (a == "--sched-part-bytes" && i + 1 < argc) {
      const long long v = std::atoll(argv[++i]);
      if (v < 1024 || v > (64ll << 20)) return Usage();
      sched_part = static_cast<uint64_t>(v);
    } else if (a == "--sched-quantum-bytes" && i + 1 < argc) {
      const long long v = std::atoll(argv[++i]);
      if (v < 1024 || v > (64ll << 20)) return Usage();
      sched_quantum = static_cast<uint64_t>(v);
    } else if (a == "--table-a8" && i + 1 < argc) {
      table_path = argv[++i];
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
      if (reps < 1 || reps > 100) return Usage();
    } else if (a == "--experiments" && i + 1 < argc) {
      experiments.clear();
      std::stringstream ss(argv[++i]);
      std::string e;
      while (std::getline(ss, e, ',')) {
        if (e != "e2e" && e != "bandwidth" && e != "sched" && e != "delta" && e != "model") {
          return Usage();
        }
        experiments.insert(e);
      }
    } else {
      return Usage();
    }
  }
  size.sched_policies = sched_policies;
  if (!sched_workloads.empty()) size.sched_workloads = sched_workloads;
  size.sched_variants = sched_variants;
  size.sched_link_gbytes = sched_link;
  if (sched_part > 0) size.sched_part_bytes = sched_part;
  size.sched_quantum_bytes = sched_quantum;
  if (reps > 0) {
    size.reps = reps;
    size.sched_reps = reps;
  }
  Result<std::vector<A8Row>> table = LoadTableA8(table_path);
  if (!table.has_value()) {
    std::fprintf(stderr, "ttft_emulator: %s\n", table.error().ToString().c_str());
    return 2;
  }
  Json out;
  out["mode"] = size.name;
  out["experiments"] = Json::array();
  for (const char* e : {"e2e", "bandwidth", "sched", "delta", "model"}) {
    if (experiments.count(e)) out["experiments"].push_back(e);
  }
  Json machine;
  machine["load_average_start"] = LoadAverage();
  machine["cores"] = std::thread::hardware_concurrency();
  const Clock::time_point t0 = Clock::now();

  World world;
  bool ok = true;
  Status st = world.Open();
  Emulator emu(world, size, std::move(*table));
  if (st.ok()) st = emu.Calibrate(&machine);
  if (st.ok()) out["scaling"] = emu.Scaling();
  if (st.ok() && experiments.count("e2e")) {
    Json e;
    st = emu.E2e(&e);
    out["e2e"] = e;
  }
  if (st.ok() && experiments.count("bandwidth")) {
    Json e;
    st = emu.Bandwidth(&e);
    out["bandwidth"] = e;
  }
  if (st.ok() && experiments.count("delta")) {
    Json e;
    st = emu.Delta(&e);
    out["delta"] = e;
  }
  if (st.ok() && experiments.count("sched")) {
    Json e;
    st = emu.Sched(&e);
    out["sched"] = e;
  }
  if (st.ok() && experiments.count("model")) {
    out["model"] = {{"rows", emu.ModelRows()}};
  }
  world.Close();
  if (!st.ok()) {
    std::fprintf(stderr, "ttft_emulator: %s\n", st.ToString().c_str());
    out["error"] = st.ToString();
    ok = false;
  }
  ok = ok && emu.ok();
  machine["load_average_end"] = LoadAverage();
  machine["wall_s"] = std::chrono::duration<double>(Clock::now() - t0).count();
  out["machine"] = machine;
  out["ok"] = ok;
  const std::string text = out.dump(1) + "\n";
  if (out_path.empty()) {
    std::fputs(text.c_str(), stdout);
  } else {
    std::ofstream(out_path) << text;
  }
  return ok ? 0 : 1;
}
