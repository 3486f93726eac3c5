#include "oc/storage/open_store.h"

#include "oc/storage/local_store.h"
#ifdef OC_WITH_RADOS
#include "oc/storage/rados_store.h"
#endif

namespace oc::storage {

Result<std::unique_ptr<Store>> OpenStore(const StoreOptions& options) {
  switch (options.backend) {
    case StorageBackend::kRocksDb:
      return OpenLocalStore(options);
    case StorageBackend::kRados:
#ifdef OC_WITH_RADOS
      return OpenRadosStore(options);
#else
      return Status(Code::kUnimplemented, Subject::kNone, "storage.backend",
                    "this build has no RADOS backend (built with OC_WITH_RADOS=OFF)");
#endif
  }
  return Status::InvalidArgument("storage.backend", "unknown backend");
}

bool IsStoreConfigError(const StoreOptions& options, const Status& status) {
  if (options.backend != StorageBackend::kRados || status.ok()) {
    return false;
  }
  return status.field().starts_with("rados.") || status.field() == "storage.backend";
}

}  // namespace oc::storage
