#pragma once
// Keys of extent records: big-endian (data id, extent index), 16 bytes, so that the
// extents of one object version sort together and in order, and every extent of a data id
// lies in the half-open key range [ExtentRangeBegin(id), ExtentRangeEnd(id)) that one
// DeleteRange frees (docs/design.md, data model). Pure functions, thread-safe.

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace oc::storage {

inline constexpr size_t kExtentKeyBytes = 16;

using ExtentKey = std::array<char, kExtentKeyBytes>;

struct ExtentId {
  uint64_t data_id = 0;
  uint64_t index = 0;
};

ExtentKey EncodeExtentKey(uint64_t data_id, uint64_t index);
// nullopt unless `key` is exactly kExtentKeyBytes long.
std::optional<ExtentId> DecodeExtentKey(std::string_view key);
// First key of data id `data_id` (its extent 0).
ExtentKey ExtentRangeBegin(uint64_t data_id);
// First key past every extent of `data_id`. REQUIRES: data_id < UINT64_MAX.
ExtentKey ExtentRangeEnd(uint64_t data_id);

}  // namespace oc::storage
