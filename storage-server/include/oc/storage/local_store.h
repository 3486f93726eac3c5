#pragma once
// The local Store: RocksDB in this process, with the KV engine and its UCX data plane
// (target oc_storage_rocks, which links oc_storage_kv; src/rocks/). What `objectcache serve`
// and oc-storage-server link.
// Thread safety: the returned Store is thread-safe (store.h).

#include <memory>

#include "oc/common/result.h"
#include "oc/storage/options.h"
#include "oc/storage/store.h"

namespace oc::storage {

// Opens (creating if needed) the RocksDB store in options.data_dir. kIOError if the
// directory cannot be used, kInvalidArgument for bad options. Recovers after a crash:
// objects whose writes were not committed leave nothing visible and their space is freed.
Result<std::unique_ptr<Store>> OpenLocalStore(const StoreOptions& options);

}  // namespace oc::storage
