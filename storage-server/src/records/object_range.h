#pragma once
// Where a ByteRange (types.h) falls in one version of an object: the rule both backends apply
// when they open a reader (Store::Get), so a range or a part number means the same bytes on
// RocksDB and RADOS. Pure functions, thread-safe.

#include <cstdint>

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

}  // namespace oc::storage
