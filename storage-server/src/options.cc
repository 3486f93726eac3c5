#include "oc/storage/options.h"

#include <algorithm>
#include <string>
#include <string_view>

#include <unistd.h>

#include <fmt/core.h>

#include "backend_registry.h"
#include "oc/common/config.h"
#include "oc/common/cores.h"
#include "oc/storage/types.h"

namespace oc::storage {
namespace {

// Bounds of the [kv] table beyond KvOptions::Validate's (which rejects zeros).
constexpr uint32_t kMaxKvStagingBuffers = 1024;
constexpr uint64_t kMaxKvStagingBufferBytes = 256ull << 20;
constexpr uint64_t kMaxKvStagingBytes = 4ull << 30;
constexpr uint64_t kMaxKvPutReadBytes = 64ull << 20;

// The [kv] table (conf/storage-server.toml, conf/objectcache.toml): KvOptions field by field.
// The key names are those KvOptions::Validate names in its errors.
Status ApplyKvConfig(const oc::Config& config, KvOptions* kv) {
  OC_RETURN_IF_ERROR(config.ReadSize("kv.layerwise_threshold", &kv->layerwise_threshold_bytes));
  OC_RETURN_IF_ERROR(config.Read("kv.data_plane_transports", &kv->data_plane_transports));
  OC_RETURN_IF_ERROR(config.Read("kv.data_plane_listen", &kv->data_plane_listen));
  OC_RETURN_IF_ERROR(config.Read("kv.data_plane_staging_buffers", &kv->data_plane_staging_buffers));
  OC_RETURN_IF_ERROR(
      config.ReadSize("kv.data_plane_staging_buffer_bytes", &kv->data_plane_staging_buffer_bytes));
  OC_RETURN_IF_ERROR(config.ReadDuration("kv.data_plane_timeout", &kv->data_plane_timeout));
  OC_RETURN_IF_ERROR(config.Read("kv.data_plane_direct_writes", &kv->data_plane_direct_writes));
  OC_RETURN_IF_ERROR(config.Read("kv.zero_copy", &kv->zero_copy));
  OC_RETURN_IF_ERROR(config.ReadSize("kv.put_read_bytes", &kv->put_read_bytes));
  OC_RETURN_IF_ERROR(config.Read("kv.descriptor_threads", &kv->descriptor_threads));
  OC_RETURN_IF_ERROR(config.Read("kv.admission_queue", &kv->admission_queue));
  OC_RETURN_IF_ERROR(config.ReadDuration("kv.admission_timeout", &kv->admission_timeout));
  OC_RETURN_IF_ERROR(config.Read("kv.assembly_threads", &kv->assembly_threads));
  OC_RETURN_IF_ERROR(config.Read("kv.layers_in_flight", &kv->layers_in_flight));
  OC_RETURN_IF_ERROR(config.Read("kv.data_plane_copy_threads", &kv->data_plane_copy_threads));
  return Status::Ok();
}

// The [rados] table (conf/storage-server.toml, conf/objectcache.toml): RadosOptions field by
// field.
Status ApplyRadosConfig(const oc::Config& config, RadosOptions* r) {
  OC_RETURN_IF_ERROR(config.Read("rados.conf_file", &r->conf_file));
  OC_RETURN_IF_ERROR(config.Read("rados.client_name", &r->client_name));
  OC_RETURN_IF_ERROR(config.Read("rados.keyring", &r->keyring));
  OC_RETURN_IF_ERROR(config.Read("rados.pool", &r->pool));
  OC_RETURN_IF_ERROR(config.Read("rados.namespace", &r->rados_namespace));
  OC_RETURN_IF_ERROR(config.Read("rados.create_pool", &r->create_pool));
  OC_RETURN_IF_ERROR(config.Read("rados.index_shards", &r->index_shards));
  OC_RETURN_IF_ERROR(config.ReadSize("rados.object_extent_bytes", &r->object_extent_bytes));
  OC_RETURN_IF_ERROR(config.ReadSize("rados.max_chunk_object_bytes", &r->max_chunk_object_bytes));
  OC_RETURN_IF_ERROR(config.Read("rados.max_ops_in_flight", &r->max_ops_in_flight));
  OC_RETURN_IF_ERROR(config.ReadSize("rados.max_bytes_in_flight", &r->max_bytes_in_flight));
  OC_RETURN_IF_ERROR(config.ReadSize("rados.read_ahead_window_bytes", &r->read_ahead_window_bytes));
  OC_RETURN_IF_ERROR(config.ReadSize("rados.read_ahead_memory_bytes", &r->read_ahead_memory_bytes));
  OC_RETURN_IF_ERROR(config.ReadDuration("rados.op_timeout", &r->op_timeout));
  OC_RETURN_IF_ERROR(config.ReadDuration("rados.connect_timeout", &r->connect_timeout));
  OC_RETURN_IF_ERROR(config.Read("rados.gc", &r->gc));
  OC_RETURN_IF_ERROR(config.ReadDuration("rados.gc_min_wait", &r->gc_min_wait));
  OC_RETURN_IF_ERROR(config.ReadDuration("rados.orphan_min_age", &r->orphan_min_age));
  return Status::Ok();
}

// RADOS object names and omap keys are C strings: no NUL, and printable names keep the
// cluster's tools (`rados ls`) readable.
bool PrintableName(std::string_view s) {
  for (const char c : s) {
    if (c < 0x21 || c > 0x7e) {
      return false;
    }
  }
  return true;
}

}  // namespace

Status RadosOptions::Validate() const {
  if (pool.empty() || !PrintableName(pool)) {
    return Status::InvalidArgument("rados.pool", "must be a non-empty printable name");
  }
  if (!PrintableName(rados_namespace)) {
    return Status::InvalidArgument("rados.namespace", "must be printable, without spaces");
  }
  if (client_name.empty() || !PrintableName(client_name)) {
    return Status::InvalidArgument("rados.client_name",
                                   "must be a printable cephx name such as client.objectcache");
  }
  if (index_shards == 0 || index_shards > 65536) {
    return Status::InvalidArgument("rados.index_shards", "must be 1..65536");
  }
  if (object_extent_bytes < kMinRadosObjectBytes || object_extent_bytes > kMaxRadosObjectBytes) {
    return Status::InvalidArgument("rados.object_extent_bytes", "must be 64KiB..64MiB");
  }
  if (max_chunk_object_bytes < kMinRadosObjectBytes ||
      max_chunk_object_bytes > kMaxRadosObjectBytes) {
    return Status::InvalidArgument("rados.max_chunk_object_bytes", "must be 64KiB..64MiB");
  }
  if (max_ops_in_flight < 2 || max_ops_in_flight > 65536) {
    return Status::InvalidArgument("rados.max_ops_in_flight", "must be 2..65536");
  }
  if (max_bytes_in_flight < kMaxRadosObjectBytes || max_bytes_in_flight > (16ull << 30)) {
    return Status::InvalidArgument("rados.max_bytes_in_flight", "must be 64MiB..16GiB");
  }
  if (read_ahead_window_bytes > kMaxRadosObjectBytes) {
    return Status::InvalidArgument("rados.read_ahead_window_bytes", "must be 0..64MiB");
  }
  if (read_ahead_memory_bytes > (1ull << 40)) {
    return Status::InvalidArgument("rados.read_ahead_memory_bytes", "must be at most 1TiB");
  }
  if (op_timeout.count() < 1000) {
    return Status::InvalidArgument("rados.op_timeout",
                                   "must be at least 1s (0 would wait forever)");
  }
  if (connect_timeout.count() < 1000) {
    return Status::InvalidArgument("rados.connect_timeout", "must be at least 1s");
  }
  if (gc_min_wait.count() < 0) {
    return Status::InvalidArgument("rados.gc_min_wait", "must not be negative");
  }
  if (orphan_min_age.count() < 0) {
    return Status::InvalidArgument("rados.orphan_min_age", "must not be negative");
  }
  return Status::Ok();
}

Status KvOptions::Validate() const {
  if (layerwise_threshold_bytes == 0) {
    return Status::InvalidArgument("kv.layerwise_threshold", "must be positive");
  }
  if (data_plane_staging_buffers == 0) {
    return Status::InvalidArgument("kv.data_plane_staging_buffers", "must be positive");
  }
  {
    // host:port with a decimal port (the host is resolved when the data plane opens).
    const size_t colon = data_plane_listen.rfind(':');
    const std::string_view port = colon == std::string::npos
                                      ? std::string_view()
                                      : std::string_view(data_plane_listen).substr(colon + 1);
    uint64_t value = 0;
    bool digits = !port.empty() && port.size() <= 5 && colon > 0;
    for (const char c : port) {
      digits = digits && c >= '0' && c <= '9';
      value = value * 10 + static_cast<uint64_t>(c - '0');
    }
    if (!digits || value > 65535) {
      return Status::InvalidArgument("kv.data_plane_listen", "must be host:port");
    }
  }
  if (data_plane_staging_buffer_bytes == 0) {
    return Status::InvalidArgument("kv.data_plane_staging_buffer_bytes", "must be positive");
  }
  if (data_plane_timeout.count() <= 0) {
    return Status::InvalidArgument("kv.data_plane_timeout", "must be positive");
  }
  if (put_read_bytes == 0) {
    return Status::InvalidArgument("kv.put_read_bytes", "must be positive");
  }
  if (descriptor_threads > kMaxDescriptorThreads) {
    return Status::InvalidArgument(
        "kv.descriptor_threads",
        "must be 0 (from the cores) .. " + std::to_string(kMaxDescriptorThreads));
  }
  if (admission_queue > kMaxAdmissionQueue) {
    return Status::InvalidArgument("kv.admission_queue",
                                   "must be 0.." + std::to_string(kMaxAdmissionQueue));
  }
  if (admission_timeout.count() <= 0) {
    return Status::InvalidArgument("kv.admission_timeout", "must be positive");
  }
  if (assembly_threads > kMaxAssemblyThreads) {
    return Status::InvalidArgument("kv.assembly_threads", "must be 0 (from the cores) .. " +
                                                              std::to_string(kMaxAssemblyThreads));
  }
  if (layers_in_flight > kMaxLayersInFlight) {
    return Status::InvalidArgument("kv.layers_in_flight", "must be 0 (from the cores) .. " +
                                                              std::to_string(kMaxLayersInFlight));
  }
  if (data_plane_copy_threads > kMaxAssemblyThreads) {
    return Status::InvalidArgument(
        "kv.data_plane_copy_threads",
        "must be 0 (from the cores) .. " + std::to_string(kMaxAssemblyThreads));
  }
  return Status::Ok();
}

uint32_t DescriptorThreadsFor(uint32_t configured) {
  if (configured != 0) {
    return configured;
  }
  return ThreadsPerCore(kDescriptorThreadsPerCore, kMinDescriptorThreads, kMaxDescriptorThreads);
}

uint32_t AssemblyThreadsFor(uint32_t configured) {
  return configured != 0 ? configured : ThreadsPerCore(1, 1, kMaxAssemblyThreads);
}

uint32_t LayersInFlightFor(uint32_t configured) {
  return configured != 0 ? configured : ThreadsPerCore(1, 2, kMaxLayersInFlight);
}

uint32_t CopyThreadsFor(uint32_t configured) {
  return configured != 0 ? configured : ThreadsPerCore(1, 1, kMaxAssemblyThreads);
}

BoundedExecutor::Options DescriptorExecutorOptions(uint32_t descriptor_threads,
                                                   uint32_t admission_queue,
                                                   std::chrono::milliseconds admission_timeout) {
  BoundedExecutor::Options o;
  o.threads = DescriptorThreadsFor(descriptor_threads);
  o.max_queued = admission_queue;
  o.queue_timeout = admission_timeout;
  o.field = "kv.descriptor_threads";
  o.thread_name = "oc-descriptor";
  o.start_all = true;  // a fixed pool: the server's thread count does not grow with load
  return o;
}

uint64_t ReadAheadMemoryFor(uint64_t configured) {
  if (configured != 0) {
    return configured;
  }
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  const uint64_t physical =
      pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
  return std::clamp<uint64_t>(physical / 16, 64ull << 20, 4ull << 30);
}

Status StoreOptions::Validate() const {
  if (data_dir.empty()) {
    return Status::InvalidArgument("storage.data_dir", "must not be empty");
  }
  if (default_extent_bytes == 0 || default_extent_bytes > kMaxExtentBytes) {
    return Status::InvalidArgument("storage.default_extent_bytes",
                                   "must be 1.." + std::to_string(kMaxExtentBytes));
  }
  if (read_threads > 64) {
    return Status::InvalidArgument("storage.read_threads", "must be 0..64");
  }
  if (write_batch_bytes < default_extent_bytes || write_batch_bytes > (1ull << 30)) {
    return Status::InvalidArgument("storage.write_batch_bytes",
                                   "must be default_extent_bytes..1GiB");
  }
  if (extent_layout != ExtentLayout::kSstBlocks && extent_layout != ExtentLayout::kBlobFiles &&
      extent_layout != ExtentLayout::kDataFiles) {
    return Status::InvalidArgument("storage.extent_layout", "unknown layout");
  }
  if (data_file_bytes < (64ull << 10) || data_file_bytes > (64ull << 30)) {
    return Status::InvalidArgument("storage.data_file_bytes", "must be 64KiB..64GiB");
  }
  if (data_file_min_bytes > kMaxExtentBytes) {
    return Status::InvalidArgument("storage.data_file_min_bytes",
                                   "must be 0.." + std::to_string(kMaxExtentBytes));
  }
  if (data_file_garbage_percent == 0 || data_file_garbage_percent > 100) {
    return Status::InvalidArgument("storage.data_file_garbage_percent", "must be 1..100");
  }
  OC_RETURN_IF_ERROR(kv.Validate());
  // Upper bounds for what the [kv] table can ask for: the staging buffers are registered
  // memory allocated at the first data-plane request.
  if (kv.data_plane_staging_buffers > kMaxKvStagingBuffers) {
    return Status::InvalidArgument("kv.data_plane_staging_buffers",
                                   "must be 1.." + std::to_string(kMaxKvStagingBuffers));
  }
  if (kv.data_plane_staging_buffer_bytes > kMaxKvStagingBufferBytes ||
      kv.data_plane_staging_buffers * kv.data_plane_staging_buffer_bytes > kMaxKvStagingBytes) {
    return Status::InvalidArgument("kv.data_plane_staging_buffer_bytes",
                                   "must be at most 256MiB, and buffers x bytes at most 4GiB");
  }
  if (kv.put_read_bytes > kMaxKvPutReadBytes) {
    return Status::InvalidArgument("kv.put_read_bytes", "must be at most 64MiB");
  }
  if (FindBackend(backend) == nullptr) {
    return Status::InvalidArgument("storage.backend", "must be " + BackendNames());
  }
  // Every backend's table is checked, the unused ones too: a bad value is an error even
  // before the backend that reads it is chosen.
  OC_RETURN_IF_ERROR(rados.Validate());
  return Status::Ok();
}

namespace {

std::string_view LayoutName(ExtentLayout layout) {
  switch (layout) {
    case ExtentLayout::kSstBlocks:
      return "sst";
    case ExtentLayout::kBlobFiles:
      return "blob";
    case ExtentLayout::kDataFiles:
      return "data_files";
  }
  return "?";
}

// The [storage] keys besides backend.
std::string DescribeStorageTable(const StoreOptions& o) {
  return fmt::format(
      "storage.data_dir={} storage.default_extent_bytes={} storage.block_cache_bytes={} "
      "storage.sync_writes={} storage.read_threads={} storage.extent_layout={} "
      "storage.slice_read_mode={} storage.write_batch_bytes={} storage.reclaim_after_bytes={}",
      o.data_dir, o.default_extent_bytes, o.block_cache_bytes, o.sync_writes, o.read_threads,
      LayoutName(o.extent_layout), static_cast<int>(o.slice_read_mode), o.write_batch_bytes,
      o.reclaim_after_bytes);
}

std::string DescribeRadosTable(const StoreOptions& o) {
  const RadosOptions& r = o.rados;
  return fmt::format(
      "rados.conf_file={} rados.client_name={} rados.keyring={} rados.pool={} "
      "rados.namespace={} rados.create_pool={} rados.index_shards={} "
      "rados.object_extent_bytes={} rados.max_chunk_object_bytes={} rados.max_ops_in_flight={} "
      "rados.max_bytes_in_flight={} rados.op_timeout_ms={} rados.connect_timeout_ms={}",
      r.conf_file, r.client_name, r.keyring.empty() ? "(ceph.conf)" : "(set)", r.pool,
      r.rados_namespace, r.create_pool, r.index_shards, r.object_extent_bytes,
      r.max_chunk_object_bytes, r.max_ops_in_flight, r.max_bytes_in_flight, r.op_timeout.count(),
      r.connect_timeout.count());
}

// The describer of each backend options table (backends.def's options column).
struct TableDescriber {
  std::string_view table;
  std::string (*describe)(const StoreOptions&);
};
constexpr TableDescriber kTableDescribers[] = {
    {"storage", &DescribeStorageTable},
    {"rados", &DescribeRadosTable},
};

}  // namespace

std::string DescribeStore(const StoreOptions& options) {
  const BackendInfo* backend = FindBackend(options.backend);
  std::string out = fmt::format("storage.backend={}", options.backend);
  if (backend == nullptr) {
    return out;
  }
  if (backend->options_table != "storage") {
    out += fmt::format(" storage.data_dir={}", options.data_dir);
  }
  for (const TableDescriber& d : kTableDescribers) {
    if (d.table == backend->options_table) {
      out += " " + d.describe(options);
    }
  }
  return out;
}

Status ApplyConfig(const oc::Config& config, StoreOptions* options) {
  std::string backend;
  OC_RETURN_IF_ERROR(config.Read("storage.backend", &backend));
  if (FindBackend(backend) != nullptr) {
    options->backend = std::move(backend);
  } else if (!backend.empty()) {
    return Status::InvalidArgument("storage.backend", "must be " + BackendNames());
  }
  OC_RETURN_IF_ERROR(ApplyRadosConfig(config, &options->rados));
  OC_RETURN_IF_ERROR(config.Read("storage.data_dir", &options->data_dir));
  OC_RETURN_IF_ERROR(
      config.ReadSize("storage.default_extent_bytes", &options->default_extent_bytes));
  OC_RETURN_IF_ERROR(config.ReadSize("storage.block_cache_bytes", &options->block_cache_bytes));
  OC_RETURN_IF_ERROR(config.Read("storage.sync_writes", &options->sync_writes));
  OC_RETURN_IF_ERROR(config.Read("storage.read_threads", &options->read_threads));
  OC_RETURN_IF_ERROR(config.ReadSize("storage.write_batch_bytes", &options->write_batch_bytes));
  OC_RETURN_IF_ERROR(config.ReadSize("storage.reclaim_after_bytes", &options->reclaim_after_bytes));
  std::string layout;
  OC_RETURN_IF_ERROR(config.Read("storage.extent_layout", &layout));
  if (layout == "sst") {
    options->extent_layout = ExtentLayout::kSstBlocks;
  } else if (layout == "blob") {
    options->extent_layout = ExtentLayout::kBlobFiles;
  } else if (layout == "data_files") {
    options->extent_layout = ExtentLayout::kDataFiles;
  } else if (!layout.empty()) {
    return Status::InvalidArgument("storage.extent_layout",
                                   "must be \"sst\", \"blob\" or \"data_files\"");
  }
  OC_RETURN_IF_ERROR(config.ReadSize("storage.data_file_bytes", &options->data_file_bytes));
  OC_RETURN_IF_ERROR(config.ReadSize("storage.data_file_min_bytes", &options->data_file_min_bytes));
  OC_RETURN_IF_ERROR(
      config.ReadSize("storage.data_file_writeback_bytes", &options->data_file_writeback_bytes));
  OC_RETURN_IF_ERROR(
      config.Read("storage.data_file_garbage_percent", &options->data_file_garbage_percent));
  OC_RETURN_IF_ERROR(ApplyKvConfig(config, &options->kv));
  std::string mode;
  OC_RETURN_IF_ERROR(config.Read("storage.slice_read_mode", &mode));
  if (mode == "auto") {
    options->slice_read_mode = SliceReadMode::kAuto;
  } else if (mode == "get") {
    options->slice_read_mode = SliceReadMode::kSerialGet;
  } else if (mode == "multiget") {
    options->slice_read_mode = SliceReadMode::kMultiGet;
  } else if (mode == "parallel") {
    options->slice_read_mode = SliceReadMode::kParallelGet;
  } else if (!mode.empty()) {
    return Status::InvalidArgument("storage.slice_read_mode",
                                   "must be auto, get, multiget or parallel");
  }
  return Status::Ok();
}

}  // namespace oc::storage
