// RpcServerOptions (oc/storage/rpc_server.h): validation, the startup log line and the
// [rpc] config table.
#include <algorithm>
#include <utility>

#include "oc/common/config_table.h"
#include "oc/common/cores.h"
#include "oc/storage/config_tables.h"
#include "oc/storage/rpc_server.h"
#include "rpc/wire.h"

namespace oc::storage::rpc {
namespace {

// The largest data frame or request body a client sends, plus room for framing.
constexpr uint64_t kMinFrameBytes =
    std::max(kStreamChunkBytes, kMaxRequestBodyBytes) + (64ull << 10);

constexpr uint32_t kMaxRpcIoThreads = 256;
constexpr uint32_t kMaxRpcStoreThreads = 1024;

}  // namespace

uint32_t RpcIoThreadsFor(uint32_t configured) {
  return configured != 0 ? configured : ThreadsPerCore(1, 1, kMaxRpcIoThreads);
}

uint32_t RpcStoreThreadsFor(uint32_t configured) {
  return configured != 0 ? configured : ThreadsPerCore(4, 8, kMaxRpcStoreThreads);
}

namespace {

// A thread-count resolver (0 = from the cores) as the table's effective-value function.
template <uint32_t (*F)(uint32_t)>
uint64_t Wide(uint64_t configured) {
  return F(static_cast<uint32_t>(configured));
}

}  // namespace

const ConfigTable<RpcServerOptions>& RpcConfigTable() {
  static const ConfigTable<RpcServerOptions>* const table = [] {
    constexpr std::chrono::milliseconds kOneMs{1};
    auto* t = new ConfigTable<RpcServerOptions>(
        "rpc",
        "[rpc]: the storage RPC server (storage-server/include/oc/storage/rpc_server.h). The "
        "secret is not here: it comes from the OC_RPC_SECRET environment variable, and the "
        "daemon refuses to start without it.");
    (*t).Str("listen", &RpcServerOptions::listen,
             "host:port to serve on; port 0 picks a free one (printed and logged at start).")
        .Int("io_threads", &RpcServerOptions::io_threads,
             "Threads running the network event loop. 0: one per core this process may use "
             "(its CPU affinity, and its cgroup's CPU quota rounded up, when there is one).",
             0, kMaxRpcIoThreads, &Wide<RpcIoThreadsFor>)
        .Int("store_threads", &RpcServerOptions::store_threads,
             "Threads making store calls (blocking RocksDB reads and synced writes), so the "
             "network threads never wait on the disk. 0: 4 per usable core, at least 8.",
             0, kMaxRpcStoreThreads, &Wide<RpcStoreThreadsFor>)
        .Size("max_frame_bytes", &RpcServerOptions::max_frame_bytes,
              "Largest frame body accepted from a client; a bigger announced length is refused "
              "before anything is allocated. 1088KiB..64MiB.",
              kMinFrameBytes, kMaxFrameBodyBytes)
        .Duration("handshake_timeout", &RpcServerOptions::handshake_timeout,
                  "Time a new connection has to present the secret.", kOneMs)
        .Duration("idle_timeout", &RpcServerOptions::idle_timeout,
                  "Time a connection may sit idle between calls before the server closes it.",
                  kOneMs)
        .Duration("io_timeout", &RpcServerOptions::io_timeout,
                  "Time allowed for each frame read or write inside a call.", kOneMs)
        .Int("max_connections", &RpcServerOptions::max_connections,
             "Connections served at once; more are refused with an error frame.", 1);
    return t;
  }();
  return *table;
}

Status RpcServerOptions::Validate() const {
  OC_RETURN_IF_ERROR(RpcConfigTable().Check(*this));
  OC_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(listen, "rpc.listen"));
  (void)hp;
  return Status::Ok();
}

std::string RpcServerOptions::ToString() const { return RpcConfigTable().Describe(*this); }

Status ApplyConfig(const Config& config, RpcServerOptions* options) {
  return RpcConfigTable().Apply(config, options);
}

}  // namespace oc::storage::rpc
