#pragma once
// Socket addresses of data-plane listeners (docs/protocol.md, "Data plane: connecting"): the
// storage server's UcxDataPlane listens on one (ucp_listener) and a client's UcxReceiver
// connects to it (ucp_ep_create with UCP_EP_PARAM_FIELD_SOCK_ADDR). Parsing, printing, and the
// loopback test that ErrorMode (transports.h) needs.
// Thread safety: pure functions (ParseSocketAddress may resolve a name).

#include <sys/socket.h>

#include <string>
#include <string_view>

#include "oc/common/result.h"

namespace oc::ucx {

// "host:port" or "[v6]:port" as an address to listen on or connect to; the host may be a name.
// kInvalidArgument naming `field` if it does not resolve.
Result<sockaddr_storage> ParseSocketAddress(std::string_view text, std::string_view field);

// The length of `addr` as the sockets API wants it (its family's sockaddr).
socklen_t SocketAddressBytes(const sockaddr_storage& addr);

// "ip:port" (IPv4) or "[ip]:port" (IPv6) of `addr`; "" for other families.
std::string FormatSocketAddress(const sockaddr_storage& addr);

// True for 127.0.0.0/8, ::1 and IPv4-mapped 127.0.0.0/8; false for null and other families.
bool IsLoopback(const sockaddr* addr);

}  // namespace oc::ucx
