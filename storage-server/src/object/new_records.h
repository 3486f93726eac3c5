#pragma once
// The records a write makes from its S3 options, once for every backend: a new object's
// metadata (PUT, a group member), the metadata a same-key copy with REPLACE keeps, the record
// CreateMultipartUpload stores, and UploadPart's checks and the options its writer keeps. Where
// the records go and when they commit stay with each backend. Pure functions, thread-safe.

#include <cstdint>
#include <string>

#include "oc/common/result.h"
#include "oc/storage/types.h"
#include "records/meta_codec.h"

namespace oc::storage {

// A new object's metadata: `size`, `etag`, `mtime_unix_ms`, and the content type, user
// metadata, headers, chunk shape and tags (none: empty) of `options`.
ObjectMeta NewObjectMeta(const PutOptions& options, uint64_t size, std::string etag,
                         int64_t mtime_unix_ms);

// A copy onto its own key with new metadata (S3 x-amz-metadata-directive: REPLACE): the
// content type, user metadata and headers of `replace` (the stored checksum kept,
// records/object_checksum.h CopyHeaders), its tags when it has any; size, ETag and chunk stay.
void ReplaceMetadata(ObjectMeta* meta, const PutOptions& replace);

// CreateMultipartUpload's record: the content type, user metadata, headers, chunk shape, tags
// and checksum algorithm of `options`, initiated at `now_unix_ms`. The backend sets
// extent_bytes (its own choice of data object or extent size).
UploadRecord NewUploadRecord(const PutOptions& options, int64_t now_unix_ms);

// UploadPart's part number check: kInvalidArgument/kPart, field "partNumber", unless it is
// 1..kMaxPartNumber.
Status CheckPartNumber(uint32_t part_number);

// The options of an UploadPart writer of `upload`: the part's expected_size and content_md5
// checked at commit, and its checksum header when sent as a header (one sent as a trailer
// comes by AddHeader). The errors of CheckPartChecksum (records/multipart_complete.h).
Result<PutOptions> PartWriteOptions(const UploadRecord& upload, const PutOptions& options);

}  // namespace oc::storage
