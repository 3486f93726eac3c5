#pragma once
// Chunk-key test vectors: the one copy shared by chunk_key_test.cc and docs/protocol.md
// ("Chunk keys", test vectors), which prints the same table. The hashes were computed with
// Python's xxhash module (python3-xxhash 3.2, xxHash 0.8.1), independently of our C++ code:
//   h = xxhash.xxh3_128_digest(namespace.encode())
//   h = xxhash.xxh3_128_digest(h + struct.pack("<%dI" % G, *chunk_tokens))   # per chunk
// The first vector of the last row is XXH3_128("") as published by xxHash.

#include <cstdint>
#include <string_view>
#include <vector>

namespace oc::descriptor::vectors {

struct ChunkKeyVector {
  std::string_view namespace_string;
  std::vector<uint32_t> tokens;
  uint32_t chunk_tokens;
  std::string_view namespace_hash;             // H_{-1}, hex
  std::vector<std::string_view> chunk_hashes;  // H_0.., hex; floor(tokens / G) of them
};

// Tokens (i * 2654435761) mod 2^32 for i = 0..n-1: values that use all four bytes, so the
// little-endian token encoding matters.
inline std::vector<uint32_t> GoldenTokens(uint32_t n) {
  std::vector<uint32_t> t(n);
  for (uint32_t i = 0; i < n; ++i) {
    t[i] = static_cast<uint32_t>(uint64_t{i} * 2654435761u);
  }
  return t;
}

inline std::vector<uint32_t> Iota(uint32_t n) {
  std::vector<uint32_t> t(n);
  for (uint32_t i = 0; i < n; ++i) {
    t[i] = i;
  }
  return t;
}

inline std::vector<ChunkKeyVector> ChunkKeyVectors() {
  return {
      {"oc-kv-v1;model=meta-llama/Llama-3.1-8B;dtype=bfloat16;tp=0/1",
       Iota(10),
       4,
       "64465835a20b776d178415375bdb37e4",
       {"73915cab52f8c56eb1816a3a2513692d", "a5e3d64f612716482e00d38104516b19"}},
      {"oc-kv-v1;model=meta-llama/Llama-3.1-8B;dtype=bfloat16;tp=1/2",
       Iota(8),
       4,
       "78e0e077c9f596757850694ccd0fd365",
       {"65e1e993487f2759e5be96eada3bbd59", "0e2c4ccdf5fb510c6cea5925f22472da"}},
      {"oc-kv-v1;model=Qwen/Qwen2.5-7B-Instruct;dtype=float16;tp=0/1",
       GoldenTokens(48),
       16,
       "e1721246af0fb4b922398b8ea43cfe93",
       {"b1c872fa0164a5c2d91a424835dec36a", "af9df182d27025cf48e744834736f8cc",
        "0729b5c8bcc995b578d2afbbdc84a3e4"}},
      {"", {1, 2, 3}, 3, "99aa06d3014798d86001c324468d497f", {"4f04c277ca3650f088ad89b8862e06c1"}},
  };
}

}  // namespace oc::descriptor::vectors
