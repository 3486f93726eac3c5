#pragma once
// Helpers shared by the value codecs of the storage RPC (object_codecs.cc, kv_codecs.cc).
// Private to oc_storage_wire. Thread safety: pure functions.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "rpc/wire.h"

namespace oc::storage::rpc::internal {

// Decodes a u32 count and that many elements with `decode_one`; a count claiming more
// elements than the remaining bytes could hold (at `min_bytes` each) is refused before any
// reserve().
template <typename T, typename F>
bool DecodeVector(WireReader& r, std::vector<T>* v, size_t min_bytes, F decode_one) {
  uint32_t n = 0;
  if (!r.Count(&n, min_bytes)) {
    return false;
  }
  v->clear();
  v->reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    T e{};
    if (!decode_one(r, &e)) {
      return false;
    }
    v->push_back(std::move(e));
  }
  return true;
}

}  // namespace oc::storage::rpc::internal
