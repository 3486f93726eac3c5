#include "rocks/extent_io.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack

#include <algorithm>
#include <cstring>

#include "oc/common/check.h"
#include "rocks/extent_key.h"
#include "rocks/rocks_store.h"
#include "rocks/xxh3.h"

namespace oc::storage {
namespace {

// The fused copy-and-hash works in pieces that stay in L2 between the copy and the hash.
constexpr uint64_t kHashPieceBytes = 128 << 10;

uint64_t StoredHash(const rocksdb::Slice& stored) {
  return GetLittleEndian64(
      reinterpret_cast<const std::byte*>(stored.data() + stored.size() - kExtentHashBytes));
}

Status HashMismatch() { return Status::Corruption("extent hash mismatch"); }

}  // namespace

uint64_t ExtentHash(ByteSpan data) { return XXH3_64bits(data.data(), data.size()); }

uint64_t StoredExtentBytes(const Segment& segment, uint64_t index) {
  if ((segment.flags & kSegmentDataFile) != 0) {
    return kLocatorBytes;
  }
  return ExtentDataBytes(segment, index) +
         ((segment.flags & kSegmentExtentHash) != 0 ? kExtentHashBytes : 0);
}

Status FetchExtent(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, const rocksdb::ReadOptions& ro,
                   const Segment& segment, uint64_t index, rocksdb::PinnableSlice* pinned) {
  const ExtentKey key = EncodeExtentKey(segment.data_id, index);
  pinned->Reset();
  rocksdb::Status s = db->Get(ro, cf, rocksdb::Slice(key.data(), key.size()), pinned);
  if (s.IsNotFound()) {
    return Status::Corruption("extent record missing");
  }
  OC_RETURN_IF_ERROR(FromRocks(s));
  if (pinned->size() != StoredExtentBytes(segment, index)) {
    return Status::Corruption("extent record has the wrong length");
  }
  return Status::Ok();
}

Status VerifyExtent(const Segment& segment, const rocksdb::Slice& stored) {
  if ((segment.flags & kSegmentExtentHash) == 0) {
    return Status::Ok();
  }
  const uint64_t n = stored.size() - kExtentHashBytes;
  if (XXH3_64bits(stored.data(), n) != StoredHash(stored)) {
    return HashMismatch();
  }
  return Status::Ok();
}

Status CopyFromExtent(const DataFiles& files, const Segment& segment, const rocksdb::Slice& stored,
                      uint64_t within, MutableByteSpan dest) {
  if ((segment.flags & kSegmentDataFile) != 0) {
    OC_ASSIGN_OR_RETURN(const ExtentLocator loc, DecodeLocator(stored.ToStringView()));
    return files.Read(loc, within, dest);
  }
  const bool hashed = (segment.flags & kSegmentExtentHash) != 0;
  const uint64_t data_bytes = stored.size() - (hashed ? kExtentHashBytes : 0);
  OC_CHECK(within + dest.size() <= data_bytes);
  if (!hashed) {
    std::memcpy(dest.data(), stored.data() + within, dest.size());
    return Status::Ok();
  }
  if (within != 0 || dest.size() != data_bytes) {
    OC_RETURN_IF_ERROR(VerifyExtent(segment, stored));
    std::memcpy(dest.data(), stored.data() + within, dest.size());
    return Status::Ok();
  }
  // Whole extent: copy a piece, hash it from the destination while it is still in cache.
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  for (uint64_t pos = 0; pos < data_bytes; pos += kHashPieceBytes) {
    const uint64_t n = std::min(kHashPieceBytes, data_bytes - pos);
    std::memcpy(dest.data() + pos, stored.data() + pos, n);
    XXH3_64bits_update(&state, dest.data() + pos, n);
  }
  if (XXH3_64bits_digest(&state) != StoredHash(stored)) {
    return HashMismatch();
  }
  return Status::Ok();
}

Result<ExtentView> ViewExtent(const DataFiles& files, const Segment& segment,
                              const rocksdb::Slice& stored, bool resident_only) {
  if ((segment.flags & kSegmentDataFile) != 0) {
    OC_ASSIGN_OR_RETURN(const ExtentLocator loc, DecodeLocator(stored.ToStringView()));
    return files.View(loc, resident_only);
  }
  OC_RETURN_IF_ERROR(VerifyExtent(segment, stored));
  const uint64_t n =
      stored.size() - ((segment.flags & kSegmentExtentHash) != 0 ? kExtentHashBytes : 0);
  return ExtentView{ByteSpan(reinterpret_cast<const std::byte*>(stored.data()), n), nullptr};
}

Status ReadObjectRange(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf,
                       const rocksdb::ReadOptions& ro, const DataFiles& files,
                       std::span<const Segment> segments, uint64_t offset, MutableByteSpan dest) {
  if (dest.empty()) {
    return Status::Ok();
  }
  const std::optional<ExtentPos> start = LocateExtent(segments, offset);
  if (!start.has_value()) {
    return Status::Corruption("record segments do not cover its size");
  }
  ExtentPos pos = *start;
  uint64_t done = 0;
  rocksdb::PinnableSlice pinned;
  while (done < dest.size()) {
    const Segment& seg = segments[pos.segment];
    if (pos.extent * seg.extent_bytes >= seg.size) {  // past this segment: next one
      ++pos.segment;
      pos.extent = 0;
      pos.within = 0;
      OC_CHECK(pos.segment < segments.size());
      continue;
    }
    OC_RETURN_IF_ERROR(FetchExtent(db, cf, ro, seg, pos.extent, &pinned));
    const uint64_t avail = ExtentDataBytes(seg, pos.extent) - pos.within;
    const uint64_t n = std::min<uint64_t>(avail, dest.size() - done);
    OC_RETURN_IF_ERROR(CopyFromExtent(files, seg, pinned, pos.within, dest.subspan(done, n)));
    done += n;
    ++pos.extent;
    pos.within = 0;
  }
  return Status::Ok();
}

}  // namespace oc::storage
