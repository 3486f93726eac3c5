#pragma once
// A serving node's side of one request, shared by the store paths (world.h) and the local paths
// (local_paths.h): wait for each layer, hold it back behind an emulated link if there is one,
// then "compute" it by sleeping, so compute does not take the 2 cores from the data plane. TTFT
// is when the last layer's compute ends: Equation 3's overlap happens for real.

#include <algorithm>
#include <chrono>
#include <thread>

#include "request.h"

namespace oc::bench::ttft {

// Waits for layer l (`wait_layer`), holds it back behind an emulated link of `link_cap` bytes/s
// (0: none), calls on_layer(l), computes it for c. Returns false on failure.
template <typename WaitLayer, typename OnLayer>
bool NodeLoop(const Request& r, bool layerwise, double link_cap, Clock::time_point start,
              WaitLayer wait_layer, OnLayer on_layer, Measured* m) {
  const auto c = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double, std::micro>(r.compute_us));
  // The emulated GPU's schedule: layer l computes from max(it landed, layer l-1 done) for c.
  // Sleeping until that absolute end, not for c, keeps a late wake-up of this thread (a loaded
  // machine) from adding to every later layer: it delays only what it really delays.
  Clock::time_point compute_end = start;
  for (int l = 0; l < r.layers; ++l) {
    if (!wait_layer(l)) return false;
    Clock::time_point landed = Clock::now();
    m->last_layer_ms = Ms(landed - start);
    if (link_cap > 0) {
      const double cum = layerwise ? static_cast<double>(r.layer_bytes()) * (l + 1)
                                   : static_cast<double>(r.payload());
      const Clock::time_point through_link =
          start + std::chrono::duration_cast<Clock::duration>(
                      std::chrono::duration<double>(cum / link_cap));
      std::this_thread::sleep_until(through_link);
      landed = std::max(landed, through_link);
      m->last_layer_ms = Ms(landed - start);
    }
    on_layer(l);
    compute_end = std::max(landed, compute_end) + c;
    if (r.compute_us > 0) std::this_thread::sleep_until(compute_end);
  }
  m->ttft_ms = Ms(Clock::now() - start);
  return true;
}

}  // namespace oc::bench::ttft
