#pragma once
// The remote Store: every call forwarded over the storage RPC to one or more
// oc-storage-server daemons (target oc_storage_rpc_client; src/rpc/remote_store.cc). What
// `oc-gateway` links: no RocksDB, no RPC server, no UCX.
// Thread safety: the returned Store is thread-safe (store.h); options are plain values.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "oc/common/result.h"
#include "oc/common/status.h"
#include "oc/storage/store.h"

namespace oc::storage {

struct RemoteStoreOptions {
  // host:port of each oc-storage-server; buckets are spread over them by hash of name.
  // Default: none (required)
  std::vector<std::string> endpoints;
  // Shared secret every RPC connection must present (OC_RPC_SECRET).
  // Default: "" (required)
  std::string secret;
  // Idle connections kept per endpoint.
  // Default: 16
  uint32_t max_idle_connections = 16;
  Status Validate() const;
};

// A Store that forwards every call over the storage RPC. Connects lazily; kUnavailable
// from calls while a server is unreachable. kInvalidArgument for bad options.
Result<std::unique_ptr<Store>> ConnectRemoteStore(const RemoteStoreOptions& options);

}  // namespace oc::storage
