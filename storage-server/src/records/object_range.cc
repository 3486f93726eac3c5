#include "records/object_range.h"

#include <algorithm>
#include <string>

namespace oc::storage {

Result<ResolvedRange> ResolveRange(const ObjectRecord& record, const ByteRange& range) {
  const uint64_t size = record.meta.size;
  if (range.part_number > 0) {
    const uint32_t count = record.meta.parts_count;
    if (count == 0 || count != record.segments.size()) {
      // A single PUT (or a copy) is one part: S3 serves part 1 as the whole object.
      if (range.part_number == 1) {
        return ResolvedRange{0, size};
      }
      return Status(Code::kOutOfRange, Subject::kPart, "partNumber",
                    "the object has a single part");
    }
    if (range.part_number > count) {
      return Status(Code::kOutOfRange, Subject::kPart, "partNumber",
                    "the object has " + std::to_string(count) + " parts");
    }
    uint64_t offset = 0;
    for (uint32_t i = 0; i + 1 < range.part_number; ++i) {
      offset += record.segments[i].size;
    }
    return ResolvedRange{offset, record.segments[range.part_number - 1].size};
  }
  if (range.suffix) {
    const uint64_t length = std::min(range.length, size);
    return ResolvedRange{size - length, length};
  }
  if (size == 0) {
    return ResolvedRange{0, 0};
  }
  if (range.offset >= size) {
    return Status::OutOfRange("range starts at or past the end of the object");
  }
  return ResolvedRange{range.offset, std::min(range.length, size - range.offset)};
}

std::optional<ExtentPos> LocateExtent(std::span<const Segment> segments, uint64_t offset) {
  for (size_t i = 0; i < segments.size(); ++i) {
    if (offset < segments[i].size) {
      return ExtentPos{i, offset / segments[i].extent_bytes, offset % segments[i].extent_bytes};
    }
    offset -= segments[i].size;
  }
  return std::nullopt;
}

uint64_t ExtentDataBytes(const Segment& segment, uint64_t index) {
  const uint64_t start = index * segment.extent_bytes;
  return std::min(segment.extent_bytes, segment.size - start);
}

}  // namespace oc::storage
