#pragma once
// What each run size of the TTFT emulator covers (--smallest, --reduced, --full; bench/README.md)
// and the scheduling workloads of experiment 7. Plain values.

#include <cstdint>
#include <string>
#include <vector>

namespace oc::bench::ttft {

struct Size {
  const char* name;
  int e2e_layers;
  std::vector<uint64_t> contexts;  // paper contexts of exp. 5/6
  std::vector<double> hits;
  std::vector<uint64_t> gs;
  uint64_t phi_64k;  // context scale of the 64K context
  uint64_t bw_g;
  std::vector<double> bw_hits;
  int reps;
  int sched_layers;
  uint64_t sched_phi;
  uint64_t sched_g;
  std::vector<std::string> sched_workloads;
  int sched_reps;
  // Only these policies / ways of sharing in exp. 7 (--sched-policies, --sched-variants); empty:
  // all.
  std::vector<std::string> sched_policies = {};
  std::vector<std::string> sched_variants = {};
  // What the paper's 100 Gbps link is in the scheduling runs (exp. 7 and the delta sweep), GB/s
  // (--sched-link-gbytes); 0: half the data-plane rate calibrated in the run. A fixed value keeps
  // the time scale (compute per layer, per-layer transfer) from following a noisy calibration:
  // with reused target buffers S3Agg-LW calibrates at 1.8-7.3 GB/s on this machine, and at 7.3
  // a 16K@87.5% request computes 0.24 ms per layer, below what 2 loaded cores can time.
  double sched_link_gbytes = 0;
  // Parts a layer is paced in (SchedulerOptions::pace_part_bytes) in exp. 7 and the delta sweep
  // (--sched-part-bytes); the DRR quantum is set to the same, so a flow's visit is one part. The
  // product's 1 MiB at 100 Gbps waits 84 µs behind another request's part; here 32 KiB at the
  // scaled link (0.3 GB/s for the paper's 100 Gbps) is ~110 µs, against 2.9-25 ms of compute per
  // layer. A smaller part means more dispatches than two loaded cores wake up for on time.
  uint64_t sched_part_bytes = uint64_t{32} << 10;
  // The DRR quantum in parts mode (--sched-quantum-bytes); 0: one part, as above.
  uint64_t sched_quantum_bytes = 0;
};

Size SmallestSize();
Size ReducedSize();
Size FullSize();

// The paper's scheduling workloads: A = four requests (16K and 64K contexts at 50% and 87.5%
// hits) under 80 Gbps, B = the same four under 50 Gbps, C = six (16K, 32K, 64K at 50% and
// 87.5%) under 50 Gbps. Profiles are Table A8 rows.
struct Profile {
  uint64_t context;
  double hit;
};
struct Workload {
  const char* name;
  double paper_cap_gbps;
  std::vector<Profile> profiles;
};
std::vector<Workload> Workloads();

}  // namespace oc::bench::ttft
