#pragma once
// The TTFT emulator's vocabulary: the five load paths of experiment 5 (bench/README.md), one
// serving node's request (what it loads and how long each layer computes) and what a run of it
// measured. Plain values.

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "paper_model.h"

namespace oc::bench::ttft {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

// How long a node waits for one layer before it calls the request failed.
constexpr auto kLayerTimeout = std::chrono::seconds(60);

inline double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

enum class Path { kOptLocalLW, kLocalCW, kLocalLW, kS3BatchCW, kS3AggLW };
constexpr Path kAllPaths[] = {Path::kOptLocalLW, Path::kLocalCW, Path::kLocalLW, Path::kS3BatchCW,
                              Path::kS3AggLW};

inline const char* PathName(Path p) {
  switch (p) {
    case Path::kOptLocalLW:
      return "opt-local-LW";
    case Path::kLocalCW:
      return "Local-CW";
    case Path::kLocalLW:
      return "Local-LW";
    case Path::kS3BatchCW:
      return "S3Batch-CW";
    case Path::kS3AggLW:
      return "S3Agg-LW";
  }
  return "?";
}
inline bool Layerwise(Path p) { return p != Path::kLocalCW && p != Path::kS3BatchCW; }

struct Request {
  std::string label;
  uint64_t g = 0;
  int layers = 0;
  uint64_t chunks = 0;  // M (= N: every named chunk is present)
  double compute_us = 0;
  uint64_t layer_bytes() const { return chunks * g * kTokenLayerBytes; }
  uint64_t payload() const { return layer_bytes() * static_cast<uint64_t>(layers); }
};

struct Measured {
  bool ok = true;
  std::string error;
  double ttft_ms = 0;
  double last_layer_ms = 0;  // the last layer's notification, from the start
  double admitted_gbps = 0;  // KvGetReport::assigned_rate_gbps
  // The scheduler's rate for it when each layer landed (paced runs only).
  std::vector<double> layer_rates_gbps;
  // Per layer, ms from the start: when it landed (the layer-ready notification on the client's
  // progress thread, or the local loader's signal), when the node's thread woke with it, and the
  // end of its emulated compute (node.h).
  std::vector<double> landed_ms, woke_ms, compute_end_ms;
};

}  // namespace oc::bench::ttft
