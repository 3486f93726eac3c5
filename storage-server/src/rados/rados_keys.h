#pragma once
// RADOS object names and omap keys of RadosStore, and the bucket registry record
// (docs/design.md, "RADOS mapping"). Everything lives in one pool and namespace:
//
//   oc.buckets                      omap: bucket name -> RadosBucketRecord
//   oc.idx.<bucket id>.<shard>      xattr oc.state = "live" | "deleting"; omap:
//                                   o/<key>  -> ObjectRecord (records/meta_codec.h, format 2)
//                                   g/<due ms>/<version> -> the replaced ObjectRecord (GC)
//                                   u/<escaped key> 01 01 <upload id> -> UploadRecord
//                                   m/<upload id>/<%05u part> -> PartRecord
//                                   l/lifecycle -> the bucket's lifecycle configuration
//                                   (shard 0 only; opaque bytes)
//   oc.d.<bucket id>.<writer>.<seq>.<extent>   bytes of one version's extent; xattrs
//                                   oc.key, oc.ver (for the orphan scrub)
//
// Ids are lowercase hex; a version id is (writer, seq): 64 random bits drawn when the store
// opens plus a counter. shard = XXH3_64(key) % index_shards. Object keys never hold NUL
// (names.h), so every name and omap key is a C string, as the C API needs.
// Pure, thread-safe.

#include <cstdint>
#include <string>
#include <string_view>

#include "oc/common/result.h"
#include "records/meta_codec.h"

namespace oc::storage::rados {

inline constexpr char kRegistryOid[] = "oc.buckets";
inline constexpr char kStateXattr[] = "oc.state";
inline constexpr char kStateLive[] = "live";
inline constexpr char kStateDeleting[] = "deleting";
inline constexpr char kKeyXattr[] = "oc.key";
inline constexpr char kVersionXattr[] = "oc.ver";
inline constexpr char kObjectPrefix[] = "o/";
inline constexpr char kGcPrefix[] = "g/";
inline constexpr char kUploadPrefix[] = "u/";
inline constexpr char kPartPrefix[] = "m/";
inline constexpr char kLifecycleOmapKey[] = "l/lifecycle";
inline constexpr char kGcLockOid[] = "oc.gc";
inline constexpr char kDataOidPrefix[] = "oc.d.";
inline constexpr char kIndexOidPrefix[] = "oc.idx.";

// What oc.buckets holds per bucket.
struct RadosBucketRecord {
  std::string owner;
  int64_t created_unix_ms = 0;
  uint64_t bucket_id = 0;
  uint32_t index_shards = 0;
};

std::string EncodeRadosBucketRecord(const RadosBucketRecord& record);
// kCorruption on a malformed record.
Result<RadosBucketRecord> DecodeRadosBucketRecord(std::string_view bytes);

std::string IndexOid(uint64_t bucket_id, uint32_t shard);
// The oid of extent `extent` of `segment` (its writer and data_id) in bucket `bucket_id`.
std::string DataOid(uint64_t bucket_id, const Segment& segment, uint64_t extent);
// "<writer>.<seq>", the value of the oc.ver xattr and the tail of a GC key.
std::string VersionId(const Segment& segment);
uint32_t ShardOf(std::string_view key, uint32_t shards);
inline std::string ObjectOmapKey(std::string_view key) {
  std::string k(kObjectPrefix);
  k.append(key);
  return k;
}
// g/<due unix ms, 16 hex digits>/<version id>: sorts by due time.
std::string GcOmapKey(int64_t due_unix_ms, const Segment& segment);
// Multipart uploads live in their key's shard. An upload's omap key is "u/", the object key
// with each 0x01 byte escaped as 01 02, then 01 01 and the upload id: keys never hold NUL, so
// 01 01 sorts before any continuation of the key and the order of (key, upload id) is kept
// (ListMultipartUploads merges shards in omap order).
std::string EscapeUploadName(std::string_view name);
std::string UploadOmapKey(std::string_view name, std::string_view upload_id);
// The object key and upload id of an upload omap key (without checking the id's form);
// false if `omap_key` is not one.
bool ParseUploadOmapKey(std::string_view omap_key, std::string* name, std::string* upload_id);
// "m/<upload id>/": the prefix of every part of one upload.
std::string PartOmapPrefix(std::string_view upload_id);
// "m/<upload id>/<part number, 5 decimal digits>": sorts by part number.
std::string PartOmapKey(std::string_view upload_id, uint32_t part_number);
// The upload id and part number of a part omap key; false if it is not one.
bool ParsePartOmapKey(std::string_view omap_key, std::string* upload_id, uint32_t* part_number);
// The due time of a GC omap key; false if it is not one.
bool ParseGcOmapKey(std::string_view omap_key, int64_t* due_unix_ms);
// The parts of a data object's oid (DataOid); false if `oid` is not one.
struct DataOidParts {
  uint64_t bucket_id = 0;
  uint64_t writer = 0;
  uint64_t seq = 0;
  uint64_t extent = 0;
};
bool ParseDataOid(std::string_view oid, DataOidParts* out);
// The bucket id of an index shard's oid (IndexOid); false if `oid` is not one.
bool ParseIndexOid(std::string_view oid, uint64_t* bucket_id);
// Number of data objects (extents) of a segment: ceil(size / extent_bytes).
inline uint64_t ExtentCount(const Segment& s) {
  return s.extent_bytes == 0 ? 0 : (s.size + s.extent_bytes - 1) / s.extent_bytes;
}

}  // namespace oc::storage::rados
