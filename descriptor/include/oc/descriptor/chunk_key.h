#pragma once
// Chunk keys: the client-side convention that names every G-token KV chunk (docs/design.md,
// data model). The server treats keys as opaque; these functions are what a serving node
// (and our `oc` client and tests) use to name chunks, and docs/protocol.md publishes the
// test vectors that any other implementation can check itself against.
//
//   H_{-1} = XXH3_128(namespace string)
//   H_i    = XXH3_128(H_{i-1} ‖ tokens of chunk i as little-endian uint32)
//   object name of chunk i = <prefix> + 32 lowercase hex characters of H_i
//
// XXH3_128 is xxHash's 128-bit XXH3 with seed 0 and the default secret. Every hash, as
// input and as output, is in XXH128 canonical byte order (big-endian: high 64 bits first),
// exactly the bytes xxHash's XXH128_canonicalFromHash() writes and Python's
// xxhash.xxh3_128_digest() returns.
// Thread safety: pure functions.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "oc/common/result.h"

namespace oc::descriptor {

// A chunk hash in XXH128 canonical (big-endian) byte order.
using ChunkHash = std::array<std::byte, 16>;
inline constexpr size_t kChunkHashHexChars = 32;

// What a chunk's KV bytes depend on besides its tokens: the same tokens on another model,
// dtype or tensor-parallel rank must hash differently.
struct KeyNamespace {
  std::string model_id;  // e.g. "meta-llama/Llama-3.1-8B"; non-empty, no control bytes
  std::string dtype;     // e.g. "bfloat16"; [a-z0-9_]+
  uint32_t tp_rank = 0;  // this rank, < tp_size
  uint32_t tp_size = 1;  // tensor-parallel degree, >= 1
};

// The namespace string, exactly:
//   "oc-kv-v1;model=<model_id>;dtype=<dtype>;tp=<tp_rank>/<tp_size>"
// with the two numbers in decimal. The fields after the model id contain no ';', so the
// string parses unambiguously from the right even if the model id contains one.
// kInvalidArgument if the model id is empty or has a control byte (< 0x20 or 0x7f), the
// dtype is empty or not [a-z0-9_]+, tp_size is 0 or tp_rank >= tp_size.
Result<std::string> NamespaceString(const KeyNamespace& ns);

// H_{-1}: XXH3_128 of the namespace string's bytes.
ChunkHash NamespaceHash(std::string_view namespace_string);

// H_i from H_{i-1} and the tokens of chunk i.
ChunkHash NextChunkHash(const ChunkHash& previous, std::span<const uint32_t> tokens);

// The hashes of every full chunk of `tokens`, G = `chunk_tokens` tokens each, starting from
// NamespaceHash(namespace_string): floor(tokens.size() / G) hashes. A trailing partial
// chunk gets no hash: its KV bytes are not a complete chunk object, so it is recomputed
// (or kept elsewhere) rather than stored. kInvalidArgument if chunk_tokens is 0.
Result<std::vector<ChunkHash>> ChunkHashes(std::span<const uint32_t> tokens, uint32_t chunk_tokens,
                                           std::string_view namespace_string);

// "<prefix><32 lowercase hex of hash>".
std::string ChunkObjectName(std::string_view prefix, const ChunkHash& hash);

}  // namespace oc::descriptor
