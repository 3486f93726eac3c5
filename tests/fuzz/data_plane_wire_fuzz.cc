// Fuzzes the data-plane decoders (oc/descriptor/data_plane_wire.h) with arbitrary bytes, as a
// client's receiver gets notification and data headers and a server's data plane gets hellos
// off the network. Each decoder either refuses with kCorruption or returns a message that
// encodes back to exactly the bytes it came from (reserved bytes aside, which are not
// checked). Any other outcome aborts.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "oc/descriptor/data_plane_wire.h"

namespace {

namespace wire = oc::descriptor;

void Require(bool ok) {
  if (!ok) {
    std::abort();
  }
}

// `encoded` equals `input` except at the reserved offsets [from, to).
template <size_t N>
void RequireSameExcept(const std::array<std::byte, N>& encoded, oc::ByteSpan input, size_t from,
                       size_t to) {
  Require(input.size() == N);
  for (size_t i = 0; i < N; ++i) {
    Require(i >= from && i < to ? encoded[i] == std::byte{0} : encoded[i] == input[i]);
  }
}

template <typename R>
void RequireCorruptionIfRefused(const R& r) {
  Require(r.has_value() || r.error().code() == oc::Code::kCorruption);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const oc::ByteSpan input(reinterpret_cast<const std::byte*>(data), size);
  auto n = wire::DecodeNotification(input);
  RequireCorruptionIfRefused(n);
  if (n.has_value()) {
    RequireSameExcept(wire::EncodeNotification(*n), input, 7, 8);
  }
  auto d = wire::DecodeDataHeader(input);
  RequireCorruptionIfRefused(d);
  if (d.has_value()) {
    RequireSameExcept(wire::EncodeDataHeader(*d), input, 5, 8);
  }
  auto hello = wire::DecodeHello(input);
  RequireCorruptionIfRefused(hello);
  if (hello.has_value()) {
    RequireSameExcept(wire::EncodeHello(*hello), input, 5, 8);
  }
  auto welcome = wire::DecodeWelcome(input);
  RequireCorruptionIfRefused(welcome);
  if (welcome.has_value()) {
    RequireSameExcept(wire::EncodeWelcome(*welcome), input, 5, 8);
  }
  return 0;
}
