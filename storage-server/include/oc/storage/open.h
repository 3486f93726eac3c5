#pragma once
// Factories for the two Store implementations. The gateway names only these.

#include <memory>

#include "oc/common/result.h"
#include "oc/storage/options.h"
#include "oc/storage/store.h"

namespace oc::storage {

// Opens (creating if needed) the RocksDB store in options.data_dir. kIOError if the
// directory cannot be used, kInvalidArgument for bad options. Recovers after a crash:
// objects whose writes were not committed leave nothing visible and their space is freed.
Result<std::unique_ptr<Store>> OpenLocalStore(const StoreOptions& options);

// A Store that forwards every call over the storage RPC. Connects lazily; kUnavailable
// from calls while a server is unreachable.
Result<std::unique_ptr<Store>> ConnectRemoteStore(const RemoteStoreOptions& options);

}  // namespace oc::storage
