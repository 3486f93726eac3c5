// The config tables of the local store (config_table.h): [storage] (StoreOptions), [rados]
// (RadosOptions) and [kv] (KvOptions). A key is one row here; ApplyConfig, the bounds
// Validate() checks, DescribeStore and the shipped conf files (oc-conf-gen) derive from them.
#include <string>

#include <fmt/core.h>

#include "backend_registry.h"
#include "oc/common/config.h"
#include "oc/common/config_table.h"
#include "oc/storage/config_tables.h"
#include "oc/storage/options.h"

namespace oc::storage {
namespace {

// Bounds of the [kv] table beyond what KvOptions::Validate checks by hand.
constexpr uint32_t kMaxKvStagingBuffers = 1024;
constexpr uint64_t kMaxKvStagingBufferBytes = 256ull << 20;
constexpr uint64_t kMaxKvPutReadBytes = 64ull << 20;

constexpr std::chrono::milliseconds kOneMs{1};
constexpr std::chrono::milliseconds kOneSecond{1000};

// A thread-count resolver (0 = from the cores) as the table's effective-value function.
template <uint32_t (*F)(uint32_t)>
uint64_t Wide(uint64_t configured) {
  return F(static_cast<uint32_t>(configured));
}

// storage.backend: one of backends.def's names; its doc lists the rows.
void AddBackendRow(ConfigTable<StoreOptions>* table) {
  std::vector<std::pair<std::string, std::string>> names;
  std::string doc = "Which engine holds the objects (storage-server/src/backends.def): ";
  for (size_t i = 0; i < std::size(kBackends); ++i) {
    const BackendInfo& b = kBackends[i];
    names.emplace_back(std::string(b.name), std::string(b.name));
    doc += fmt::format("{}\"{}\" ({})",
                       i == 0                          ? ""
                       : i + 1 == std::size(kBackends) ? " or "
                                                       : ", ",
                       b.name, b.summary);
  }
  doc +=
      ". Other backends ignore the RocksDB keys below, and data_dir then only holds "
      "objectcache's credentials file.";
  table->Enum("backend", &StoreOptions::backend, std::move(doc), std::move(names));
}

}  // namespace

const ConfigTable<StoreOptions>& StorageConfigTable() {
  static const ConfigTable<StoreOptions>* const table = [] {
    auto* t = new ConfigTable<StoreOptions>(
        "storage", "[storage]: the object store (storage-server/include/oc/storage/options.h).");
    AddBackendRow(t);
    (*t).Str("data_dir", &StoreOptions::data_dir,
             "Directory of the RocksDB database; created if absent.")
        .Size("default_extent_bytes", &StoreOptions::default_extent_bytes,
              "Bytes per extent record for objects written without a chunk layout (a KV chunk "
              "written with its layout uses one layer range instead). At most 64MiB.",
              1, kMaxExtentBytes)
        .Size("block_cache_bytes", &StoreOptions::block_cache_bytes,
              "RocksDB block cache (also the blob cache under extent_layout = \"blob\"): hot "
              "extents are served from it with no decoding and no checksum work.")
        .Bool("sync_writes", &StoreOptions::sync_writes,
              "Acknowledge a write only after the WAL is fsynced. false is for benchmarks only.")
        .Int("read_threads", &StoreOptions::read_threads,
             "Threads that serve ReadSlices (layer reads of many objects); 0 reads on the "
             "caller only.",
             0, 64)
        .Enum("extent_layout", &StoreOptions::extent_layout,
              "Where extent values live: \"data_files\" (appended once to files in "
              "data_dir/extents, an XXH3 per extent checked on every read; RocksDB keeps "
              "locators), \"sst\" (SST blocks, XXH3 block checksums, block cache) or \"blob\" "
              "(integrated blob files, an XXH3 per extent).",
              {{"data_files", ExtentLayout::kDataFiles},
               {"sst", ExtentLayout::kSstBlocks},
               {"blob", ExtentLayout::kBlobFiles}})
        .Enum("slice_read_mode", &StoreOptions::slice_read_mode,
              "How ReadSlices fetches extents: \"auto\", \"get\", \"multiget\" or \"parallel\".",
              {{"auto", SliceReadMode::kAuto},
               {"get", SliceReadMode::kSerialGet},
               {"multiget", SliceReadMode::kMultiGet},
               {"parallel", SliceReadMode::kParallelGet}})
        .Size("write_batch_bytes", &StoreOptions::write_batch_bytes,
              "A streaming writer flushes its extents (unsynced, invisible until commit) every "
              "this many bytes: its memory bound beyond one extent.",
              1, 1ull << 30)
        .Size("reclaim_after_bytes", &StoreOptions::reclaim_after_bytes,
              "Compact the extent key range after this many bytes of deleted or overwritten "
              "objects, to give their space back; 0 leaves it to RocksDB's own compactions.")
        .Size("data_file_bytes", &StoreOptions::data_file_bytes,
              "extent_layout = \"data_files\": a data file takes no more appends once this "
              "full.",
              64ull << 10, 64ull << 30)
        .Size("data_file_min_bytes", &StoreOptions::data_file_min_bytes,
              "extent_layout = \"data_files\": a PUT or part smaller than this (in one extent) "
              "stays in RocksDB (one sync instead of a data-file sync and then the WAL's); 0: "
              "none does.",
              0, kMaxExtentBytes)
        .Size("data_file_writeback_bytes", &StoreOptions::data_file_writeback_bytes,
              "extent_layout = \"data_files\": start the disk write of every this many bytes "
              "appended to a data file at once (durability stays with the commit's fdatasync); "
              "0: leave it to that sync.")
        .Int("data_file_garbage_percent", &StoreOptions::data_file_garbage_percent,
             "extent_layout = \"data_files\": the reclaimer rewrites a full data file (live "
             "extents copied, the file deleted) once this percentage of it is garbage. 1..100.",
             1, 100);
    return t;
  }();
  return *table;
}

const ConfigTable<RadosOptions>& RadosConfigTable() {
  static const ConfigTable<RadosOptions>* const table = [] {
    auto* t = new ConfigTable<RadosOptions>(
        "rados",
        "[rados]: the Ceph RADOS backend, used when storage.backend = \"rados\" (RadosOptions in "
        "storage-server/include/oc/storage/options.h; the operator's steps are in the README, "
        "\"Scale out on Ceph\"). Any number of servers may share one pool and namespace.");
    (*t).Str("conf_file", &RadosOptions::conf_file,
             "ceph.conf to read; \"\" lets librados search ($CEPH_CONF, /etc/ceph/ceph.conf, "
             "...).")
        .Str("client_name", &RadosOptions::client_name, "The cephx user this process is.")
        .Str("keyring", &RadosOptions::keyring,
             "Path of that user's keyring file; \"\" keeps what ceph.conf says. Never the key "
             "itself.",
             /*secret=*/true)
        .Str("pool", &RadosOptions::pool,
             "A replicated pool (erasure-coded pools have no omap). Must exist unless "
             "create_pool.")
        .Str("namespace", &RadosOptions::rados_namespace,
             "RADOS namespace within the pool; stores in different namespaces are independent.")
        .Bool("create_pool", &RadosOptions::create_pool,
              "Create the pool when missing: for development and test clusters only.")
        .Int("index_shards", &RadosOptions::index_shards,
             "Index shard objects of a new bucket (fixed for its life). Ceph warns above "
             "200,000 omap keys per object, so 32 shards hold about 6 million objects. "
             "1..65536.",
             1, 65536)
        .Size("object_extent_bytes", &RadosOptions::object_extent_bytes,
              "Bytes per data object of a plain object (64KiB..64MiB).", kMinRadosObjectBytes,
              kMaxRadosObjectBytes)
        .Size("max_chunk_object_bytes", &RadosOptions::max_chunk_object_bytes,
              "A KV chunk up to this size is one data object; larger ones split at layer ranges "
              "(64KiB..64MiB, and at most the cluster's osd_max_object_size).",
              kMinRadosObjectBytes, kMaxRadosObjectBytes)
        .Int("max_ops_in_flight", &RadosOptions::max_ops_in_flight,
             "RADOS read ops this process keeps in flight for descriptor reads, all requests "
             "together (one request at most half).",
             2, 65536)
        .Size("max_bytes_in_flight", &RadosOptions::max_bytes_in_flight,
              "Bytes those ops may read at once (64MiB..16GiB).", kMaxRadosObjectBytes, 16ull << 30)
        .Int("cluster_handles", &RadosOptions::cluster_handles,
             "librados cluster handles of this process, each with its own connection to every "
             "OSD; descriptor GETs' data reads go round-robin over them, everything else uses "
             "the first. 0 takes one per core this process may use (affinity and cgroup CPU "
             "quota), at most 4. At most 16.",
             0, kMaxRadosClusterHandles, &Wide<RadosClusterHandlesFor>)
        .Size("read_ahead_window_bytes", &RadosOptions::read_ahead_window_bytes,
              "A layerwise descriptor GET reads each chunk's layers ahead in windows of up to "
              "this many bytes (1, 2, 4, ... slices) instead of one op per slice; \"0\" reads "
              "slice by slice.",
              0, kMaxRadosObjectBytes)
        .Size("read_ahead_memory_bytes", &RadosOptions::read_ahead_memory_bytes,
              "Memory of all those windows together; \"0\" takes 1/16 of physical memory "
              "(64MiB..4GiB).",
              0, 1ull << 40)
        .Duration("op_timeout", &RadosOptions::op_timeout,
                  "Longest wait for one OSD or monitor op (Ceph's own default waits forever). At "
                  "least 1s.",
                  kOneSecond)
        .Duration("connect_timeout", &RadosOptions::connect_timeout,
                  "Longest wait for the cluster at startup; then the server exits 2 naming the "
                  "cluster.",
                  kOneSecond)
        .Bool("gc", &RadosOptions::gc,
              "This process may collect replaced versions' data (one collector per pool and "
              "namespace).")
        .Duration("gc_min_wait", &RadosOptions::gc_min_wait,
                  "Replaced or deleted versions' data objects are kept this long for readers that "
                  "opened them.")
        .Duration("orphan_min_age", &RadosOptions::orphan_min_age,
                  "Unreferenced data objects are removed by the scrub only once this old.");
    return t;
  }();
  return *table;
}

const ConfigTable<KvOptions>& KvConfigTable() {
  static const ConfigTable<KvOptions>* const table = [] {
    auto* t = new ConfigTable<KvOptions>(
        "kv",
        "[kv]: the KV-cache descriptor calls in the storage server (KvOptions in "
        "storage-server/include/oc/storage/kv.h): delivery mode, the server's own UCX data "
        "plane, and descriptor PUT commits.");
    (*t).Size("layerwise_threshold", &KvOptions::layerwise_threshold_bytes,
              "Θ: a descriptor GET whose matched payload M*L*S is at least this is delivered "
              "layerwise (layer by layer, layer-ready after each, paced by [scheduler]); "
              "smaller ones chunkwise (one batch). \"1\" forces layerwise for every request, a "
              "huge value (\"1TiB\") forces chunkwise.",
              1)
        .Str("data_plane_transports", &KvOptions::data_plane_transports,
             "UCX transports of the data plane, in UCX_TLS syntax (\"shm,cma\", \"tcp\", "
             "\"rc,ud\"...); \"\" leaves it to UCX's own configuration (the UCX_TLS "
             "environment variable, else everything).")
        .Str("data_plane_listen", &KvOptions::data_plane_listen,
             "Socket address of the data plane's UCX listener, \"host:port\" (\"[v6]:port\"); "
             "port 0 picks a free one. Clients connect to the address the discovery request "
             "(GET /{bucket}?objectcache& data-plane) reports, so use one they can reach; the "
             "default serves clients on this host.")
        .Int("data_plane_staging_buffers", &KvOptions::data_plane_staging_buffers,
             "Registered staging buffers shared by every data-plane delivery and pull: the "
             "bound on their staging memory together. 1..1024.",
             1, kMaxKvStagingBuffers)
        .Size("data_plane_staging_buffer_bytes", &KvOptions::data_plane_staging_buffer_bytes,
              "Bytes of one staging buffer: the largest single put or get. At most 256MiB, and "
              "buffers x bytes at most 4GiB.",
              1, kMaxKvStagingBufferBytes)
        .Duration("data_plane_timeout", &KvOptions::data_plane_timeout,
                  "Longest wait for a staging buffer, a remote read, or a request's writes at the "
                  "end.",
                  kOneMs)
        .Bool("data_plane_direct_writes", &KvOptions::data_plane_direct_writes,
              "Write a target in place when the client is on this host and UCX allocated its "
              "buffer in System V shared memory (UCX attaches it here): one copy from the block "
              "cache, no UCX message per write. false: every write goes over UCX.")
        .Bool("zero_copy", &KvOptions::zero_copy,
              "Send layer slices into a data-plane target straight from the block cache (pinned "
              "while in flight, bounded like the staging memory) instead of copying them into "
              "staging first.")
        .Size("put_read_bytes", &KvOptions::put_read_bytes,
              "Bytes a descriptor PUT reads from the request body per step. At most 64MiB.", 1,
              kMaxKvPutReadBytes)
        .Int("descriptor_threads", &KvOptions::descriptor_threads,
             "Descriptor GETs and PUTs moving bytes at once in this process (each holds one "
             "worker of the store's descriptor executor for its whole transfer). 0 sizes it "
             "from the cores this process may use (affinity and cgroup CPU quota): 16 per "
             "core, at least 16. At most 4096.",
             0, kMaxDescriptorThreads, &Wide<DescriptorThreadsFor>)
        .Int("admission_queue", &KvOptions::admission_queue,
             "Descriptor GETs that wait, in arrival order, for a worker when all are busy "
             "(holding no thread and no staging memory meanwhile). One more is answered 503 "
             "SlowDown saying the queue is full; PUTs and RPC calls never wait (started at "
             "once, or that answer). 0..65536.",
             0, kMaxAdmissionQueue)
        .Duration("admission_timeout", &KvOptions::admission_timeout,
                  "Longest a GET waits in that queue; one still waiting then is answered 503 "
                  "SlowDown saying it waited the admission timeout.",
                  kOneMs)
        .Int("assembly_threads", &KvOptions::assembly_threads,
             "Threads that read a descriptor GET's next staging buffers or pinned batches "
             "while its own thread hands earlier ones to the sink in order (shared by every "
             "GET): one large GET then reads on several cores. 0: one per usable core "
             "(affinity and cgroup CPU quota). At most 256.",
             0, kMaxAssemblyThreads, &Wide<AssemblyThreadsFor>)
        .Int("layers_in_flight", &KvOptions::layers_in_flight,
             "K: layers one GET reads ahead of its sink at most (and K layers' bytes): what a "
             "request stages or pins beyond what the sink has taken. 0: the usable cores, at "
             "least 2. At most 64.",
             0, kMaxLayersInFlight, &Wide<LayersInFlightFor>)
        .Int("data_plane_copy_threads", &KvOptions::data_plane_copy_threads,
             "Threads copying in-place writes into shared-memory targets, shared by every "
             "request. 0: one per usable core. At most 256.",
             0, kMaxAssemblyThreads, &Wide<CopyThreadsFor>);

    return t;
  }();
  return *table;
}

const ConfigTable<CacheOptions>& CacheConfigTable() {
  static const ConfigTable<CacheOptions>* const table = [] {
    auto* t = new ConfigTable<CacheOptions>(
        "cache",
        "[cache]: cache buckets (CacheOptions in storage-server/include/oc/storage/"
        "cache_options.h; docs/decisions/cache-buckets.md). Each bucket named here holds at most "
        "its capacity: eviction (whole prefix chains from their tails, plain objects least "
        "recently used) runs from the high watermark down to the low one; objects of other "
        "buckets are never evicted.");
    (*t).Custom(
            "buckets",
            "Cache buckets and their capacities in bytes, e.g. { kvcache = 68719476736 } (a size "
            "string such as \"64GiB\" works too). Capacity counts the stored objects' sizes.",
            [](const Config& c, const std::string& k, CacheOptions* o) {
              return c.ReadSizeTable(k, &o->buckets);
            },
            [](const CacheOptions& o) {
              std::string out = "{";
              for (size_t i = 0; i < o.buckets.size(); ++i) {
                const std::string& name = o.buckets[i].first;
                // Bucket names may hold dots, which a bare TOML key cannot.
                out += (i == 0 ? " " : ", ") +
                       (name.find('.') == std::string::npos ? name : config_text::Quote(name)) +
                       " = " + std::to_string(o.buckets[i].second);
              }
              return out + (o.buckets.empty() ? "}" : " }");
            })
        .Double("high_watermark", &CacheOptions::high_watermark,
                "Eviction starts when a cache bucket holds more than capacity x this. (0, 1].")
        .Double("low_watermark", &CacheOptions::low_watermark,
                "...and frees down to capacity x this. (0, high_watermark].")
        .Duration("put_wait", &CacheOptions::put_wait,
                  "A PUT that would take a cache bucket past its capacity waits at most this long "
                  "for eviction, then is refused 503 SlowDown with Retry-After, storing nothing.")
        .Size("eviction_batch_bytes", &CacheOptions::eviction_batch_bytes,
              "Most bytes one eviction batch deletes; eviction runs batch after batch down to the "
              "low watermark.",
              1)
        .Duration("snapshot_interval", &CacheOptions::snapshot_interval,
                  "How often each cache bucket's recency and prefix links are persisted (when "
                  "changed); a restart loses at most this much recency, never data.",
                  std::chrono::milliseconds(100))
        .Duration("sync_interval", &CacheOptions::sync_interval,
                  "Several servers over one RADOS pool: how often each re-lists its cache "
                  "buckets and a follower hands its hits to the leader (the GC leader, the only "
                  "server that evicts). Unused on RocksDB.",
                  std::chrono::milliseconds(10));
    return t;
  }();
  return *table;
}

Status ApplyConfig(const oc::Config& config, StoreOptions* options) {
  OC_RETURN_IF_ERROR(StorageConfigTable().Apply(config, options));
  OC_RETURN_IF_ERROR(RadosConfigTable().Apply(config, &options->rados));
  OC_RETURN_IF_ERROR(QuotaConfigTable().Apply(config, &options->quota));
  OC_RETURN_IF_ERROR(CacheConfigTable().Apply(config, &options->cache));
  return KvConfigTable().Apply(config, &options->kv);
}

std::string DescribeStore(const StoreOptions& options) {
  const BackendInfo* backend = FindBackend(options.backend);
  // The backend's own table, and [storage] in full unless the backend's keys live elsewhere.
  std::string out;
  if (backend != nullptr && backend->options_table == RadosConfigTable().name()) {
    out = fmt::format("storage.backend={} storage.data_dir={} {}", options.backend,
                      options.data_dir, RadosConfigTable().Describe(options.rados));
  } else {
    out = StorageConfigTable().Describe(options);
  }
  return out + " " + KvConfigTable().Describe(options.kv) + " " +
         QuotaConfigTable().Describe(options.quota) + " " +
         CacheConfigTable().Describe(options.cache);
}

}  // namespace oc::storage
