#pragma once
// Value types of the object store: keys, ranges, bucket and object metadata, listing
// and multipart results. Plain structs, no behaviour; shared by the store, its RPC and the
// gateway. Thread safety: values.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oc/common/bytes.h"
#include "oc/descriptor/layout.h"

namespace oc::storage {

// S3 limits the key to 1024 bytes of UTF-8; longer keys are refused before any I/O.
inline constexpr uint64_t kMaxKeyBytes = 1024;
// S3 part numbers are 1..10000.
inline constexpr uint32_t kMaxPartNumber = 10000;
// S3's minimum size of every part but the last.
inline constexpr uint64_t kMinPartBytes = 5ull << 20;
// Largest bucket lifecycle configuration a store keeps (Store::SetBucketLifecycle): S3 allows
// 1000 rules; this leaves room for them in the gateway's canonical form while staying under the
// storage RPC's request bound (rpc/wire.h kMaxRequestBodyBytes, 1 MiB).
inline constexpr uint64_t kMaxLifecycleConfigBytes = 512 << 10;

struct ObjectKey {
  std::string bucket;
  std::string name;
};

// A byte range of an object. Resolved against the object's size by the store:
//  - {offset, length}: bytes [offset, offset + length), clamped at the end;
//  - length == kToEnd: from offset to the end;
//  - suffix == true: the last `length` bytes (HTTP "bytes=-N");
//  - part_number > 0: part `part_number` instead (S3 GetObject?partNumber; offset, length and
//    suffix are ignored): the part's bytes of a completed multipart upload, parts counted in
//    the order the completion listed them; the whole object for part 1 of any other object.
//    A part past the count is kOutOfRange/kPart (field "partNumber").
struct ByteRange {
  static constexpr uint64_t kToEnd = ~0ull;
  uint64_t offset = 0;
  uint64_t length = kToEnd;
  bool suffix = false;
  uint32_t part_number = 0;

