#pragma once
// The data-plane handshake, shared by both ends (docs/protocol.md, "Data plane: connecting";
// docs/decisions.md, "Data plane: who connects to whom"). The storage server's UcxDataPlane
// listens on a socket address (ucp_listener); a client's DataPlane connects to it with
// ucp_ep_create(UCP_EP_PARAM_FIELD_SOCK_ADDR), sends a hello active message carrying its owner
// secret, and the server answers with a welcome carrying a fresh random 128-bit connection
// id, which the client then names in its descriptors (x-oc-target-connection). No byte of an
// HTTP header reaches ucp_ep_create any more.
//
// Both ends must create their endpoint with the same error-handling mode (UCX refuses an
// "asymmetric endpoint configuration"), and neither can try one and fall back: the client
// announces in its worker's client_id whether it could use shared memory, the discovery
// answer tells the client whether the server could, and each end derives the mode from those
// two bits and whether the peer's socket address is loopback (ErrorMode). Peer error handling
// rules out UCX 1.13's shared-memory transports, so it is used only when shared memory is
// not possible for the pair.
//
// UCX's connection manager needs a TCP interface on the listener's device, so tcp is added to
// the configured transports when they do not already allow it (WithConnectionManager): with
// mode none between two processes of one host UCX still picks sysv/posix/cma lanes for the
// bytes, and tcp carries only the connection manager's socket.
//
// Header-only, like ucx_core.h, because the client library includes it too.
// Thread safety: pure functions and constants.

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <ucp/api/ucp.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/core.h>

#include "oc/common/bytes.h"
#include "oc/common/result.h"
#include "oc/common/status.h"
#include "oc/descriptor/descriptor.h"
#include "ucx_core.h"

namespace oc::data_plane {

// Active message ids of the handshake (the notifications use kAmId and kDataAmId).
inline constexpr unsigned kHelloAmId = 0x0E;
inline constexpr unsigned kWelcomeAmId = 0x0F;

// Hello (client -> server, sent with UCP_AM_SEND_FLAG_REPLY), all of it the AM header:
//   offset size field
//   0      4    magic "OCHI"
//   4      1    version (kWireVersion)
//   5      3    reserved, 0
//   8      32   the client data plane's owner secret (MakeOwnerToken)
inline constexpr size_t kHelloBytes = 8 + kOwnerSecretBytes;
// Welcome (server -> client, sent with UCP_AM_SEND_FLAG_REPLY), all of it the AM header:
//   0      4    magic "OCWE"
//   4      1    version (kWireVersion)
//   5      3    reserved, 0
//   8      16   the connection id
inline constexpr size_t kWelcomeBytes = 8 + descriptor::kConnectionIdBytes;
inline constexpr std::array<std::byte, 4> kHelloMagic = {std::byte{'O'}, std::byte{'C'},
                                                         std::byte{'H'}, std::byte{'I'}};
inline constexpr std::array<std::byte, 4> kWelcomeMagic = {std::byte{'O'}, std::byte{'C'},
                                                           std::byte{'W'}, std::byte{'E'}};

inline std::array<std::byte, kHelloBytes> EncodeHello(const OwnerSecret& secret) {
  std::array<std::byte, kHelloBytes> out{};
  std::memcpy(out.data(), kHelloMagic.data(), kHelloMagic.size());
  out[4] = static_cast<std::byte>(kWireVersion);
  std::memcpy(out.data() + 8, secret.data(), secret.size());
  return out;
}

// kCorruption unless `header` is a hello of this version.
inline Result<OwnerSecret> DecodeHello(ByteSpan header) {
  if (header.size() != kHelloBytes ||
      std::memcmp(header.data(), kHelloMagic.data(), kHelloMagic.size()) != 0 ||
      static_cast<uint8_t>(header[4]) != kWireVersion) {
    return Status::Corruption("data-plane hello: bad size, magic or version");
  }
  OwnerSecret secret;
  std::memcpy(secret.data(), header.data() + 8, secret.size());
  return secret;
}

inline std::array<std::byte, kWelcomeBytes> EncodeWelcome(const descriptor::ConnectionId& id) {
  std::array<std::byte, kWelcomeBytes> out{};
  std::memcpy(out.data(), kWelcomeMagic.data(), kWelcomeMagic.size());
  out[4] = static_cast<std::byte>(kWireVersion);
  std::memcpy(out.data() + 8, id.data(), id.size());
  return out;
}

inline Result<descriptor::ConnectionId> DecodeWelcome(ByteSpan header) {
  if (header.size() != kWelcomeBytes ||
      std::memcmp(header.data(), kWelcomeMagic.data(), kWelcomeMagic.size()) != 0 ||
      static_cast<uint8_t>(header[4]) != kWireVersion) {
    return Status::Corruption("data-plane welcome: bad size, magic or version");
  }
  descriptor::ConnectionId id;
  std::memcpy(id.data(), header.data() + 8, id.size());
  return id;
}

// Bit of the client worker's client_id (UCP_WORKER_PARAM_FIELD_CLIENT_ID, sent in the
// connection request): set when the client's transports allow shared memory.
inline constexpr uint64_t kClientIdSharedMemory = 1;

// The transports UCX will use: `configured` if set, else the UCX_TLS environment variable,
// else "" (UCX's default: every transport the machine has).
inline std::string EffectiveTransports(std::string_view configured) {
  if (!configured.empty()) {
    return std::string(configured);
  }
  const char* env = std::getenv("UCX_TLS");
  return env != nullptr ? std::string(env) : std::string();
}

namespace handshake_detail {
template <typename F>
bool AnyToken(std::string_view list, F&& f) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    if (f(list.substr(0, comma))) {
      return true;
    }
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  return false;
}
}  // namespace handshake_detail

