#include "records/multipart_complete.h"

#include <string>

#include "oc/common/bytes.h"
#include "records/md5.h"
#include "records/multipart_names.h"
#include "records/object_checksum.h"

namespace oc::storage {

Status CheckListedParts(std::span<const CompletedPart> listed) {
  if (listed.empty()) {
    return PartError(Code::kInvalidArgument, "the part list is empty");
  }
  for (size_t i = 1; i < listed.size(); ++i) {
    if (listed[i].part_number <= listed[i - 1].part_number) {
      return PartError(Code::kFailedPrecondition, "part numbers must ascend");
    }
  }
  return Status::Ok();
}

Status CheckPartChecksum(const UploadRecord& upload, const PutOptions& part_options) {
  const std::string declared = part_options.part_checksum_header.empty()
                                   ? ChecksumOfHeaders(part_options.headers).header
                                   : part_options.part_checksum_header;
  if (upload.checksum_header.empty() || declared.empty() || declared == upload.checksum_header) {
    return Status::Ok();
  }
  auto algorithm = [](const std::string& header) {
    return header.starts_with(kChecksumHeaderPrefix) ? header.substr(kChecksumHeaderPrefix.size())
                                                     : header;
  };
  return Status(Code::kInvalidArgument, Subject::kUpload, declared,
                "Checksum Type mismatch occurred, expected checksum Type: " +
                    algorithm(upload.checksum_header) +
                    ", actual checksum Type: " + algorithm(declared));
}

Result<CompletedUpload> CompleteUpload(std::span<const CompletedPart> listed,
                                       std::span<const NumberedPart> stored,
                                       const UploadRecord& upload, const CompleteOptions& options,
                                       int64_t mtime_unix_ms) {
  OC_RETURN_IF_ERROR(CheckListedParts(listed));
  CompletedUpload out;
  out.stitched.assign(stored.size(), false);
  ObjectRecord& record = out.record;
  std::string md5s;  // concatenated binary part MD5s
  size_t s = 0;
  for (size_t i = 0; i < listed.size(); ++i) {
    const CompletedPart& want = listed[i];
    if (!upload.checksum_header.empty() && want.checksum.header != upload.checksum_header) {
      // S3: "The upload was created using a crc32 checksum. The complete request must include
      // the checksum for each part. It was missing for part 1 in the request."
      const std::string algorithm = upload.checksum_header.substr(kChecksumHeaderPrefix.size());
      return Status(Code::kInvalidArgument, Subject::kUpload, upload.checksum_header,
                    "The upload was created using a " + algorithm +
                        " checksum. The complete request must include the checksum for each "
                        "part. It was missing for part " +
                        std::to_string(want.part_number) + " in the request.");
    }
    while (s < stored.size() && stored[s].number < want.part_number) {
      ++s;
    }
    if (s == stored.size() || stored[s].number != want.part_number) {
      return PartError(Code::kInvalidArgument,
                       "part " + std::to_string(want.part_number) + " was not uploaded");
    }
    const PartRecord& part = stored[s].part;
    if (NormalizeEtag(want.etag) != HexEncode(part.md5)) {
      return PartError(Code::kInvalidArgument,
                       "part " + std::to_string(want.part_number) + " has a different ETag");
    }
    if (!want.checksum.empty() && want.checksum != part.checksum) {
      return PartError(Code::kInvalidArgument, "part " + std::to_string(want.part_number) +
                                                   " has a different " + want.checksum.header);
    }
    if (want.size.has_value() && *want.size != part.segment.size) {
      // The part was replaced after the gateway read its size for a FULL_OBJECT checksum.
      return PartError(Code::kInvalidArgument,
                       "part " + std::to_string(want.part_number) + " has a different size");
    }
    if (i + 1 < listed.size() && part.segment.size < kMinPartBytes) {
      return PartError(Code::kOutOfRange,
                       "part " + std::to_string(want.part_number) + " is under the minimum size");
    }
    out.stitched[s] = true;
    record.segments.push_back(part.segment);
    record.meta.size += part.segment.size;
    md5s.append(reinterpret_cast<const char*>(part.md5.data()), part.md5.size());
  }
  record.meta.etag = HexEncode(Md5::Of(AsBytes(md5s))) + "-" + std::to_string(listed.size());
  record.meta.content_type = upload.content_type;
  record.meta.user_meta = upload.user_meta;
  record.meta.headers = upload.headers;
  if (!options.checksum.empty()) {
    record.meta.headers.emplace_back(options.checksum.header, options.checksum.value);
  }
  record.meta.chunk = upload.chunk;
  record.meta.tags = upload.tags;
  record.meta.parts_count = static_cast<uint32_t>(listed.size());
  record.meta.mtime_unix_ms = mtime_unix_ms;
  return out;
}

}  // namespace oc::storage
