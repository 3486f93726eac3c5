#pragma once
// Limits on descriptors, and Validate(): everything the gateway and storage server check
// before any I/O or allocation proportional to the request (docs/design.md: "Validated before any
// I/O"). The decoders (codec.h) apply the size limits while parsing, so an oversized key list
// is refused before a vector is built; Validate() then checks the decoded values.
// Every failure is kInvalidArgument with Subject kDescriptor, its field naming the `x-oc-*`
// header at fault, so the gateway can answer 400 with an S3-style error naming it.
// Thread safety: values and pure functions.

#include <cstdint>

#include "oc/common/status.h"
#include "oc/descriptor/descriptor.h"

namespace oc::descriptor {

// Longest request id accepted; it is echoed in logs and response headers.
inline constexpr uint64_t kMaxRequestIdBytes = 128;

struct Limits {
  // N, chunk keys per request. 65536 chunks of 16 tokens is a 1M-token prefix.
  // Default: 65536
  uint64_t max_chunks = 65536;
  // L, layers per chunk. The largest open models have ~126.
  // Default: 1024
  uint32_t max_layers = 1024;
  // G, tokens per chunk.
  // Default: 1048576
  uint32_t max_chunk_tokens = 1u << 20;
  // S, bytes of one layer of one chunk. Llama-3.1-70B at G = 256 needs 1 MiB.
  // Default: 256 MiB
  uint64_t max_layer_bytes = 256ull << 20;
  // N·L·S, the payload of one request. A 128K-token Llama-3.1-8B prefix is 16 GiB.
  // Default: 64 GiB
  uint64_t max_total_bytes = 64ull << 30;
  // Bytes of all `x-oc-*` request headers together (name + value + 4 per header, as on the
  // wire); larger descriptors must use the POST body. The gateway's own HTTP header limit
  // must be at least this.
  // Default: 64 KiB
  uint64_t max_header_bytes = 64ull << 10;
  // Bytes of a descriptor body (POST); refused before it is parsed.
  // Default: 8 MiB
  uint64_t max_body_bytes = 8ull << 20;
  // Bytes of one object name after percent-decoding (S3's key limit); for compact keys,
  // prefix + 32 hex characters.
  // Default: 1024
  uint64_t max_key_bytes = 1024;
  // Bytes of the packed rkey after hex decoding.
  // Default: 8 KiB
  uint64_t max_target_blob_bytes = 8ull << 10;
  // c, per-layer compute window in microseconds.
  // Default: 60000000 (60 s)
  uint64_t max_compute_window_us = 60'000'000;

  // kInvalidArgument if a maximum is 0 or max_key_bytes cannot hold the 32 hex characters
  // of a compact key.
  Status Validate() const;
};

// Checks `d` against `limits`: N in 1..max_chunks; every object name (and key prefix)
// well-formed UTF-8 without NUL, 1..max_key_bytes bytes; L, G, S in 1..max; S even for kv_2ltd;
// known layout and delivery; N·L·S without overflow and <= max_total_bytes; a target's rkey
// non-empty and within max_target_blob_bytes, address + length within 64 bits, length >= N·L·S;
// compute window 1..max_compute_window_us when present; request id at most
// kMaxRequestIdBytes of visible ASCII. OK, or the first failure as kInvalidArgument/kDescriptor
// naming the header.
Status Validate(const Descriptor& d, const Limits& limits);

}  // namespace oc::descriptor
