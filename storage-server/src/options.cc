#include "oc/storage/options.h"

#include <algorithm>
#include <string>
#include <string_view>

#include <unistd.h>

#include <fmt/format.h>

#include "names.h"
#include "oc/common/config.h"
#include "oc/common/config_table.h"
#include "oc/common/cores.h"
#include "oc/storage/config_tables.h"

namespace oc::storage {
namespace {

// The staging memory of the [kv] table at most, all buffers together (the per-key bounds are
// the table's, config_tables.cc).
constexpr uint64_t kMaxKvStagingBytes = 4ull << 30;

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
  OC_RETURN_IF_ERROR(RadosConfigTable().Check(*this));
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
  return Status::Ok();
}

Status KvOptions::Validate() const {
  OC_RETURN_IF_ERROR(KvConfigTable().Check(*this));
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
  // The staging buffers are registered memory allocated at the first data-plane request.
  if (data_plane_staging_buffers * data_plane_staging_buffer_bytes > kMaxKvStagingBytes) {
    return Status::InvalidArgument("kv.data_plane_staging_buffer_bytes",
                                   "buffers x bytes must be at most 4GiB");
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

uint32_t RadosClusterHandlesFor(uint32_t configured) {
  // More handles than cores only add threads: each handle's receive thread needs a core.
  return configured != 0 ? configured : ThreadsPerCore(1, 1, 4);
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

uint64_t CacheOptions::CapacityOf(std::string_view bucket) const {
  for (const auto& [name, capacity] : buckets) {
    if (name == bucket) {
      return capacity;
    }
  }
  return 0;
}

Status CacheOptions::Validate() const {
  OC_RETURN_IF_ERROR(CacheConfigTable().Check(*this));
  for (const auto& [name, capacity] : buckets) {
    if (!ValidateBucketName(name).ok() || name == kCacheStateBucket) {
      return Status::InvalidArgument("cache.buckets",
                                     "\"" + name + "\" is not a valid bucket name for a cache");
    }
    if (capacity == 0) {
      return Status::InvalidArgument("cache.buckets",
                                     "the capacity of \"" + name + "\" must be more than 0 bytes");
    }
  }
  // Written so that NaN fails too.
  if (!(high_watermark > 0 && high_watermark <= 1)) {
    return Status::InvalidArgument("cache.high_watermark", "must be in (0, 1]");
  }
  if (!(low_watermark > 0 && low_watermark <= high_watermark)) {
    return Status::InvalidArgument("cache.low_watermark", "must be in (0, high_watermark]");
  }
  return Status::Ok();
}

Status StoreOptions::Validate() const {
  OC_RETURN_IF_ERROR(StorageConfigTable().Check(*this));
  if (data_dir.empty()) {
    return Status::InvalidArgument("storage.data_dir", "must not be empty");
  }
  if (write_batch_bytes < default_extent_bytes) {
    return Status::InvalidArgument("storage.write_batch_bytes",
                                   "must be default_extent_bytes..1GiB");
  }
  OC_RETURN_IF_ERROR(kv.Validate());
  OC_RETURN_IF_ERROR(quota.Validate());
  OC_RETURN_IF_ERROR(cache.Validate());
  // A cache bucket bounds itself by eviction; a quota refuses writes: one bucket cannot be both.
  for (const auto& [name, capacity] : cache.buckets) {
    if (quota.buckets.contains(name)) {
      return Status::InvalidArgument(
          Config::SubKey("quota.buckets", name),
          fmt::format("bucket {} is also a cache bucket ([cache] buckets): a cache bucket is "
                      "bounded by its capacity, not by a quota",
                      name));
    }
  }
  // Every backend's table is checked, the unused ones too: a bad value is an error even
  // before the backend that reads it is chosen.
  return rados.Validate();
}

}  // namespace oc::storage
