// OpenRadosBackend in a build without librados (OC_WITH_RADOS=OFF; rados/CMakeLists.txt):
// the registry row stays, and choosing it is a configuration error naming storage.backend.
#include "backend.h"

namespace oc::storage {

Result<std::unique_ptr<Backend>> OpenRadosBackend(const StoreOptions& /*options*/) {
  return Status(Code::kUnimplemented, Subject::kNone, "storage.backend",
                "this build has no RADOS backend (built with OC_WITH_RADOS=OFF)");
}

}  // namespace oc::storage
