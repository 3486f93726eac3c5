#pragma once
// RpcServer serves one Store over the storage RPC (src/rpc/wire.h) to authenticated clients
// (target oc_storage_rpc_server; src/rpc/server_connection.h lists its files): the daemon
// oc-storage-server runs one over OpenStore, and tests run one in process over a real store.
//
// Threads: `io_threads` run Asio (one coroutine per connection, on its own strand); every
// Store call runs on a separate pool of `store_threads`, so RocksDB never blocks I/O, except
// the descriptor transfers (KvGetLayers, KvPutChunks), which run on the store's descriptor
// executor (Store::descriptor_executor) and are refused with kResourceExhausted when it is full.
// Each connection serves one call at a time and holds at most one frame body or one
// streamed piece (kStreamChunkBytes) in memory.
// Every read and write has a deadline. A client that breaks the protocol (bad magic,
// version, op, flags, oversize length, malformed body, no handshake, wrong secret) gets an
// error frame and its connection is closed; the others are not affected.
//
// Shutdown (Shutdown(), or SIGTERM/SIGINT once HandleSignals() was called): stop
// accepting, close idle connections, let in-flight calls finish (bounded by io_timeout
// per frame), then Wait() returns. The Store is the caller's to close (flush) afterwards.
//
// Thread safety: Shutdown(), Wait(), port() and Figures() may be called from any thread.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oc/common/config.h"
#include "oc/common/result.h"
#include "oc/common/status.h"
#include "oc/storage/store.h"

namespace oc::storage::rpc {

// The thread counts for configured values (0: from the usable cores, see the fields).
uint32_t RpcIoThreadsFor(uint32_t configured);
uint32_t RpcStoreThreadsFor(uint32_t configured);

struct RpcServerOptions {
  // host:port to listen on; port 0 picks a free one (tests read it back from port()).
  // Default: "127.0.0.1:9100"
  std::string listen = "127.0.0.1:9100";
  // Threads running the network event loop; 0 takes one per core this process may use
  // (oc::UsableCores: CPU affinity and cgroup quota). RpcIoThreadsFor() resolves it.
  // Default: 0 (one per usable core)
  uint32_t io_threads = 0;
  // Threads making Store calls (blocking RocksDB reads and synced writes); 0 takes 4 per
  // usable core, at least 8 (RpcStoreThreadsFor()).
  // Default: 0 (4 per usable core, at least 8)
  uint32_t store_threads = 0;
  // Largest frame body accepted from a client; a header announcing more is refused before
  // anything is allocated. At least kStreamChunkBytes + 64 KiB (a data frame must fit),
  // at most kMaxFrameBodyBytes.
  // Default: 4 MiB
  uint64_t max_frame_bytes = 4ull << 20;
  // Time a new connection has to complete the handshake.
  // Default: 10s
  std::chrono::milliseconds handshake_timeout{10'000};
  // Time a connection may sit idle between calls before it is closed.
  // Default: 300s
  std::chrono::milliseconds idle_timeout{300'000};
  // Time allowed for each frame read or write inside a call.
  // Default: 30s
  std::chrono::milliseconds io_timeout{30'000};
  // Connections served at once; more are answered with kResourceExhausted and closed.
  // Default: 1024
  uint32_t max_connections = 1024;

  Status Validate() const;
  // One line for the startup log: every field, key=value.
  std::string ToString() const;
};

// Reads the [rpc] table (rpc.listen, rpc.io_threads, ...; conf/storage-server.toml lists
// every key) into `options`, leaving absent keys as they are.
Status ApplyConfig(const Config& config, RpcServerOptions* options);

class RpcServer {
 public:
  // Binds options.listen and starts serving `store` (not owned; must outlive the server)
  // to clients presenting `secret`. kInvalidArgument for bad options or an empty secret,
  // kIOError (field "listen") if the address cannot be bound.
  static Result<std::unique_ptr<RpcServer>> Start(Store* store, const RpcServerOptions& options,
                                                  std::string secret);
  ~RpcServer();  // Shutdown() and Wait()
  RpcServer(const RpcServer&) = delete;
  RpcServer& operator=(const RpcServer&) = delete;

  // The bound port and "host:port".
  uint16_t port() const;
  std::string endpoint() const;

  // Shut down on SIGTERM or SIGINT. Call at most once, from the daemon.
  void HandleSignals();
  // Begins a graceful shutdown; returns at once. Idempotent.
  void Shutdown();
  // Blocks until shutdown has completed: no connection left, every thread joined.
  void Wait();

  // Server figures appended to Stats replies (rpc_connections_active,
  // rpc_connections_total, rpc_protocol_errors, rpc_peak_connection_bytes).
  std::vector<std::pair<std::string, uint64_t>> Figures() const;

 private:
  friend class Connection;  // src/rpc/server_connection.h: one client connection
  struct Impl;
  explicit RpcServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace oc::storage::rpc
