#pragma once
// OC_CHECK(cond): an always-on invariant check for breaches that would corrupt data or
// memory. Never used on wire input, which gets a Status instead. Prints the failed
// condition and location, then aborts.

namespace oc::internal {
[[noreturn]] void CheckFailed(const char* cond, const char* file, int line);
}  // namespace oc::internal

#define OC_CHECK(cond)                                        \
  do {                                                        \
    if (!(cond)) [[unlikely]] {                               \
      ::oc::internal::CheckFailed(#cond, __FILE__, __LINE__); \
    }                                                         \
  } while (0)
