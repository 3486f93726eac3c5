#include "rocks/extent_key.h"

#include "oc/common/bytes.h"
#include "oc/common/check.h"

namespace oc::storage {

ExtentKey EncodeExtentKey(uint64_t data_id, uint64_t index) {
  ExtentKey key;
  auto* out = reinterpret_cast<std::byte*>(key.data());
  PutBigEndian64(data_id, out);
  PutBigEndian64(index, out + 8);
  return key;
}

std::optional<ExtentId> DecodeExtentKey(std::string_view key) {
  if (key.size() != kExtentKeyBytes) {
    return std::nullopt;
  }
  const auto* in = reinterpret_cast<const std::byte*>(key.data());
  return ExtentId{GetBigEndian64(in), GetBigEndian64(in + 8)};
}

ExtentKey ExtentRangeBegin(uint64_t data_id) { return EncodeExtentKey(data_id, 0); }

ExtentKey ExtentRangeEnd(uint64_t data_id) {
  OC_CHECK(data_id != UINT64_MAX);
  return EncodeExtentKey(data_id + 1, 0);
}

}  // namespace oc::storage