  static ByteRange All() { return {}; }
  static ByteRange Suffix(uint64_t n) { return {0, n, true}; }
  static ByteRange Part(uint32_t n) { return {0, kToEnd, false, n}; }
  bool IsAll() const { return !suffix && offset == 0 && length == kToEnd && part_number == 0; }
};

struct BucketInfo {
  std::string name;
  std::string owner;  // access key id of the user that created it
  int64_t created_unix_ms = 0;
};

// The shape of a KV chunk object, stored with it when it is written with its layout known
// (docs/design.md, data model); the extent size then equals one contiguous layer range, so a
// layer slice is one or two record reads.
struct ChunkShape {
  descriptor::StoredLayout layout = descriptor::StoredLayout::kL2TD;
  uint32_t num_layers = 0;   // L
  uint64_t layer_bytes = 0;  // S: bytes of one layer of this chunk (K and V together)
};

// An object's tags (S3 object tagging): (key, value) pairs in the order given. The store keeps
// them as given; S3's limits (10 tags, key and value lengths, unique keys) are the gateway's.
using Tags = std::vector<std::pair<std::string, std::string>>;

// What HEAD returns; also what a write commits.
struct ObjectMeta {
  uint64_t size = 0;
  // S3's ETag without quotes: lowercase hex MD5 for a single PUT, "<hex>-<parts>" for a
  // completed multipart upload (MD5 of the concatenated binary part MD5s), "<hex>-1" for an
  // object stored by a descriptor PUT (PutGroup: XXH3-128 of its pieces' XXH3-64s,
  // docs/protocol.md "Responses").
  std::string etag;
  std::string content_type;
  // x-amz-meta-* pairs; names lowercase and without the prefix, in the order stored.
  std::vector<std::pair<std::string, std::string>> user_meta;
  // Other stored representation headers, names lowercase: cache-control,
  // content-disposition, content-encoding, content-language, expires.
  std::vector<std::pair<std::string, std::string>> headers;
  int64_t mtime_unix_ms = 0;
  uint32_t parts_count = 0;  // 0 for a single PUT, N for a completed multipart upload
  std::optional<ChunkShape> chunk;
  Tags tags;  // S3 object tags, in the order stored; empty for none
};

// An S3 additional checksum as the store keeps it: the header it is sent and returned under
// (lowercase, "x-amz-checksum-crc32", ...) and its base64 value ("<base64>-<N>" for a
// multipart upload's checksum of checksums). The store compares and copies them as text; the
// gateway computes and verifies them (docs/decisions/s3-checksums-multipart-in-full.md).
struct ObjectChecksum {
  std::string header;  // "" for none
  std::string value;
  bool empty() const { return header.empty(); }
  bool operator==(const ObjectChecksum&) const = default;
};

// How a multipart upload's object checksum is made from its parts (S3 x-amz-checksum-type on
// CreateMultipartUpload). The store keeps it with the upload and returns it (ListParts); the
// gateway makes the value (docs/decisions/s3-checksums-full-object.md).
enum class ChecksumType : uint8_t {
  kComposite = 0,   // the algorithm over the parts' digests, "<base64>-<N>"
  kFullObject = 1,  // the CRC of the whole object, combined from the parts' CRCs and sizes
};

// Conditions on the object a write replaces (S3 If-None-Match: * and If-Match: <etag> on
// PutObject, CompleteMultipartUpload and CopyObject), checked by the store against the key's
// current record atomically with the write. if_none_match: kFailedPrecondition/kKey (field
// "If-None-Match") if the key exists. if_match (an unquoted ETag): kNotFound/kKey if the key
// is absent, kFailedPrecondition/kKey (field "If-Match") if its ETag differs. On either
// nothing is stored. Default: unconditional.
struct WriteConditions {
  bool if_none_match = false;
  std::optional<std::string> if_match;
};

// The version of an object a conditional delete expects (Store::DeleteIf): the ETag and
// mtime a Head or List saw. Both, because an overwrite with the same bytes has the same ETag
// (docs/decisions/lifecycle.md, "Conditional delete").
struct ObjectVersionMatch {
  std::string etag;  // unquoted
  int64_t mtime_unix_ms = 0;
};

// What a caller supplies when writing an object (or a part: only the digest and size fields
// apply to parts, and an x-amz-checksum-* entry of `headers`, kept as the part's checksum).
struct PutOptions {
  std::string content_type;  // Default: "" (the gateway answers binary/octet-stream)
  std::vector<std::pair<std::string, std::string>> user_meta;
  std::vector<std::pair<std::string, std::string>> headers;
  // Bytes per extent record; 0 picks StoreOptions::default_extent_bytes, or the chunk's
  // contiguous layer range when `chunk` is set (S for kL2TD, S/2 for k2LTD).
  uint64_t extent_bytes = 0;
  std::optional<ChunkShape> chunk;
  // When set, Commit fails with kInvalidArgument/kEntity if the appended byte count differs
  // (a truncated or overlong body never becomes visible).
  std::optional<uint64_t> expected_size;
  // When set (Content-MD5), Commit fails with kInvalidArgument/kDigest on mismatch.
  std::optional<std::array<std::byte, 16>> content_md5;
  // Conditional writes (S3 PutObject If-None-Match: * and If-Match: <etag>), checked at Commit
  // against the key's current record atomically with the write (nothing else can commit the
  // key in between). if_none_match: kFailedPrecondition/kKey (field "If-None-Match") if the
  // key exists. if_match (an unquoted ETag): kNotFound/kKey if the key is absent,
  // kFailedPrecondition/kKey (field "If-Match") if its ETag differs. On either nothing is
  // stored. Objects only: parts ignore them. In a group (Store::PutGroup) if_none_match does
  // not fail the group: a member whose key exists at the group's commit is left as it is and
  // reported as existing (GroupCommitted); if_match is not taken there. Default:
  // unconditional.
  bool if_none_match = false;
  std::optional<std::string> if_match;
  // The object's tags (x-amz-tagging on PutObject and CreateMultipartUpload). In Store::Copy's
  // `replace`: the copy's tags when set (x-amz-tagging-directive: REPLACE), else the source's.
  // Parts ignore it. Default: none (in a copy: the source's)
  std::optional<Tags> tags;
  // CreateMultipartUpload only: the header of the upload's checksum algorithm
  // (x-amz-checksum-algorithm: CRC32 -> "x-amz-checksum-crc32"). Its completion then needs a
  // checksum under that header listed for every part (CompleteMultipartUpload). Default: ""
  // (none)
  std::string upload_checksum_header;
  // CreateMultipartUpload only, with upload_checksum_header: how the completed object's
  // checksum is made (kFullObject only for a CRC, which the gateway checks). Default:
  // kComposite
  ChecksumType upload_checksum_type = ChecksumType::kComposite;
  // UploadPart only: the header of the checksum the part declares before its body, sent as a
  // header (also in `headers`) or announced for an aws-chunked trailer (x-amz-trailer).
  // UploadPart fails with kInvalidArgument/kUpload naming it if the upload was created with
  // another algorithm (S3 refuses such a part at once, "Checksum Type mismatch occurred").
  // Default: "" (the x-amz-checksum-* entry of `headers`, if any)
  std::string part_checksum_header;
};

// One object of a committed group (ObjectGroupWriter::Commit), in Begin order.
struct GroupCommitted {
  // The object the key holds after the commit: the one this group wrote, or the one its
  // if_none_match left in place.
  ObjectMeta meta;
  // PutOptions::if_none_match found the key present at the commit: nothing was written for
  // it and its bytes were freed.
  bool existed = false;
};

struct ListOptions {
  std::string prefix;
  std::string delimiter;    // empty: no grouping
  std::string start_after;  // exclusive; the larger of S3's marker/start-after/token
  uint32_t max_keys = 1000;
};

struct ListEntry {
  std::string name;
  ObjectMeta meta;
};

struct ListResult {
  std::vector<ListEntry> objects;
  std::vector<std::string> common_prefixes;
  bool truncated = false;
  // The last key or common prefix returned; pass as start_after to continue.
  std::string next_start_after;
};

struct CompletedPart {
  uint32_t part_number = 0;
  std::string etag;  // unquoted
  // The part's checksum as the client lists it (ChecksumCRC32 ... in the completion's XML);
  // when set it must equal the checksum stored with the part. Default: none
  ObjectChecksum checksum;
  // When set it must equal the part's size: a FULL_OBJECT checksum was combined from the
  // parts' checksums and these sizes, so both are compared with the parts the commit stitches.
  // Default: none
  std::optional<uint64_t> size;
};

// CompleteMultipartUpload's options besides the part list.
struct CompleteOptions {
  // On the object the completion replaces (S3 If-None-Match: *, If-Match). Default: none
  WriteConditions conditions;
  // The completed object's checksum, stored as one of its headers: the checksum of checksums
  // "<base64>-<N>" or the FULL_OBJECT CRC the gateway computed from the listed part checksums
  // (and sizes), which the store compares with the parts' own first. Default: none
  ObjectChecksum checksum;
};

struct PartInfo {
  uint32_t part_number = 0;
  uint64_t size = 0;
  std::string etag;  // unquoted hex MD5
  int64_t mtime_unix_ms = 0;
  // The checksum sent with the part (x-amz-checksum-* as a header or trailer), verified by
  // the gateway and stored with the part; empty if none was sent.
  ObjectChecksum checksum;
};

struct ListPartsResult {
  std::vector<PartInfo> parts;
  bool truncated = false;
  uint32_t next_part_number_marker = 0;
  // The upload's checksum algorithm as its header (PutOptions::upload_checksum_header); "" if
  // none.
  std::string checksum_header;
  // PutOptions::upload_checksum_type of the upload.
  ChecksumType checksum_type = ChecksumType::kComposite;
};

struct UploadInfo {
  std::string key;
  std::string upload_id;
  int64_t initiated_unix_ms = 0;
};

struct ListUploadsOptions {
  std::string prefix;
  std::string delimiter;
  std::string key_marker;
  std::string upload_id_marker;
  uint32_t max_uploads = 1000;
};

struct ListUploadsResult {
  std::vector<UploadInfo> uploads;
  std::vector<std::string> common_prefixes;
  bool truncated = false;
  std::string next_key_marker;
  std::string next_upload_id_marker;
};

// Where a client's UCX connects for the descriptor requests of a bucket with a data-plane
// target (Store::DataPlane; docs/protocol.md, "Data plane: connecting").
struct DataPlaneInfo {
  std::string address;         // "ip:port" ("[v6]:port") of the data plane's UCX listener
  bool shared_memory = false;  // its transports allow shared memory (the handshake's mode)
};

// Which engine a store is and, for a shared one, which data it serves (Store::identity): two
// stores with the same non-empty fsid, pool and namespace serve the same objects.
struct StoreIdentity {
  // A name of storage-server/src/backends.def; "" from a store that does not say.
  std::string backend;
  // A shared-placement backend's target (backends.def; for RADOS the Ceph cluster's fsid, the
  // pool and the namespace, "" being the pool's default one); empty for one of own data.
  std::string fsid;
  std::string pool;
  std::string rados_namespace;
};

// Engine figures for /stats and /metrics; names are stable snake_case.
struct StoreStats {
  std::vector<std::pair<std::string, uint64_t>> figures;
};

}  // namespace oc::storage
