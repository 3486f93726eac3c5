#include "object/new_records.h"

#include <utility>

#include "records/multipart_complete.h"
#include "records/object_checksum.h"

namespace oc::storage {

ObjectMeta NewObjectMeta(const PutOptions& options, uint64_t size, std::string etag,
                         int64_t mtime_unix_ms) {
  ObjectMeta meta;
  meta.size = size;
  meta.etag = std::move(etag);
  meta.mtime_unix_ms = mtime_unix_ms;
  meta.content_type = options.content_type;
  meta.user_meta = options.user_meta;
  meta.headers = options.headers;
  meta.chunk = options.chunk;
  meta.tags = options.tags.value_or(Tags{});
  return meta;
}

void ReplaceMetadata(ObjectMeta* meta, const PutOptions& replace) {
  meta->content_type = replace.content_type;
  meta->user_meta = replace.user_meta;
  meta->headers = CopyHeaders(*meta, replace.headers);
  if (replace.tags.has_value()) {
    meta->tags = *replace.tags;
  }
}

UploadRecord NewUploadRecord(const PutOptions& options, int64_t now_unix_ms) {
  UploadRecord record;
  record.content_type = options.content_type;
  record.user_meta = options.user_meta;
  record.headers = options.headers;
  record.chunk = options.chunk;
  record.tags = options.tags.value_or(Tags{});
  record.checksum_header = options.upload_checksum_header;
  record.checksum_type = options.upload_checksum_type;
  record.initiated_unix_ms = now_unix_ms;
  return record;
}

Status CheckPartNumber(uint32_t part_number) {
  if (part_number < 1 || part_number > kMaxPartNumber) {
    return Status(Code::kInvalidArgument, Subject::kPart, "partNumber",
                  "part number must be 1.." + std::to_string(kMaxPartNumber));
  }
  return Status::Ok();
}

Result<PutOptions> PartWriteOptions(const UploadRecord& upload, const PutOptions& options) {
  OC_RETURN_IF_ERROR(CheckPartChecksum(upload, options));
  PutOptions part;
  part.expected_size = options.expected_size;
  part.content_md5 = options.content_md5;
  if (ObjectChecksum checksum = ChecksumOfHeaders(options.headers); !checksum.empty()) {
    part.headers.emplace_back(std::move(checksum.header), std::move(checksum.value));
  }
  return part;
}

}  // namespace oc::storage
