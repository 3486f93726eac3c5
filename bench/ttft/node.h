#pragma once
// A serving node's side of one request, shared by the store paths (world.h) and the local paths
// (local_paths.h): wait for each layer, hold it back behind an emulated link if there is one,
// then "compute" it by sleeping, so compute does not take the 2 cores from the data plane. TTFT
// is when the last layer's compute ends: Equation 3's overlap happens for real.

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "request.h"

namespace oc::bench::ttft {

// Waits for layer l (`wait_layer`: the time the layer landed, as its producer saw it, or nullopt on
// failure), holds it back behind an emulated link of `link_cap` bytes/s (0: none), calls
// on_layer(l), computes it for c. Returns false on failure.
//
// The emulated GPU's schedule: layer l computes from the time it could start for c, and that time
// is computed, not read off this thread's clock after a sleep. A layer that landed while layer l-1
// was computing starts when l-1 ends (a GPU has it queued); waking up late from that sleep is this
// emulator's cost, not the system's, and on a loaded 2-core machine it was 0.1-2 ms per layer,
// 32 times per request (docs/decisions/ttft-compute-schedule.md). A layer this thread was already
// waiting for starts when the notification woke it: that wake-up is the system's. Sleeping until an
// absolute end keeps a late wake-up from adding to every later layer.
template <typename WaitLayer, typename OnLayer>
bool NodeLoop(const Request& r, bool layerwise, double link_cap, Clock::time_point start,
              WaitLayer wait_layer, OnLayer on_layer, Measured* m) {
  const auto c = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double, std::micro>(r.compute_us));
  Clock::time_point compute_end = start;
  for (int l = 0; l < r.layers; ++l) {
    const Clock::time_point asked = Clock::now();
    const std::optional<Clock::time_point> landed = wait_layer(l);
    if (!landed.has_value()) return false;
    const Clock::time_point woke = Clock::now();
    m->landed_ms.push_back(Ms(*landed - start));
    m->woke_ms.push_back(Ms(woke - start));
    // Waited for the notification: compute starts when it woke this thread.
    Clock::time_point ready = *landed > asked ? woke : std::max(*landed, compute_end);
    Clock::time_point visible = *landed;
    if (link_cap > 0) {
      const double cum = layerwise ? static_cast<double>(r.layer_bytes()) * (l + 1)
                                   : static_cast<double>(r.payload());
      visible = std::max(visible, start + std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double>(cum / link_cap)));
      ready = std::max(ready, visible);
    }
    m->last_layer_ms = Ms(visible - start);
    on_layer(l);
    compute_end = ready + c;
    m->compute_end_ms.push_back(Ms(compute_end - start));
    std::this_thread::sleep_until(compute_end);
  }
  m->ttft_ms = Ms(compute_end - start);
  return true;
}

}  // namespace oc::bench::ttft
