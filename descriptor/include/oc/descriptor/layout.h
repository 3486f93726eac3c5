#pragma once
// Layout arithmetic of KV chunks (DESIGN.md: data model, descriptor). Pure functions.

#include <cstdint>

namespace oc::descriptor {

// How a stored KV chunk object's bytes are ordered. Values are part of the wire format
// and of stored metadata: never renumber.
enum class StoredLayout : uint8_t {
  kL2TD = 1,  // layer-major: L layers of S bytes; layer l is one range [l*S, (l+1)*S)
  k2LTD = 2,  // LMCache's default: all layers' K, then all layers' V; layer l is two
              // ranges of S/2, K at l*S/2 and V at (L+l)*S/2
};

}  // namespace oc::descriptor
