#pragma once
// What both backends' multipart uploads share: the upload id format, the ETag form a client
// sends back in CompleteMultipartUpload, and the errors of store.h's multipart calls.

#include <string>
#include <string_view>

#include "oc/common/status.h"

namespace oc::storage {

// Upload ids: 16 bytes as 32 lowercase hex characters; the first 8 are the creation time in
// nanoseconds (big-endian), so one key's uploads list in the order they were started.
inline constexpr size_t kUploadIdChars = 32;

bool IsUploadId(std::string_view id);
std::string NewUploadId();
// kNotFound/kUpload naming the upload.
Status NoSuchUpload(std::string_view upload_id);
// An ETag as a client sends it back: quotes stripped, hex lowercased.
std::string NormalizeEtag(std::string_view etag);
// An error about a listed part (field "Part").
Status PartError(Code code, std::string message);

}  // namespace oc::storage
