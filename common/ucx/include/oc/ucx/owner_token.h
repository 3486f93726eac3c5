#pragma once
// The owner page of a target UCX allocates for a client (MappedMemory::Allocate,
// mapped_memory.h): the mapping begins with one page naming its owner, the SHA-256 of a domain
// string and the owning data plane's secret, a random value the client sends only to the
// servers its UCX connects to (the hello, oc/descriptor/data_plane_wire.h), never in an HTTP
// header. A server writes in place, or lets UCX attach the segment at all, only if that page
// names the connection the request's notifications go to, so a client cannot aim writes at
// another client's segment by sending its rkey (docs/decisions/data-plane-attached-targets-own.md).
// Thread safety: constants and a pure function.

#include <array>
#include <cstddef>
#include <cstdint>

namespace oc::ucx {

// Bytes before the target's own bytes in an allocated mapping; the token fills its start.
inline constexpr uint64_t kOwnerPageBytes = 4096;
// A data plane's owner secret: random, drawn once per client data plane. The hello carries
// it as its kHelloSecretBytes field (the same array type).
inline constexpr size_t kOwnerSecretBytes = 32;
using OwnerSecret = std::array<std::byte, kOwnerSecretBytes>;
inline constexpr size_t kOwnerTokenBytes = 32;  // SHA-256
using OwnerToken = std::array<std::byte, kOwnerTokenBytes>;

// The token naming the data plane whose owner secret is `secret`.
OwnerToken MakeOwnerToken(const OwnerSecret& secret);

}  // namespace oc::ucx
