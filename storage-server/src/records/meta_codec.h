#pragma once
// The records a store keeps beside its bytes, and their binary encoding (little-endian
// fixed-width integers, u32-length-prefixed strings, a leading format version byte). Shared
// by both backends: RocksStore keeps them in column families, RadosStore in omap values of its
// index shards. Format 1 is RocksDB's; format 2 adds each segment's writer (RADOS version
// ids, Segment::writer) and is written only when a segment has one. Formats 3 and 4 are 1 and 2
// followed by an extension block (a u32 count of fields, each a u8 field id and a
// u32-length-prefixed value; ids this code does not know are skipped), written only when an
// object record has an extension field set, so a record without one keeps its old bytes.
// Extension fields: 1 the completed upload id, 2 the object's tags (ObjectMeta::tags). An
// upload record is format 1, or format 3 (1 plus the same extension block: field 1 its tags)
// when it has tags, or field 2 its checksum algorithm's header, or field 3 "FULL_OBJECT" when
// its checksum type is (absent: COMPOSITE). A part record is format 1 or 2,
// or 3 or 4 (1 or 2 plus the extension block: field 1 its checksum) when it has a checksum.
// Decoding reads all four, checks every length against the record's size and
// returns kCorruption on anything malformed. Pure functions, thread-safe.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "oc/common/result.h"
#include "oc/storage/types.h"

namespace oc::storage {

// Segment flag: every extent value ends with an 8-byte little-endian XXH3-64 of the bytes
// before it (extents written under ExtentLayout::kBlobFiles, whose RocksDB checksum
// verification is off on reads).
inline constexpr uint8_t kSegmentExtentHash = 1;
inline constexpr size_t kExtentHashBytes = 8;

// A run of bytes stored as extents under one data id: extent i holds bytes
// [i*extent_bytes, min(size, (i+1)*extent_bytes)) of the segment. In RADOS an extent is one
// data object and (writer, data_id) is the version id naming them (src/rados/rados_keys.h).
struct Segment {
  uint64_t data_id = 0;
  uint64_t size = 0;
  uint64_t extent_bytes = 0;
  uint8_t flags = 0;
  uint64_t writer = 0;  // RADOS: the writing process's random id; 0 in RocksDB
};

// The value of an object's metadata record: what HEAD returns plus where the bytes are.
// A single PUT has one segment; a completed multipart upload has one per part, in order.
struct ObjectRecord {
  ObjectMeta meta;
  std::vector<Segment> segments;
  // Extension field 1: the multipart upload this object was completed from ("" for a PUT or
  // a copy), so a retried CompleteMultipartUpload of it answers as the first did
  // (docs/decisions/s3-compat-bucket-delete-multipart-parts.md).
  std::string completed_upload_id;
};

struct BucketRecord {
  std::string owner;
  int64_t created_unix_ms = 0;
};

// An in-progress multipart upload: the options its completed object will carry.
struct UploadRecord {
  std::string content_type;
  std::vector<std::pair<std::string, std::string>> user_meta;
  std::vector<std::pair<std::string, std::string>> headers;
  uint64_t extent_bytes = 0;
  std::optional<ChunkShape> chunk;
  int64_t initiated_unix_ms = 0;
  Tags tags;  // extension field 1 (x-amz-tagging on CreateMultipartUpload)
  // Extension field 2: PutOptions::upload_checksum_header ("" for none).
  std::string checksum_header;
  // Extension field 3: PutOptions::upload_checksum_type, written only when kFullObject.
  ChecksumType checksum_type = ChecksumType::kComposite;
};

struct PartRecord {
  Segment segment;
  std::array<std::byte, 16> md5{};
  int64_t mtime_unix_ms = 0;
  ObjectChecksum checksum;  // extension field 1, written only when set
};

std::string EncodeObjectRecord(const ObjectRecord& record);
Result<ObjectRecord> DecodeObjectRecord(std::string_view bytes);
std::string EncodeBucketRecord(const BucketRecord& record);
Result<BucketRecord> DecodeBucketRecord(std::string_view bytes);
std::string EncodeUploadRecord(const UploadRecord& record);
Result<UploadRecord> DecodeUploadRecord(std::string_view bytes);
std::string EncodePartRecord(const PartRecord& record);
Result<PartRecord> DecodePartRecord(std::string_view bytes);

}  // namespace oc::storage
