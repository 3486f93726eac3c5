#pragma once
// Where a ByteRange (types.h) falls in one version of an object: the rule both backends apply
// when they open a reader (Store::Get), so a range or a part number means the same bytes on
// RocksDB and RADOS; and where an object offset lies in the version's segments (the extent on
// RocksDB, the data object on RADOS), for both backends' readers. Pure functions, thread-safe.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "oc/common/result.h"
#include "oc/storage/types.h"
#include "records/meta_codec.h"

namespace oc::storage {

struct ResolvedRange {
  uint64_t offset = 0;
  uint64_t length = 0;
};

// The bytes of `record` that `range` names (store.h Store::Get): a suffix is clamped to the
// size; an offset range is clamped at the end and is kOutOfRange/kRange if it starts at or past
// the end of a non-empty object; any range of an empty object is empty. A part number selects
// that part's segment of a completed multipart upload (or the whole of any other object for
// part 1): kOutOfRange/kPart, field "partNumber", past the part count.
Result<ResolvedRange> ResolveRange(const ObjectRecord& record, const ByteRange& range);

// Where byte `offset` of an object lies: segment index, extent index in it (a RADOS data
// object), offset in that extent.
struct ExtentPos {
  size_t segment = 0;
  uint64_t extent = 0;
  uint64_t within = 0;
};
// nullopt when `segments` end at or before `offset` (a record whose segments do not cover its
// size). Empty segments are passed over.
std::optional<ExtentPos> LocateExtent(std::span<const Segment> segments, uint64_t offset);

// Bytes of extent `index` of `segment`: extent_bytes, or less for the segment's last extent.
uint64_t ExtentDataBytes(const Segment& segment, uint64_t index);

}  // namespace oc::storage
