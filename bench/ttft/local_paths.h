#pragma once
// The local paths of experiment 5 (bench/README.md): the KV is already in this process's memory
// and a loader thread copies it into the node's buffer with memcpy, layer-major (opt-local-LW),
// chunk-major sliced per layer (Local-LW) or chunk-major whole (Local-CW), signalling each layer
// to the node loop (node.h). Thread safety: one RunLocal at a time per LocalKv.

#include <cstddef>
#include <vector>

#include "request.h"

namespace oc::bench::ttft {

// The KV of one request in local memory: layer-major (opt-local) and chunk-major (Local-*).
struct LocalKv {
  explicit LocalKv(const Request& r)
      : layer_major(r.payload(), std::byte{0x11}),
        chunk_major(r.payload(), std::byte{0x22}),
        dst(r.payload(), std::byte{0}) {}
  std::vector<std::byte> layer_major;
  std::vector<std::byte> chunk_major;
  std::vector<std::byte> dst;
};

// One request over a local path (not kS3BatchCW or kS3AggLW), the node behind an emulated link of
// `link_cap` bytes/s (0: none).
Measured RunLocal(Path p, const Request& r, LocalKv& kv, double link_cap);

}  // namespace oc::bench::ttft
