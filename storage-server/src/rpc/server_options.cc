// RpcServerOptions (oc/storage/rpc_server.h): validation, the startup log line and the
// [rpc] config table.
#include <algorithm>
#include <utility>

#include <fmt/core.h>

#include "oc/common/cores.h"
#include "oc/common/units.h"
#include "oc/storage/rpc_server.h"
#include "rpc/wire.h"

namespace oc::storage::rpc {
namespace {

// The largest data frame or request body a client sends, plus room for framing.
constexpr uint64_t kMinFrameBytes =
    std::max(kStreamChunkBytes, kMaxRequestBodyBytes) + (64ull << 10);

constexpr uint32_t kMaxRpcIoThreads = 256;
constexpr uint32_t kMaxRpcStoreThreads = 1024;

std::string FormatMs(std::chrono::milliseconds ms) { return fmt::format("{}ms", ms.count()); }

}  // namespace

uint32_t RpcIoThreadsFor(uint32_t configured) {
  return configured != 0 ? configured : ThreadsPerCore(1, 1, kMaxRpcIoThreads);
}

uint32_t RpcStoreThreadsFor(uint32_t configured) {
  return configured != 0 ? configured : ThreadsPerCore(4, 8, kMaxRpcStoreThreads);
}

Status RpcServerOptions::Validate() const {
  OC_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(listen, "rpc.listen"));
  (void)hp;
  if (io_threads > kMaxRpcIoThreads) {
    return Status::InvalidArgument("rpc.io_threads", "must be 0 (from the cores)..256");
  }
  if (store_threads > kMaxRpcStoreThreads) {
    return Status::InvalidArgument("rpc.store_threads", "must be 0 (from the cores)..1024");
  }
  if (max_frame_bytes < kMinFrameBytes || max_frame_bytes > kMaxFrameBodyBytes) {
    return Status::InvalidArgument(
        "rpc.max_frame_bytes",
        fmt::format("must be {}..{}", FormatSize(kMinFrameBytes), FormatSize(kMaxFrameBodyBytes)));
  }
  for (const auto& [name, value] :
       {std::pair{"rpc.handshake_timeout", handshake_timeout},
        std::pair{"rpc.idle_timeout", idle_timeout}, std::pair{"rpc.io_timeout", io_timeout}}) {
    if (value.count() <= 0) {
      return Status::InvalidArgument(name, "must be positive");
    }
  }
  if (max_connections == 0) {
    return Status::InvalidArgument("rpc.max_connections", "must be at least 1");
  }
  return Status::Ok();
}

std::string RpcServerOptions::ToString() const {
  return fmt::format(
      "rpc.listen={} rpc.io_threads={} rpc.store_threads={} rpc.max_frame_bytes={} "
      "rpc.handshake_timeout={} rpc.idle_timeout={} rpc.io_timeout={} rpc.max_connections={}",
      listen, RpcIoThreadsFor(io_threads), RpcStoreThreadsFor(store_threads), max_frame_bytes,
      FormatMs(handshake_timeout), FormatMs(idle_timeout), FormatMs(io_timeout), max_connections);
}

Status ApplyConfig(const Config& config, RpcServerOptions* options) {
  OC_RETURN_IF_ERROR(config.Read("rpc.listen", &options->listen));
  OC_RETURN_IF_ERROR(config.Read("rpc.io_threads", &options->io_threads));
  OC_RETURN_IF_ERROR(config.Read("rpc.store_threads", &options->store_threads));
  OC_RETURN_IF_ERROR(config.ReadSize("rpc.max_frame_bytes", &options->max_frame_bytes));
  OC_RETURN_IF_ERROR(config.ReadDuration("rpc.handshake_timeout", &options->handshake_timeout));
  OC_RETURN_IF_ERROR(config.ReadDuration("rpc.idle_timeout", &options->idle_timeout));
  OC_RETURN_IF_ERROR(config.ReadDuration("rpc.io_timeout", &options->io_timeout));
  OC_RETURN_IF_ERROR(config.Read("rpc.max_connections", &options->max_connections));
  return Status::Ok();
}

}  // namespace oc::storage::rpc
