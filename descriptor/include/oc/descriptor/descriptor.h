#pragma once
// The descriptor: one request naming N stored KV chunks and how their layers are to be
// delivered (docs/design.md, "The descriptor"; the ObjectCache paper's Table 1). A serving node
// builds one per prefix hit; the gateway decodes it from `x-oc-*` headers or a POST body
// (codec.h), checks it against configured limits (limits.h) before any I/O, and the storage
// server computes every offset from it (layout.h). No I/O here.
//
// Chunk keys come in two forms, both opaque to the server:
//  - compact: a key prefix and the raw 16-byte hashes; object j is prefix + 32 lowercase hex
//    characters of hash j (chunk_key.h computes the hashes);
//  - explicit: the full object names (for clients such as LMCache whose keys are strings like
//    "model@rank@hash@dtype").
// ObjectName(j) builds one name on demand, so no one has to materialise all N names.
// Thread safety: a value type.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "oc/descriptor/chunk_key.h"
#include "oc/descriptor/layout.h"

namespace oc::descriptor {

// The descriptor wire format version this library speaks (`x-oc-version`).
inline constexpr uint32_t kProtocolVersion = 1;

struct CompactKeys {
  std::string prefix;             // any bytes; prefix + 32 hex chars is one S3 key
  std::vector<ChunkHash> hashes;  // H_0..H_{N-1}

  bool operator==(const CompactKeys&) const = default;
};

struct ExplicitKeys {
  std::vector<std::string> names;  // full object names, any bytes an S3 key can hold

  bool operator==(const ExplicitKeys&) const = default;
};

using ChunkKeys = std::variant<CompactKeys, ExplicitKeys>;

// A data-plane connection: 128 random bits the storage server's data plane issued when the
// client's UCX connected to its listener (docs/protocol.md, "Data plane: connecting").
inline constexpr size_t kConnectionIdBytes = 16;
using ConnectionId = std::array<std::byte, kConnectionIdBytes>;

// Where the server writes the assembled payload over the data plane (UCX). Without one, the
// payload streams back in the HTTP response body.
struct DataPlaneTarget {
  ConnectionId connection{};    // the client's connection to the serving data plane
  std::vector<std::byte> rkey;  // packed remote key of the mapped buffer
  uint64_t address = 0;         // remote virtual address of the buffer's first byte
  uint64_t length = 0;          // buffer bytes; must hold N·L·S
  // The credential (access key) of the request that carries this target; "" for anonymous.
  // Not part of the descriptor wire: the gateway sets it after authenticating the request,
  // and the storage RPC carries it beside the descriptor. The data plane binds a connection
  // to the first principal that names it (docs/decisions/data-plane-who-connects-to-whom.md).
  std::string principal;

  bool operator==(const DataPlaneTarget&) const = default;
};

struct Descriptor {
  ChunkKeys keys;                             // the N chunks, in prefix order
  uint32_t num_layers = 0;                    // L
  uint32_t chunk_tokens = 0;                  // G, tokens per chunk
  uint64_t layer_bytes = 0;                   // S, bytes of one layer of one chunk
  StoredLayout layout = StoredLayout::kL2TD;  // how each chunk object is ordered
  Delivery delivery = Delivery::kLayerMajor;  // how the payload is laid out
  std::optional<DataPlaneTarget> target;      // none: the HTTP body carries it
  std::optional<uint64_t> compute_window_us;  // c, per-layer compute time (scheduler)
  std::string request_id;                     // tracing; empty: the gateway assigns one
  // A descriptor PUT's create-if-absent (`x-oc-if-none-match: *`, docs/protocol.md
  // "Descriptor PUT: create if absent"): a chunk already stored is left as it is and reported
  // as existing instead of being replaced, decided atomically with the commit. Only a PUT
  // carries it; the decoder refuses it on a GET, POST or probe.
  bool if_none_match = false;

  // N, the number of chunk keys of either form.
  uint64_t num_chunks() const;
  bool compact() const { return std::holds_alternative<CompactKeys>(keys); }
  // The object name of chunk j: prefix + hex of hash j, or explicit name j. Allocates only
  // the returned string. REQUIRES: j < num_chunks() (checked).
  std::string ObjectName(uint64_t j) const;

  bool operator==(const Descriptor&) const = default;
};

}  // namespace oc::descriptor
