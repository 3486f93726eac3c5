#pragma once
// The decision at the heart of CompleteMultipartUpload, shared by both backends: given the
// parts a client lists and the parts an upload holds, either the object record to commit or
// the S3 error (store.h, Store::CompleteMultipartUpload). Where the records live and how the
// commit is made stay with each backend (rocks_multipart.cc, rados_multipart.cc). Pure
// functions, thread-safe.

#include <cstdint>
#include <span>
#include <vector>

#include "oc/common/result.h"
#include "oc/storage/types.h"
#include "records/meta_codec.h"

namespace oc::storage {

// A part as an upload stores it: its number and record.
struct NumberedPart {
  uint32_t number = 0;
  PartRecord part;
};

// What completing an upload makes.
struct CompletedUpload {
  // segments: the listed parts' segments in the listed order. meta: the summed size, the S3
  // multipart ETag "<hex MD5 of the parts' binary MD5s>-<part count>", parts_count, the
  // upload's content type, user metadata, headers and chunk shape, and the given mtime.
  ObjectRecord record;
  // One flag per stored part: true if the object names it. The others become garbage when
  // the object commits.
  std::vector<bool> stitched;
};

// The checks that need only the client's list: kInvalidArgument/kPart if it is empty,
// kFailedPrecondition/kPart if the part numbers do not strictly ascend (field "Part" for
// both). A backend may call it before reading the stored parts; CompleteUpload calls it too.
Status CheckListedParts(std::span<const CompletedPart> listed);

// UploadPart's check, before a part's writer opens: `part_header`, the checksum the part
// declares (PutOptions::part_checksum_header, else the x-amz-checksum-* entry of its
// headers), must be the upload's algorithm when both are set. kInvalidArgument/kUpload
// naming part_header otherwise, with S3's text ("Checksum Type mismatch occurred, expected
// checksum Type: crc32, actual checksum Type: crc32c"), mapped to 400 InvalidRequest.
Status CheckPartChecksum(const UploadRecord& upload, const PutOptions& part_options);

// The object made of `listed` from `stored`, carrying options.checksum as a header when set.
// REQUIRES: `stored` ascends by number. The errors of CheckListedParts, then per listed part,
// in order: kInvalidArgument/kUpload (field: the upload's checksum header) if the upload has
// a checksum algorithm and the part lists no checksum under it (S3's InvalidRequest);
// kInvalidArgument/kPart if no stored part has its number, its ETag (NormalizeEtag) differs
// from the stored MD5, its listed checksum differs from the stored one, or its listed size
// (CompletedPart::size) differs from the stored part's (S3's InvalidPart);
// kOutOfRange/kPart if a part other than the last is under kMinPartBytes. options.conditions
// are the backend's to check against the record it replaces (write_conditions.h).
Result<CompletedUpload> CompleteUpload(std::span<const CompletedPart> listed,
                                       std::span<const NumberedPart> stored,
                                       const UploadRecord& upload, const CompleteOptions& options,
                                       int64_t mtime_unix_ms);

}  // namespace oc::storage
