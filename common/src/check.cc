#include "oc/common/check.h"

#include <cstdio>
#include <cstdlib>

namespace oc::internal {

void CheckFailed(const char* cond, const char* file, int line) {
  std::fprintf(stderr, "OC_CHECK failed: %s at %s:%d\n", cond, file, line);
  std::fflush(stderr);
  std::abort();
}

}  // namespace oc::internal
