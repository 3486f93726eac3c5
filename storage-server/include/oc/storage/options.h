#pragma once
// Options of the local stores (OpenStore, open_store.h: RocksDB in process, or a Ceph RADOS
// pool through librados) with their KV engine's, and their config tables. Plain fields with
// defaults; Validate() checks them once at startup. The remote-store client's options are in
// remote_store.h.

#include <chrono>
#include <cstdint>
#include <string>

#include "oc/common/status.h"
#include "oc/storage/cache_options.h"
#include "oc/storage/kv.h"
#include "oc/storage/quota.h"

namespace oc {
class Config;
}  // namespace oc

namespace oc::storage {

// Largest extent record accepted; PutOptions::extent_bytes above it is refused before
// anything is allocated (a writer buffers one extent).
inline constexpr uint64_t kMaxExtentBytes = 64ull << 20;

// Where extent values live in RocksDB (docs/design.md, data model; chosen by
// bench/storage_bench.cc, see docs/decisions/storage-data-files-default.md).
enum class ExtentLayout : uint8_t {
  // In SST data blocks with XXH3 block checksums (verified when a block is read from a
  // file) and a large block cache holding them uncompressed.
  kSstBlocks = 0,
  // In RocksDB's integrated blob files, with a blob cache. Debian's RocksDB verifies blob
  // CRC32C in software (~0.8 GB/s), so reads turn RocksDB's checks off and each extent
  // carries an XXH3-64 of its bytes, checked on every read.
  kBlobFiles = 1,
  // Appended to data files beside the database (storage.data_dir/extents), each framed with
  // its XXH3-64; RocksDB holds only a locator per extent, so the bytes are written once,
  // synced in groups before the record naming them, read through the page cache, and
  // reclaimed by rewriting files that are mostly garbage (src/rocks/data_files.h).
  kDataFiles = 2,
};

// How the store reads the KV engine's layer slices (ReadSlices, src/rocks/rocks_slices.cc; see
// bench/storage_bench.cc for the measurements).
enum class SliceReadMode : uint8_t {
  kAuto = 0,     // the measured best for the slice count and size
  kSerialGet,    // one Get per extent on the calling thread
  kMultiGet,     // batched MultiGet on the calling thread
  kParallelGet,  // one Get per extent, slices spread over the read_threads pool
};

// Largest data object RadosStore writes; PutOptions::extent_bytes and the [rados] sizes are
// clamped to [kMinRadosObjectBytes, kMaxRadosObjectBytes] (Ceph 16's osd_max_object_size is
// 128 MiB).
inline constexpr uint64_t kMinRadosObjectBytes = 64ull << 10;
inline constexpr uint64_t kMaxRadosObjectBytes = 64ull << 20;

// The [rados] table: where the RADOS backend keeps its objects and how it talks to the cluster
// (docs/design.md, "RADOS mapping"). Only used when StoreOptions::backend is "rados".
struct RadosOptions {
  // ceph.conf to read; "" lets librados search ($CEPH_CONF, /etc/ceph/ceph.conf, ...).
  // Default: ""
  std::string conf_file;
  // The cephx user this process is ("client.<id>").
  // Default: "client.objectcache"
  std::string client_name = "client.objectcache";
  // Path of that user's keyring file; "" keeps what ceph.conf says. Never the key itself.
  // Default: ""
  std::string keyring;
  // The replicated pool holding buckets, indexes and data (omap needs a replicated pool).
  // Default: "objectcache"
  std::string pool = "objectcache";
  // RADOS namespace inside the pool: independent stores can share one pool (tests use one
  // per test).
  // Default: ""
  std::string rados_namespace;
  // Create the pool when it does not exist (development and tests only); otherwise a
  // missing pool is a startup error.
  // Default: false
  bool create_pool = false;
  // Index shard objects of a new bucket (fixed for the bucket's life): a commit writes one
  // shard, a listing merges them all. Ceph warns above 200,000 omap keys per object.
  // Default: 32
  uint32_t index_shards = 32;
  // Bytes per data object of a plain object; also the unit of reads and writes in flight.
  // Default: 4 MiB
  uint64_t object_extent_bytes = 4ull << 20;
  // A KV chunk (PutOptions::chunk) of at most this many bytes is one data object; a bigger
  // one is split at layer-range boundaries.
  // Default: 64 MiB
  uint64_t max_chunk_object_bytes = 64ull << 20;
  // RADOS operations this process keeps in flight for ReadSlices at most, all requests
  // together (one request at most half of it).
  // Default: 256
  uint32_t max_ops_in_flight = 256;
  // Bytes those operations may read at once.
  // Default: 64 MiB
  uint64_t max_bytes_in_flight = 64ull << 20;
  // librados cluster handles (rados_t) of this process. Descriptor GETs' data reads go
  // round-robin over all of them; everything else uses the first. Each handle has its own
  // messenger and so its own connection (and receive thread) per OSD: with one, every byte
  // read from an OSD passes one thread (docs/decisions/rados-read-handles.md). A handle whose
  // session dies (blocklisted, shut down) is left out and its reads go to another.
  // 0 sizes it from the cores this process may use: RadosClusterHandlesFor(0).
  // Default: 0 (one per core, at most 4)
  uint32_t cluster_handles = 0;
  // A layerwise descriptor GET reads each chunk's layers ahead in windows of up to this many
  // bytes (1, 2, 4, ... slices; src/kv/read_ahead.h), not one RADOS read per slice: the OSD's
  // cost is mostly per read below ~1 MiB (docs/decisions/rados-read-ahead.md).
  // 0 reads slice by slice.
  // Default: 1 MiB
  uint64_t read_ahead_window_bytes = 1ull << 20;
  // Memory of those windows, all requests of the process together; a request that finds too
  // little reads with smaller windows, or slice by slice. 0 sizes it from the machine:
  // ReadAheadMemoryFor(0).
  // Default: 0 (1/16 of physical memory, 64 MiB..4 GiB)
  uint64_t read_ahead_memory_bytes = 0;
  // Longest wait for one OSD or monitor operation (rados_osd_op_timeout and
  // rados_mon_op_timeout; Ceph's own default waits forever).
  // Default: 30 s
  std::chrono::milliseconds op_timeout{30'000};
  // Longest wait for the cluster at startup (client_mount_timeout; Ceph's default is 300 s).
  // Default: 10 s
  std::chrono::milliseconds connect_timeout{10'000};
  // This process may collect replaced versions' data (the GC; one leader per pool and
  // namespace at a time).
  // Default: true
  bool gc = true;
  // A replaced or deleted version's data objects are kept this long, so readers that opened
  // it keep reading it.
  // Default: 2 h
  std::chrono::milliseconds gc_min_wait{2 * 3600 * 1000};
  // The scrub removes unreferenced data objects only once they are this old (longer than any
  // upload takes).
  // Default: 24 h
  std::chrono::milliseconds orphan_min_age{24 * 3600 * 1000};
  Status Validate() const;
};

// Most cluster handles ([rados] cluster_handles) a process opens.
inline constexpr uint32_t kMaxRadosClusterHandles = 16;
// The handles for `configured` (RadosOptions::cluster_handles): itself when non-zero, else one
// per core this process may use (oc::UsableCores), at most 4.
uint32_t RadosClusterHandlesFor(uint32_t configured);

// The read-ahead memory for `configured` (RadosOptions::read_ahead_memory_bytes): itself when
// non-zero, else 1/16 of physical memory clamped to 64 MiB..4 GiB.
uint64_t ReadAheadMemoryFor(uint64_t configured);

struct StoreOptions {
  // The engine: a name of storage-server/src/backends.def ("rocksdb": RocksDB in data_dir, in
  // this process; "rados": a Ceph RADOS pool, the [rados] table). The RocksDB fields below are
  // ignored by other backends, except data_dir, which still holds objectcache's credentials.
  // Default: "rocksdb"
  std::string backend = "rocksdb";
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
  // Where extent values live. kDataFiles writes each byte once (write amplification 1.0
  // against 2.6 for SST blocks) at about twice the descriptor-PUT bandwidth and half the CPU
  // per large PUT, and reads no slower within the spread of an alternating run.
  // Default: kDataFiles (docs/decisions/storage-data-files-default.md)
  ExtentLayout extent_layout = ExtentLayout::kDataFiles;
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
  // extent_layout = data files: a data file takes no more appends once it holds this many
  // bytes (an extent that alone is larger still goes in one file).
  // Default: 1 GiB
  uint64_t data_file_bytes = 1ull << 30;
  // extent_layout = data files: an object or part smaller than this that fits in one extent
  // stays in RocksDB as under "sst" (one WAL sync per PUT, not a data-file sync and then a
  // WAL sync; docs/decisions/storage-data-files.md). Descriptor PUTs' chunks
  // always go to data files. 0 sends every object to the data files. (32 KiB: where the two
  // paths cost the same server CPU per PUT;
  // docs/decisions/storage-early-writeback-small-objects.md.)
  // Default: 32 KiB
  uint64_t data_file_min_bytes = 32ull << 10;
  // extent_layout = data files, sync_writes: once this many bytes were appended to a data
  // file since its last kick, the appender starts their write-back to the disk
  // (sync_file_range, SYNC_FILE_RANGE_WRITE) without waiting for it, so the disk writes a
  // large PUT while its later bytes still arrive and the commit's fdatasync waits for the
  // tail only (docs/decisions/storage-early-writeback-small-objects.md).
  // Durability is still the fdatasync's. 0 leaves write-back to that fdatasync and the kernel.
  // Default: 8 MiB
  uint64_t data_file_writeback_bytes = 8ull << 20;
  // extent_layout = data files: a full data file whose garbage (bytes no record names) is at
  // least this percentage of it is rewritten (its live extents copied to the current file)
  // and deleted, when the reclaimer runs (after reclaim_after_bytes of deletions).
  // Default: 50
  uint32_t data_file_garbage_percent = 50;
  // The KV-cache descriptor calls: Θ, the store's UCX data plane, chunk-PUT commits (kv.h).
  // Default: KvOptions{}
  KvOptions kv;
  // The [rados] table, used when backend is "rados".
  // Default: RadosOptions{}
  RadosOptions rados;
  // The [quota] table: bucket quotas, enforced above every backend (quota.h).
  // Default: QuotaOptions{} (no quota bucket)
  QuotaOptions quota;
  // The [cache] table: cache buckets, their capacities and watermarks (cache_options.h).
  // Default: CacheOptions{} (no cache bucket)
  CacheOptions cache;
  Status Validate() const;
};

// The effective settings for the start-up log line: storage.backend, the keys of [storage] the
// backend reads (all of them for RocksDB) and of its own table (backends.def).
std::string DescribeStore(const StoreOptions& options);

// Reads the [storage], [kv], [rados], [quota] and [cache] tables (keys as in
// conf/storage-server.toml; [kv] maps KvOptions field by field, [rados] RadosOptions) into
// *options, leaving absent keys unchanged. kInvalidArgument naming the key on a bad value.
Status ApplyConfig(const oc::Config& config, StoreOptions* options);

}  // namespace oc::storage