// True if UCX_TLS syntax `tls` (as EffectiveTransports gives it) leaves a shared-memory
// transport that can carry active messages (sysv or posix: "shm", "sm", "mm", "all" and the
// default include them). A "^" list excludes: shared memory unless it names them.
inline bool AllowsSharedMemory(std::string_view tls) {
  if (tls.empty()) {
    return true;
  }
  auto is_shm = [](std::string_view t) {
    return t == "shm" || t == "sm" || t == "mm" || t == "sysv" || t == "posix" || t == "all";
  };
  if (tls.front() == '^') {
    return !handshake_detail::AnyToken(tls.substr(1), is_shm);
  }
  return handshake_detail::AnyToken(tls, is_shm);
}

// The transports to configure so that UCX's connection manager works: `tls` with ",tcp"
// appended when it is an explicit list without tcp; "" or a "^" list unchanged.
inline std::string WithConnectionManager(std::string_view tls) {
  if (tls.empty() || tls.front() == '^' || handshake_detail::AnyToken(tls, [](std::string_view t) {
        return t == "tcp" || t == "all";
      })) {
    return std::string(tls);
  }
  return std::string(tls) + ",tcp";
}

inline bool IsLoopback(const sockaddr* addr) {
  if (addr == nullptr) {
    return false;
  }
  if (addr->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(addr);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (addr->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(addr);
    if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) {
      return true;
    }
    return IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && in6->sin6_addr.s6_addr[12] == 127;
  }
  return false;
}

// The error-handling mode of both ends of one connection: none (shared memory possible) only
// when both allow shared memory and the peer is this host by loopback address; else peer
// error handling (UCX keepalive), which UCX 1.13 offers on TCP and verbs only.
inline ucp_err_handling_mode_t ErrorMode(bool client_shared_memory, bool server_shared_memory,
                                         bool loopback) {
  return client_shared_memory && server_shared_memory && loopback ? UCP_ERR_HANDLING_MODE_NONE
                                                                  : UCP_ERR_HANDLING_MODE_PEER;
}

// "host:port" or "[v6]:port" as an address to listen on or connect to; the host may be a name.
// kInvalidArgument naming `field` if it does not resolve.
inline Result<sockaddr_storage> ParseSocketAddress(std::string_view text, std::string_view field) {
  std::string host;
  std::string port;
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) {
    return Status::InvalidArgument(std::string(field), "must be host:port");
  }
  host = std::string(text.substr(0, colon));
  port = std::string(text.substr(colon + 1));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0 || found == nullptr) {
    return Status::InvalidArgument(std::string(field),
                                   fmt::format("cannot resolve {}", std::string(text)));
  }
  sockaddr_storage out{};
  std::memcpy(&out, found->ai_addr, std::min<size_t>(found->ai_addrlen, sizeof out));
  ::freeaddrinfo(found);
  return out;
}

inline socklen_t SocketAddressBytes(const sockaddr_storage& addr) {
  return addr.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

// "ip:port" (IPv4) or "[ip]:port" (IPv6) of `addr`; "" for other families.
inline std::string FormatSocketAddress(const sockaddr_storage& addr) {
  char host[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    return fmt::format("{}:{}", host, ntohs(in->sin_port));
  }
  if (addr.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    return fmt::format("[{}]:{}", host, ntohs(in6->sin6_port));
  }
  return std::string();
}

}  // namespace oc::data_plane
