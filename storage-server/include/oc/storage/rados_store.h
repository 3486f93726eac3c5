#pragma once
// The RADOS Store: objects in a Ceph RADOS pool through librados, with the KV engine and its
// UCX data plane in this process (target oc_storage_rados; src/rados/, docs/design.md "RADOS
// mapping"). Any number of processes may open the same pool and namespace and serve the same
// buckets. Most callers use OpenStore (open_store.h), which picks the backend from the options.
// Thread safety: the returned Store is thread-safe (store.h).

#include <memory>

#include "oc/common/result.h"
#include "oc/storage/options.h"
#include "oc/storage/store.h"

namespace oc::storage {

// Connects to the cluster options.rados names and opens its pool and namespace (RocksDB
// fields are ignored). kInvalidArgument for bad options; kNotFound naming rados.conf_file
// when the configuration cannot be read, rados.pool when the pool does not exist (and
// create_pool is off); kUnavailable naming rados.conf_file when no monitor answered within
// connect_timeout.
Result<std::unique_ptr<Store>> OpenRadosStore(const StoreOptions& options);

}  // namespace oc::storage
