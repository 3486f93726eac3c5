#include "sizes.h"

namespace oc::bench::ttft {

Size SmallestSize() {
  return {"smallest", 2, {4096}, {0.5}, {64}, 16, 64, {0.5}, 1, 2, 128, 16, {"B"}, 1};
}
Size ReducedSize() {
  return {"reduced",
          4,
          {4096, 65536},
          {0.125, 0.5, 0.875},
          {16, 64, 256},
          16,
          64,
          {0.5, 0.875},
          1,
          32,
          128,
          16,
          {"A", "B", "C"},
          3};
}
Size FullSize() {
  return {"full",
          32,
          {4096, 65536},
          {0.125, 0.5, 0.875},
          {16, 64, 256},
          32,
          64,
          {0.125, 0.5, 0.875},
          1,
          32,
          32,
          16,
          {"A", "B", "C"},
          3};
}

std::vector<Workload> Workloads() {
  // The paper's scheduling workloads (its Tables A9-A12; bench/data/objectcache-table-a9.csv).
  const std::vector<Profile> four = {{16384, 0.5}, {16384, 0.875}, {65536, 0.5}, {65536, 0.875}};
  return {
      {"A", 80, four},  // demand 91 Gbps
      {"B", 50, four},  // A's four requests under a 50 Gbps cap
      {"C",
       50,
       {{16384, 0.5},
        {16384, 0.875},
        {32768, 0.5},
        {32768, 0.875},
        {65536, 0.5},
        {65536, 0.875}}},  // six requests, 137 Gbps
  };
}

}  // namespace oc::bench::ttft
