#pragma once
// Reading object bytes out of extent records: locating the extent that holds an offset,
// fetching it pinned (no copy out of RocksDB's block or blob cache), checking its length
// and, for segments written with kSegmentExtentHash, its XXH3-64, and copying the wanted
// bytes into the caller's buffer: one copy per byte. For segments flagged kSegmentDataFile
// the record is a locator and the bytes come from the data files (data_files.h): read into
// the caller's buffer, or lent from the file's mapping, verified against the locator's hash.
// Thread-safe (no shared state).

#include <cstdint>
#include <span>
#include <vector>

#include <rocksdb/db.h>

#include "oc/common/bytes.h"
#include "oc/common/status.h"
#include "records/meta_codec.h"
#include "records/object_range.h"
#include "rocks/data_files.h"

namespace oc::storage {

// Locating an offset (ExtentPos, LocateExtent) and an extent's bytes without the hash trailer
// (ExtentDataBytes) are records/object_range.h's, shared with RADOS.
// Length of the record of extent `index` of `segment`: its bytes, with the hash trailer, or
// a locator.
uint64_t StoredExtentBytes(const Segment& segment, uint64_t index);

// Fetches extent `index` of `segment` into *pinned. kCorruption if it is absent or its
// length is not what the segment says.
Status FetchExtent(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, const rocksdb::ReadOptions& ro,
                   const Segment& segment, uint64_t index, rocksdb::PinnableSlice* pinned);

// Checks a fetched value's hash trailer when the segment has one. kCorruption on mismatch.
Status VerifyExtent(const Segment& segment, const rocksdb::Slice& stored);

// Copies dest.size() bytes from offset `within` of a fetched extent into dest, verifying
// the hash trailer when the segment has one (fused with the copy when the whole extent is
// copied), or reading them from the data files when `stored` is a locator.
// REQUIRES: within + dest.size() <= ExtentDataBytes.
Status CopyFromExtent(const DataFiles& files, const Segment& segment, const rocksdb::Slice& stored,
                      uint64_t within, MutableByteSpan dest);

// The verified bytes of a fetched extent: `stored` itself (without the trailer; no hold: the
// caller keeps `stored` pinned) or, for a locator, the data file's mapped bytes with a hold
// (`resident_only`: kUnavailable if they are not all in the page cache; DataFiles::View).
Result<ExtentView> ViewExtent(const DataFiles& files, const Segment& segment,
                              const rocksdb::Slice& stored, bool resident_only = false);

// Reads dest.size() bytes of the object made of `segments` from `offset` into dest.
// REQUIRES: offset + dest.size() <= object size.
Status ReadObjectRange(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf,
                       const rocksdb::ReadOptions& ro, const DataFiles& files,
                       std::span<const Segment> segments, uint64_t offset, MutableByteSpan dest);

// XXH3-64 of `data`, the hash trailer's value.
uint64_t ExtentHash(ByteSpan data);

}  // namespace oc::storage
