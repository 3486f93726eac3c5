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
};

Size SmallestSize();
Size ReducedSize();
Size FullSize();

// Workloads of issue 6 (Table A8 profiles; the paper's exact mixes are not in ../shared).
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
