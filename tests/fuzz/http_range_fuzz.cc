// Fuzzes the HTTP Range parser and its resolution: no crash on any header, and a resolved
// range always lies inside the object.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "oc/common/check.h"
#include "s3/http_range.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint64_t object_size = 0;
  if (size >= 8) {
    std::memcpy(&object_size, data, 8);
    data += 8;
    size -= 8;
    object_size %= uint64_t{1} << 48;
  }
  const std::string_view header(reinterpret_cast<const char*>(data), size);
  std::optional<oc::gateway::HttpRange> range = oc::gateway::ParseRangeHeader(header);
  if (range) {
    const oc::gateway::ResolvedRange r = oc::gateway::ResolveRange(*range, object_size);
    if (r.satisfiable) {
      OC_CHECK(r.length > 0);
      OC_CHECK(r.offset < object_size);
      OC_CHECK(r.length <= object_size - r.offset);
    }
  }
  return 0;
}
