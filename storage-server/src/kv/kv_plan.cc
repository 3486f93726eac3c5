// Planning of descriptor requests (kv_engine.h): storage-side descriptor checks, the batch
// HEAD, the matched prefix and its shape checks.

#include <algorithm>
#include <limits>
#include <string>
#include <string_view>

#include <fmt/core.h>

#include "kv/kv_engine.h"
#include "oc/descriptor/limits.h"

namespace oc::storage::kv {
namespace {

Status ShapeError(std::string field, std::string message) {
  return Status(Code::kInvalidArgument, Subject::kDescriptor, std::move(field), std::move(message));
}

// The storage server re-checks structure only: size limits are the gateway's policy.
descriptor::Limits StructuralLimits() {
  descriptor::Limits lim;
  lim.max_chunks = std::numeric_limits<uint64_t>::max();
  lim.max_layers = std::numeric_limits<uint32_t>::max();
  lim.max_chunk_tokens = std::numeric_limits<uint32_t>::max();
  lim.max_layer_bytes = std::numeric_limits<uint64_t>::max();
  lim.max_total_bytes = std::numeric_limits<uint64_t>::max();
  lim.max_compute_window_us = std::numeric_limits<uint64_t>::max();
  return lim;
}

}  // namespace

Status CheckDescriptor(const descriptor::Descriptor& d) {
  static const descriptor::Limits kLimits = StructuralLimits();
  return descriptor::Validate(d, kLimits);
}

Result<PlanResult> PlanRequest(SliceSource& source, std::string_view bucket,
                               const descriptor::Descriptor& d, uint64_t threshold) {
  OC_RETURN_IF_ERROR(CheckDescriptor(d));
  const uint64_t n = d.num_chunks();
  std::vector<std::string> names;
  names.reserve(n);
  for (uint64_t j = 0; j < n; ++j) {
    names.push_back(d.ObjectName(j));
  }
  OC_ASSIGN_OR_RETURN(std::vector<std::optional<ObjectMeta>> metas, source.HeadMany(bucket, names));
  if (metas.size() != n) {
    return Status::Internal("HeadMany answered a wrong number of names");
  }
  const uint64_t chunk_bytes = uint64_t{d.num_layers} * d.layer_bytes;  // < N·L·S, checked
  PlanResult out;
  out.sizes.reserve(n);
  uint64_t matched = 0;
  bool prefix = true;
  for (uint64_t j = 0; j < n; ++j) {
    const std::optional<ObjectMeta>& m = metas[j];
    out.sizes.push_back(m.has_value() ? std::optional<uint64_t>(m->size) : std::nullopt);
    if (!m.has_value()) {
      prefix = false;
    }
    if (!prefix) {
      continue;
    }
    // A present chunk of the prefix must have the shape the descriptor names: a mismatch is
    // a client error, never a silent partial hit.
    if (m->chunk.has_value()) {
      const ChunkShape& shape = *m->chunk;
      if (shape.layout != d.layout) {
        return ShapeError("x-oc-layout", fmt::format("chunk {} ({}) is stored as {}", j, names[j],
                                                     descriptor::StoredLayoutName(shape.layout)));
      }
      if (shape.num_layers != d.num_layers) {
        return ShapeError("x-oc-num-layers", fmt::format("chunk {} ({}) is stored with {} layers",
                                                         j, names[j], shape.num_layers));
      }
      if (shape.layer_bytes != d.layer_bytes) {
        return ShapeError("x-oc-layer-bytes",
                          fmt::format("chunk {} ({}) is stored with {} bytes per layer", j,
                                      names[j], shape.layer_bytes));
      }
    }
    if (m->size != chunk_bytes) {
      return ShapeError("x-oc-layer-bytes",
                        fmt::format("chunk {} ({}) has {} bytes, not num-layers x layer-bytes "
                                    "= {}",
                                    j, names[j], m->size, chunk_bytes));
    }
    ++matched;
  }
  names.resize(matched);
  out.names = std::move(names);
  out.plan.num_chunks = n;
  out.plan.matched = matched;
  out.plan.payload_bytes = matched * chunk_bytes;  // <= N·L·S
  out.plan.mode = (matched > 0 && out.plan.payload_bytes >= threshold)
                      ? descriptor::ServeMode::kLayerwise
                      : descriptor::ServeMode::kChunkwise;
  out.plan.request_id = d.request_id;
  return out;
}

}  // namespace oc::storage::kv
