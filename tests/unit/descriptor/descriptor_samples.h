#pragma once
// Sample descriptors shared by the descriptor tests.

#include <string>

#include "oc/descriptor/descriptor.h"

namespace oc::descriptor::samples {

inline ChunkHash HashOf(uint64_t i) {
  ChunkHash h{};
  for (size_t b = 0; b < h.size(); ++b) {
    h[b] = static_cast<std::byte>((i * 131 + b * 17) & 0xff);
  }
  return h;
}

// N compact keys under "kv/llama3-8b/", L = 32, G = 256, S = 1 MiB, layer-major, no target.
inline Descriptor Compact(uint64_t n) {
  Descriptor d;
  CompactKeys keys{"kv/llama3-8b/", {}};
  for (uint64_t i = 0; i < n; ++i) {
    keys.hashes.push_back(HashOf(i));
  }
  d.keys = std::move(keys);
  d.num_layers = 32;
  d.chunk_tokens = 256;
  d.layer_bytes = 1 << 20;
  return d;
}

// N explicit LMCache-style names ("meta-llama/Llama-3.1-8B@1@0@<hex>@bfloat16").
inline Descriptor Explicit(uint64_t n) {
  Descriptor d = Compact(0);
  ExplicitKeys keys;
  for (uint64_t i = 0; i < n; ++i) {
    keys.names.push_back(ChunkObjectName("meta-llama/Llama-3.1-8B@1@0@", HashOf(i)) + "@bfloat16");
  }
  d.keys = std::move(keys);
  return d;
}

// Every optional field set.
inline Descriptor Full(uint64_t n) {
  Descriptor d = Compact(n);
  d.layout = StoredLayout::k2LTD;
  d.delivery = Delivery::kChunkMajor;
  d.target = DataPlaneTarget{};
  for (size_t i = 0; i < d.target->connection.size(); ++i) {
    d.target->connection[i] = static_cast<std::byte>(0xa0 + i);  // a0a1...af
  }
  d.target->rkey = {std::byte{0xff}, std::byte{0x10}};
  d.target->address = 0x7f0000001000ull;
  d.target->length = n * 32 * (1ull << 20);
  d.compute_window_us = 850;
  d.request_id = "req-0001";
  return d;
}

}  // namespace oc::descriptor::samples
