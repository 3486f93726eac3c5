#include "oc/storage/open_store.h"

#include <string_view>
#include <utility>

#include "backend.h"
#include "backend_registry.h"
#include "cache/cache_store.h"
#include "composed_store.h"
#include "quota/quota_store.h"

namespace oc::storage {
namespace {

// storage.backend's name -> its opener, one entry per row of backends.def.
struct Opener {
  std::string_view name;
  Result<std::unique_ptr<Backend>> (*open)(const StoreOptions&);
};
constexpr Opener kOpeners[] = {
#define OC_BACKEND(id, name, folder, placement, options, summary) {name, &Open##id##Backend},
#include "backends.def"
#undef OC_BACKEND
};

Result<std::unique_ptr<Backend>> OpenBackend(const StoreOptions& options) {
  for (const Opener& o : kOpeners) {
    if (o.name == options.backend) {
      return o.open(options);
    }
  }
  return Status::InvalidArgument("storage.backend", "must be " + BackendNames());
}

}  // namespace

Result<std::unique_ptr<Store>> OpenStore(const StoreOptions& options) {
  OC_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, OpenBackend(options));
  // The cache layer asks the backend whether other servers share its buckets (a shared
  // identity, as the quota layer's recount) and whether this one leads their maintenance; the
  // backend lives as long as the cache layer over it.
  cache::CacheRole role;
  role.shared = !backend->identity().fsid.empty();
  role.is_leader = [b = backend.get()] { return b->IsMaintenanceLeader(); };
  // The cache layer (src/cache/cache_store.h) over the composed store, when [cache] names
  // cache buckets, and the quota layer (src/quota/quota_store.h) over that when [quota] names
  // quota buckets: both above the seam, so every backend gets them. Their buckets never
  // overlap (StoreOptions::Validate), so the order does not matter.
  OC_ASSIGN_OR_RETURN(std::unique_ptr<Store> store,
                      cache::ComposeCache(ComposeKvEngine(std::move(backend), options.kv),
                                          options.cache, std::move(role)));
  if (!options.quota.buckets.empty()) {  // [quota]: docs/decisions/bucket-quotas.md
    return ComposeQuotaStore(std::move(store), options.quota);
  }
  return store;
}

bool IsStoreConfigError(const StoreOptions& options, const Status& status) {
  const BackendInfo* backend = FindBackend(options.backend);
  if (backend == nullptr || status.ok()) {
    return false;
  }
  // A backend names its own table's keys when the cluster, pool or file they point at cannot
  // be used; RocksDB's table is [storage], whose keys it never names at open.
  const std::string_view field = status.field();
  return field == "storage.backend" ||
         (backend->options_table != "storage" && field.starts_with(backend->options_table) &&
          field.substr(backend->options_table.size()).starts_with("."));
}

}  // namespace oc::storage
