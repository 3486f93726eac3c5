#pragma once
// OpenStore: the local store the options name (StoreOptions::backend): RocksDB in process
// (OpenLocalStore, local_store.h) or a Ceph RADOS pool (OpenRadosStore, rados_store.h). What
// `objectcache serve` and oc-storage-server call (target oc_storage_open).
// Thread safety: the returned Store is thread-safe (store.h).

#include <memory>

#include "oc/common/result.h"
#include "oc/storage/options.h"
#include "oc/storage/store.h"

namespace oc::storage {

// Opens the backend options.backend names; its errors as OpenLocalStore's or OpenRadosStore's.
// kUnimplemented for kRados in a build without librados (OC_WITH_RADOS=OFF).
Result<std::unique_ptr<Store>> OpenStore(const StoreOptions& options);

// True when the error came from reaching the store's cluster or pool (a startup
// configuration error: the binaries exit 2 on it), not from the engine.
bool IsStoreConfigError(const StoreOptions& options, const Status& status);

}  // namespace oc::storage
