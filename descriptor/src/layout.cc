#include "oc/descriptor/layout.h"

#include <fmt/core.h>

#include "oc/common/check.h"

namespace oc::descriptor {
namespace {

Status Invalid(std::string_view field, std::string message) {
  return Status(Code::kInvalidArgument, Subject::kDescriptor, std::string(field),
                std::move(message));
}

}  // namespace

std::string_view StoredLayoutName(StoredLayout layout) {
  switch (layout) {
    case StoredLayout::kL2TD:
      return "kv_l2td";
    case StoredLayout::k2LTD:
      return "kv_2ltd";
  }
  return "unknown";
}

std::string_view DeliveryName(Delivery delivery) {
  switch (delivery) {
    case Delivery::kLayerMajor:
      return "layer-major";
    case Delivery::kChunkMajor:
      return "chunk-major";
  }
  return "unknown";
}

bool IsKnownLayout(StoredLayout layout) {
  return layout == StoredLayout::kL2TD || layout == StoredLayout::k2LTD;
}

bool IsKnownDelivery(Delivery delivery) {
  return delivery == Delivery::kLayerMajor || delivery == Delivery::kChunkMajor;
}

Result<uint64_t> PayloadBytes(uint64_t num_chunks, uint32_t num_layers, uint64_t layer_bytes) {
  uint64_t chunk_bytes = 0;
  uint64_t total = 0;
  if (__builtin_mul_overflow(uint64_t{num_layers}, layer_bytes, &chunk_bytes) ||
      __builtin_mul_overflow(num_chunks, chunk_bytes, &total)) {
    return Invalid("x-oc-layer-bytes",
                   fmt::format("chunks x layers x layer bytes ({} x {} x {}) overflows 64 bits",
                               num_chunks, num_layers, layer_bytes));
  }
  return total;
}

Result<ChunkGeometry> ChunkGeometry::Make(StoredLayout layout, uint64_t num_chunks,
                                          uint32_t num_layers, uint64_t layer_bytes) {
  if (!IsKnownLayout(layout)) {
    return Invalid("x-oc-layout", "unknown stored layout");
  }
  if (num_chunks == 0) {
    return Invalid("", "no chunks");
  }
  if (num_layers == 0) {
    return Invalid("x-oc-num-layers", "must be at least 1");
  }
  if (layer_bytes == 0) {
    return Invalid("x-oc-layer-bytes", "must be at least 1");
  }
  if (layout == StoredLayout::k2LTD && layer_bytes % 2 != 0) {
    return Invalid("x-oc-layer-bytes", "must be even for kv_2ltd (equal K and V halves)");
  }
  OC_ASSIGN_OR_RETURN(const uint64_t total, PayloadBytes(num_chunks, num_layers, layer_bytes));
  return ChunkGeometry(layout, num_chunks, num_layers, layer_bytes, total);
}

LayerSource ChunkGeometry::Source(uint32_t layer) const {
  OC_CHECK(layer < num_layers_);
  LayerSource out;
  // Every product below is at most L·S <= N·L·S, which Make() proved fits in 64 bits.
  if (layout_ == StoredLayout::kL2TD) {
    out.copies[0] = {uint64_t{layer} * layer_bytes_, 0, layer_bytes_};
    out.count = 1;
    return out;
  }
  const uint64_t half = layer_bytes_ / 2;
  out.copies[0] = {uint64_t{layer} * half, 0, half};
  out.copies[1] = {(uint64_t{num_layers_} + layer) * half, half, half};
  out.count = 2;
  return out;
}

uint64_t ChunkGeometry::DestinationOffset(Delivery delivery, uint32_t layer, uint64_t chunk) const {
  OC_CHECK(layer < num_layers_ && chunk < num_chunks_ && IsKnownDelivery(delivery));
  // (l·N + j) < L·N and (j·L + l) < N·L, so neither the index nor index·S can overflow.
  const uint64_t index = delivery == Delivery::kLayerMajor ? uint64_t{layer} * num_chunks_ + chunk
                                                           : chunk * num_layers_ + layer;
  return index * layer_bytes_;
}

Result<uint64_t> KvBytesPerTokenPerLayer(const KvShape& shape) {
  if (shape.num_kv_heads == 0 || shape.head_dim == 0 || shape.dtype_bytes == 0) {
    return Invalid("", "KV shape has a zero factor (heads, head dim or dtype bytes)");
  }
  // 2 · n_kv · d_head · dtype: three 32-bit factors and a 2 fit in 64 bits only if checked.
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(uint64_t{2} * shape.num_kv_heads, uint64_t{shape.head_dim}, &bytes) ||
      __builtin_mul_overflow(bytes, uint64_t{shape.dtype_bytes}, &bytes)) {
    return Invalid("", "KV bytes per token overflow 64 bits");
  }
  return bytes;
}

Result<uint64_t> LayerSliceBytes(const KvShape& shape, uint64_t tokens) {
  OC_ASSIGN_OR_RETURN(const uint64_t per_token, KvBytesPerTokenPerLayer(shape));
  uint64_t bytes = 0;
  if (tokens == 0) {
    return Invalid("x-oc-chunk-tokens", "must be at least 1");
  }
  if (__builtin_mul_overflow(per_token, tokens, &bytes)) {
    return Invalid("x-oc-chunk-tokens", "layer slice bytes overflow 64 bits");
  }
  return bytes;
}

Result<uint64_t> ChunkObjectBytes(const KvShape& shape, uint64_t tokens, uint32_t num_layers) {
  OC_ASSIGN_OR_RETURN(const uint64_t slice, LayerSliceBytes(shape, tokens));
  uint64_t bytes = 0;
  if (num_layers == 0) {
    return Invalid("x-oc-num-layers", "must be at least 1");
  }
  if (__builtin_mul_overflow(slice, uint64_t{num_layers}, &bytes)) {
    return Invalid("x-oc-num-layers", "chunk bytes overflow 64 bits");
  }
  return bytes;
}

}  // namespace oc::descriptor
