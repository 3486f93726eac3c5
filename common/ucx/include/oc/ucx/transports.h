#pragma once
// Which UCX transports and which endpoint error-handling mode a data-plane connection uses
// (docs/protocol.md, "Data plane: connecting"; docs/decisions/data-plane-who-connects-to-whom.md).
// Both ends derive them the same way.
//
// Both ends must create their endpoint with the same error-handling mode (UCX refuses an
// "asymmetric endpoint configuration"), and neither can try one and fall back: the client
// announces in its worker's client_id whether it could use shared memory
// (kClientIdSharedMemory, oc/descriptor/data_plane_wire.h), the discovery answer tells the
// client whether the server could, and each end derives the mode from those two bits and
// whether the peer's socket address is loopback (ErrorMode). Peer error handling rules out UCX
// 1.13's shared-memory transports, so it is used only when shared memory is not possible for
// the pair.
//
// UCX's connection manager needs a TCP interface on the listener's device, so tcp is added to
// the configured transports when they do not already allow it (WithConnectionManager): with
// mode none between two processes of one host UCX still picks sysv/posix/cma lanes for the
// bytes, and tcp carries only the connection manager's socket.
// Thread safety: pure functions (EffectiveTransports reads the environment).

#include <ucp/api/ucp.h>

#include <string>
#include <string_view>

namespace oc::ucx {

// The transports UCX will use: `configured` if set, else the UCX_TLS environment variable,
// else "" (UCX's default: every transport the machine has).
std::string EffectiveTransports(std::string_view configured);

// True if UCX_TLS syntax `tls` (as EffectiveTransports gives it) leaves a shared-memory
// transport that can carry active messages (sysv or posix: "shm", "sm", "mm", "all" and the
// default include them). A "^" list excludes: shared memory unless it names them.
bool AllowsSharedMemory(std::string_view tls);

// The transports to configure so that UCX's connection manager works: `tls` with ",tcp"
// appended when it is an explicit list without tcp; "" or a "^" list unchanged.
std::string WithConnectionManager(std::string_view tls);

// The error-handling mode of both ends of one connection: none (shared memory possible) only
// when both allow shared memory and the peer is this host by loopback address; else peer
// error handling (UCX keepalive), which UCX 1.13 offers on TCP and verbs only.
ucp_err_handling_mode_t ErrorMode(bool client_shared_memory, bool server_shared_memory,
                                  bool loopback);

}  // namespace oc::ucx
