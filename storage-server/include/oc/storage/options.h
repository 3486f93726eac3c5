#pragma once
// Options of the local RocksDB store (OpenLocalStore, local_store.h) with its KV engine's, and
// their config tables. Plain fields with defaults; Validate() checks them once at startup.
// The remote-store client's options are in remote_store.h.

#include <cstdint>
#include <string>

#include "oc/common/status.h"
#include "oc/storage/kv.h"

namespace oc {
class Config;
}  // namespace oc

namespace oc::storage {

// Largest extent record accepted; PutOptions::extent_bytes above it is refused before
// anything is allocated (a writer buffers one extent).
inline constexpr uint64_t kMaxExtentBytes = 64ull << 20;

// Where extent values live in RocksDB (docs/design.md, data model; chosen by
// bench/storage_bench.cc, see docs/decisions.md).
enum class ExtentLayout : uint8_t {
  // In SST data blocks with XXH3 block checksums (verified when a block is read from a
  // file) and a large block cache holding them uncompressed.
  kSstBlocks = 0,
  // In RocksDB's integrated blob files, with a blob cache. Debian's RocksDB verifies blob
  // CRC32C in software (~0.8 GB/s), so reads turn RocksDB's checks off and each extent
  // carries an XXH3-64 of its bytes, checked on every read.
  kBlobFiles = 1,
};

// How the store reads the KV engine's layer slices (ReadSlices, src/rocks/rocks_slices.cc; see
// bench/storage_bench.cc for the measurements).
enum class SliceReadMode : uint8_t {
  kAuto = 0,     // the measured best for the slice count and size
  kSerialGet,    // one Get per extent on the calling thread
  kMultiGet,     // batched MultiGet on the calling thread
  kParallelGet,  // one Get per extent, slices spread over the read_threads pool
};

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
  // Threads that serve layer-slice reads and other parallel reads (the calling thread works too);
  // 0 reads on the calling thread only.
  // Default: 4
  uint32_t read_threads = 4;
  // Where extent values live.
  // Default: kSstBlocks (measured: see docs/decisions.md, "Extent layout")
  ExtentLayout extent_layout = ExtentLayout::kSstBlocks;
  // How layer-slice reads (ReadSlices) fetch extents.
  // Default: kAuto
  SliceReadMode slice_read_mode = SliceReadMode::kAuto;
  // A streaming writer flushes its extents to RocksDB (unsynced, invisible until Commit)
  // whenever this many bytes are buffered: the bound on a writer's memory beyond one
  // extent. Objects that fit stay in memory and commit as one synced batch.
  // Default: 8 MiB
  uint64_t write_batch_bytes = 8ull << 20;
  // After this many bytes of deleted or overwritten objects a background compaction of
  // the extent key range they occupied reclaims their space; 0 leaves it to RocksDB's own
  // compactions.
  // Default: 256 MiB
  uint64_t reclaim_after_bytes = 256ull << 20;
  // The KV-cache descriptor calls: Θ, the store's UCX data plane, chunk-PUT commits (kv.h).
  // Default: KvOptions{}
  KvOptions kv;
  Status Validate() const;
};

// Reads the [storage] and [kv] tables (keys as in conf/storage-server.toml; [kv] maps
// KvOptions field by field) into *options, leaving absent keys unchanged. kInvalidArgument
// naming the key on a bad value.
Status ApplyConfig(const oc::Config& config, StoreOptions* options);

}  // namespace oc::storage
