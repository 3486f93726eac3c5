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
  // host:port of each oc-storage-server; how calls are spread over them is chosen at connect
  // (ConnectRemoteStore). Default: none (required)
  std::vector<std::string> endpoints;
  // Shared secret every RPC connection must present (OC_RPC_SECRET).
  // Default: "" (required)
  std::string secret;
  // Idle connections kept per endpoint.
  // Default: 16
  uint32_t max_idle_connections = 16;
  Status Validate() const;
};

// A Store that forwards every call over the storage RPC. At connect it asks every server
// which store it serves (the RPC's ServerInfo; docs/protocol.md "Storage RPC") and places
// calls accordingly (docs/decisions/remote-store-shared-placement.md):
// - Shared: every server that answered serves the same RADOS cluster, pool and namespace, so
//   any of them serves any bucket. Calls go round-robin over the servers available; a call
//   that fails with kUnavailable is run once more on another server if it never reached the
//   first, or if it is a read or an idempotent mutation (tags, a lifecycle configuration, a
//   delete, a descriptor PUT pulled from the client's memory); other mutations are not, since
//   the first server may have applied them. A writer, a reader or a descriptor GET stays on
//   the server that opened it. A server that did not answer at connect joins once it reports
//   the same target.
// - Partitioned: the servers are RocksDB servers (a server older than ServerInfo counts as
//   one), or none answered. Each bucket lives on one server, XXH3-64(bucket name) mod N, and
//   that is all: no replication (a lost server loses its buckets) and no rebalancing (changing
//   the endpoint list moves buckets away from their data).
// kInvalidArgument for bad options, and naming every server, for servers over different
// backends or different RADOS targets. Servers unreachable at connect are not an error:
// calls to them fail with kUnavailable until they come up.
Result<std::unique_ptr<Store>> ConnectRemoteStore(const RemoteStoreOptions& options);

}  // namespace oc::storage
