#include "oc/storage/open_store.h"

#include <utility>

#include "backend.h"
#include "composed_store.h"

namespace oc::storage {
namespace {

Result<std::unique_ptr<Backend>> OpenBackend(const StoreOptions& options) {
  switch (options.backend) {
    case StorageBackend::kRocksDb:
      return OpenRocksBackend(options);
    case StorageBackend::kRados:
#ifdef OC_WITH_RADOS
      return OpenRadosBackend(options);
#else
      return Status(Code::kUnimplemented, Subject::kNone, "storage.backend",
                    "this build has no RADOS backend (built with OC_WITH_RADOS=OFF)");
#endif
  }
  return Status::InvalidArgument("storage.backend", "unknown backend");
}

}  // namespace

Result<std::unique_ptr<Store>> OpenStore(const StoreOptions& options) {
  OC_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, OpenBackend(options));
  return ComposeKvEngine(std::move(backend), options.kv);
}

bool IsStoreConfigError(const StoreOptions& options, const Status& status) {
  if (options.backend != StorageBackend::kRados || status.ok()) {
    return false;
  }
  return status.field().starts_with("rados.") || status.field() == "storage.backend";
}

}  // namespace oc::storage
