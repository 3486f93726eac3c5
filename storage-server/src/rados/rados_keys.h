#pragma once
// RADOS object names and omap keys of RadosStore, and the bucket registry record
// (docs/design.md, "RADOS mapping"). Everything lives in one pool and namespace:
//
//   oc.buckets                      omap: bucket name -> RadosBucketRecord
//   oc.idx.<bucket id>.<shard>      xattr oc.state = "live" | "deleting"; omap:
//                                   o/<key>  -> ObjectRecord (records/meta_codec.h, format 2)
//                                   g/<due ms>/<version> -> the replaced ObjectRecord (GC)
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
// Number of data objects (extents) of a segment: ceil(size / extent_bytes).
inline uint64_t ExtentCount(const Segment& s) {
  return s.extent_bytes == 0 ? 0 : (s.size + s.extent_bytes - 1) / s.extent_bytes;
}

}  // namespace oc::storage::rados
