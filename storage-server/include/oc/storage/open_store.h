#pragma once
// OpenStore: the local store the options name (StoreOptions::backend: RocksDB in process, or a
// Ceph RADOS pool through librados), with the KV engine and its UCX data plane composed over
// it in this process. What `objectcache serve`, oc-storage-server, tests and benchmarks call
// (target oc_storage_open); the only way to open a backend as a Store.
// Thread safety: the returned Store is thread-safe (store.h).

#include <memory>

#include "oc/common/result.h"
#include "oc/storage/options.h"
#include "oc/storage/store.h"

namespace oc::storage {

// Opens the backend options.backend names and composes the KV engine over it.
// RocksDB: opens (creating if needed) the database in options.data_dir; kIOError if the
// directory cannot be used, kInvalidArgument for bad options. Recovers after a crash: objects
// whose writes were not committed leave nothing visible and their space is freed.
// RADOS: connects to the cluster options.rados names and opens its pool and namespace (the
// RocksDB fields are ignored). kInvalidArgument for bad options; kNotFound naming
// rados.conf_file when the configuration cannot be read, rados.pool when the pool does not
// exist (and create_pool is off); kUnavailable naming rados.conf_file when no monitor answered
// within connect_timeout. kUnimplemented in a build without librados (OC_WITH_RADOS=OFF).
Result<std::unique_ptr<Store>> OpenStore(const StoreOptions& options);

// True when the error came from reaching the store's cluster or pool (a startup
// configuration error: the binaries exit 2 on it), not from the engine.
bool IsStoreConfigError(const StoreOptions& options, const Status& status);

}  // namespace oc::storage
