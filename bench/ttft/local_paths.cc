#include "local_paths.h"

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "node.h"

namespace oc::bench::ttft {
namespace {

// Layer-ready signals of the local paths, with the time each layer was signalled.
class LayerSignal {
 public:
  explicit LayerSignal(int layers) : at_(static_cast<size_t>(layers)) {}
  // Layers up to l are ready now.
  void Set(int l) {
    const Clock::time_point now = Clock::now();
    {
      std::lock_guard<std::mutex> lock(mu_);
      while (ready_ < l) at_[static_cast<size_t>(++ready_)] = now;
    }
    cv_.notify_all();
  }
  // When layer l was signalled; nullopt on timeout.
  std::optional<Clock::time_point> Wait(int l) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, kLayerTimeout, [&] { return ready_ >= l; })) return std::nullopt;
    return at_[static_cast<size_t>(l)];
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int ready_ = -1;
  std::vector<Clock::time_point> at_;
};

}  // namespace

Measured RunLocal(Path p, const Request& r, LocalKv& kv, double link_cap) {
  Measured m;
  LayerSignal signal(r.layers);
  const uint64_t s = r.layer_bytes();
  const uint64_t slice = r.g * kTokenLayerBytes;
  const uint64_t chunk = slice * static_cast<uint64_t>(r.layers);
  const Clock::time_point start = Clock::now();
  std::thread loader([&] {
    switch (p) {
      case Path::kOptLocalLW:
        for (int l = 0; l < r.layers; ++l) {
          std::memcpy(kv.dst.data() + l * s, kv.layer_major.data() + l * s, s);
          signal.Set(l);
        }
        break;
      case Path::kLocalLW:
        for (int l = 0; l < r.layers; ++l) {
          for (uint64_t j = 0; j < r.chunks; ++j) {
            std::memcpy(kv.dst.data() + l * s + j * slice,
                        kv.chunk_major.data() + j * chunk + l * slice, slice);
          }
          signal.Set(l);
        }
        break;
      default:  // Local-CW: whole chunks, then every layer at once
        for (uint64_t j = 0; j < r.chunks; ++j) {
          std::memcpy(kv.dst.data() + j * chunk, kv.chunk_major.data() + j * chunk, chunk);
        }
        signal.Set(r.layers - 1);
        break;
    }
  });
  if (!NodeLoop(
          r, Layerwise(p), link_cap, start, [&](int l) { return signal.Wait(l); }, [](int) {},
          &m)) {
    m.ok = false;
    m.error = "local layer wait timed out";
  }
  loader.join();
  return m;
}

}  // namespace oc::bench::ttft
