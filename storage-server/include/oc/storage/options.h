#pragma once
// Options of the local RocksDB store and of the remote-store client. Plain fields with
// defaults; Validate() checks them once at startup.

#include <cstdint>
#include <string>
#include <vector>

#include "oc/common/status.h"

namespace oc::storage {

struct StoreOptions {
  // Directory of the RocksDB database; created if absent.
  // Default: "./data"
  std::string data_dir = "./data";
  // Bytes per extent record for objects written without a chunk layout.
  // Default: 1 MiB
  uint64_t default_extent_bytes = 1ull << 20;
  // RocksDB block cache; hot extents are served from it without decoding.
  // Default: 1 GiB
  uint64_t block_cache_bytes = 1ull << 30;
  // Acknowledge writes only after fsync of the WAL (DESIGN: durability). Turning it off
  // is for benchmarks that measure the engine without the disk.
  // Default: true
  bool sync_writes = true;
  // Threads that serve ReadSlices and other parallel reads.
  // Default: 4
  uint32_t read_threads = 4;
  Status Validate() const;
};

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

}  // namespace oc::storage
