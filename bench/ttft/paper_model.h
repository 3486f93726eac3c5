#pragma once
// The paper's model, as the TTFT emulator uses it: Table A8 of the ObjectCache paper
// (Llama-3.1-8B on an A100; bench/data/objectcache-table-a8.csv is the one copy of its figures,
// read at startup) for per-layer compute, and Equation 3 for the TTFT of a layerwise or chunkwise
// load overlapped with compute. Pure values and functions; thread-safe.

#include <cstdint>
#include <string>
#include <vector>

#include "oc/common/result.h"

namespace oc::bench::ttft {

constexpr uint64_t kTokenLayerBytes = 4096;       // Llama-3.1-8B: 8 KV heads x 128 x K,V x fp16
constexpr double kPaperLinkBytesPerSec = 12.5e9;  // 100 Gbps
constexpr int kPaperLayers = 32;

struct A8Row {
  uint64_t context;
  double hit;
  double total_ms;  // prefill compute of the uncached tokens, all 32 layers
};

// Reads the rows of Table A8 from a CSV file: lines starting with '#' are comments, the first
// other line names the columns, of which context_tokens, hit_rate and total_compute_ms are used.
// kIOError if the file cannot be opened; kInvalidArgument (naming the file and line) for a
// missing column, a malformed number or an empty table.
Result<std::vector<A8Row>> LoadTableA8(const std::string& path);

// Per-layer compute, ms, at a context and hit rate. Rows of Table A8 exactly; other hit rates
// (12.5%) by the line through the context's two rows in uncached tokens (each uncached token
// attends to about the whole context at a fixed context). 0 if the context has no two rows.
double PaperComputeMsPerLayer(const std::vector<A8Row>& table, uint64_t context, double hit);

// Equation 3 with a constant per-layer transfer x and compute c (ms); chunkwise: everything
// arrives before compute starts.
double Eq3(bool layerwise, int layers, double x, double c);

}  // namespace oc::bench::ttft
