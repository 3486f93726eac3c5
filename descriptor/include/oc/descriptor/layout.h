#pragma once
// Layout arithmetic of KV chunks (docs/design.md: data model, the descriptor): where layer l of a
// stored chunk object lives, where it lands in the client's target buffer, and how big a
// chunk is for a given model shape (the ObjectCache paper's Equation 1). No manifest is ever
// stored: every offset is computed here, and only here, from (N, L, S, layout, delivery).
//
// ChunkGeometry checks once that N·L·S fits in 64 bits; after that every offset it returns
// is below N·L·S, so the per-slice calls are plain arithmetic. The free functions check
// every multiplication and return kInvalidArgument/kDescriptor naming the descriptor header
// whose value made it overflow.
// Thread safety: pure functions and immutable values.

#include <array>
#include <cstdint>
#include <span>

#include "oc/common/result.h"

namespace oc::descriptor {

// How a stored KV chunk object's bytes are ordered. Values are part of the wire format
// and of stored metadata: never renumber.
enum class StoredLayout : uint8_t {
  kL2TD = 1,  // layer-major: L layers of S bytes; layer l is one range [l*S, (l+1)*S)
  k2LTD = 2,  // LMCache's default: all layers' K, then all layers' V; layer l is two
              // ranges of S/2, K at l*S/2 and V at (L+l)*S/2
};

// The order in which the assembled payload is laid out in the target (or HTTP body).
// Values are part of the wire format: never renumber.
enum class Delivery : uint8_t {
  kLayerMajor = 1,  // layer l of chunk j at (l*N + j)*S: each layer is one contiguous run
  kChunkMajor = 2,  // layer l of chunk j at (j*L + l)*S: each chunk is one contiguous run
};

// Wire names ("kv_l2td", "kv_2ltd", "layer-major", "chunk-major"); see docs/protocol.md.
std::string_view StoredLayoutName(StoredLayout layout);
std::string_view DeliveryName(Delivery delivery);
bool IsKnownLayout(StoredLayout layout);
bool IsKnownDelivery(Delivery delivery);

// One contiguous copy of `length` bytes from `source_offset` in the stored chunk object to
// `slice_offset` within the S-byte layer slice. Within every slice the K half comes first
// (slice_offset 0) and the V half second (slice_offset S/2), whatever the stored layout.
struct SliceCopy {
  uint64_t source_offset = 0;
  uint64_t slice_offset = 0;
  uint64_t length = 0;

  bool operator==(const SliceCopy&) const = default;
};

// The copies that make up one layer slice: one for kL2TD, two (K, V) for k2LTD.
struct LayerSource {
  std::array<SliceCopy, 2> copies{};
  uint32_t count = 0;

  // The copies in use. Views this object: not callable on a temporary.
  std::span<const SliceCopy> view() const& { return {copies.data(), count}; }
  std::span<const SliceCopy> view() const&& = delete;
};

// N chunks of L layers of S bytes in a given stored layout: every offset of the descriptor
// request, checked once at construction.
class ChunkGeometry {
 public:
  // kInvalidArgument/kDescriptor when N, L or S is zero, S is odd under k2LTD, the layout is
  // unknown, or N·L·S overflows 64 bits; the field names the header at fault (none for N,
  // which comes from the key list). Validate() (limits.h) reports all of these first.
  static Result<ChunkGeometry> Make(StoredLayout layout, uint64_t num_chunks, uint32_t num_layers,
                                    uint64_t layer_bytes);

  StoredLayout layout() const { return layout_; }
  uint64_t num_chunks() const { return num_chunks_; }
  uint32_t num_layers() const { return num_layers_; }
  uint64_t layer_bytes() const { return layer_bytes_; }
  uint64_t chunk_bytes() const { return uint64_t{num_layers_} * layer_bytes_; }  // L·S
  uint64_t total_bytes() const { return total_bytes_; }                          // N·L·S

  // Where layer `layer` of one stored chunk object lives.
  // kL2TD: [l·S, (l+1)·S) to slice offset 0.
  // k2LTD: K [l·S/2, (l+1)·S/2) to slice offset 0, V [(L+l)·S/2, (L+l+1)·S/2) to S/2.
  // REQUIRES: layer < num_layers() (checked: a wrong offset would corrupt the target).
  LayerSource Source(uint32_t layer) const;

  // Offset in the target of the slice (layer, chunk): (l·N + j)·S layer-major,
  // (j·L + l)·S chunk-major. Always + S <= total_bytes().
  // REQUIRES: layer < num_layers(), chunk < num_chunks() (checked).
  uint64_t DestinationOffset(Delivery delivery, uint32_t layer, uint64_t chunk) const;

 private:
  ChunkGeometry(StoredLayout layout, uint64_t n, uint32_t l, uint64_t s, uint64_t total)
      : layout_(layout), num_chunks_(n), num_layers_(l), layer_bytes_(s), total_bytes_(total) {}

  StoredLayout layout_;
  uint64_t num_chunks_;
  uint32_t num_layers_;
  uint64_t layer_bytes_;
  uint64_t total_bytes_;
};

// N·L·S, the payload of a descriptor request. kInvalidArgument/kDescriptor, field
// "x-oc-layer-bytes", when it does not fit in 64 bits.
Result<uint64_t> PayloadBytes(uint64_t num_chunks, uint32_t num_layers, uint64_t layer_bytes);

// The shape of a model's KV cache on one tensor-parallel rank.
struct KvShape {
  uint32_t num_kv_heads = 0;  // KV heads held by this rank (n_kv / TP for GQA models)
  uint32_t head_dim = 0;      // d_head
  uint32_t dtype_bytes = 0;   // 2 for fp16/bf16, 1 for fp8
};

// The paper's Equation 1, per token per layer: 2 (K and V) · n_kv · d_head · dtype bytes.
// Llama-3.1-8B (8 KV heads, d_head 128, fp16): 4096 bytes.
// kInvalidArgument if a factor is zero or the product overflows.
Result<uint64_t> KvBytesPerTokenPerLayer(const KvShape& shape);

// S, the bytes of one layer slice of a chunk of `tokens` tokens (G):
// KvBytesPerTokenPerLayer · tokens. Llama-3.1-8B, G = 256: 1 MiB.
Result<uint64_t> LayerSliceBytes(const KvShape& shape, uint64_t tokens);

// Bytes of one whole chunk object, L·S. Llama-3.1-8B (32 layers), G = 256: 32 MiB.
Result<uint64_t> ChunkObjectBytes(const KvShape& shape, uint64_t tokens, uint32_t num_layers);

}  // namespace oc::descriptor
