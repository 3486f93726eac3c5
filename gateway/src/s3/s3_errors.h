#pragma once
// The S3 error table (s3_errors.def) as an enum and constexpr rows, the one mapping from
// oc::Status to S3 errors, and the XML body of an error response (STYLE 3.5).
// Pure functions; thread-safe.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "oc/common/status.h"

namespace oc::gateway {

enum class S3Error : uint16_t {
#define OC_S3_ERROR(name, status, message) k##name,
#include "s3/s3_errors.def"
#undef OC_S3_ERROR
};

struct S3ErrorRow {
  S3Error error;
  std::string_view code;     // the S3 <Code>, e.g. "NoSuchKey"
  unsigned http_status;      // e.g. 404
  std::string_view message;  // our text
};

inline constexpr S3ErrorRow kS3ErrorRows[] = {
#define OC_S3_ERROR(name, status, message) {S3Error::k##name, #name, status, message},
#include "s3/s3_errors.def"
#undef OC_S3_ERROR
};

const S3ErrorRow& ErrorRow(S3Error error);

// The field of the refusals of the descriptor executor (the store's KvOptions::
// descriptor_threads, or the gateway's own in front of a remote store): a full admission
// queue, a GET still queued at the admission timeout, a PUT finding every worker busy.
// kResourceExhausted with it is SlowDown, which S3 clients retry after backing off; its
// message says which (Response::FromStatus).
inline constexpr std::string_view kDescriptorExecutorField = "kv.descriptor_threads";
// Seconds a SlowDown answer asks the client to wait (Retry-After).
inline constexpr int kSlowDownRetryAfterSeconds = 1;

// One switch over Code x Subject (minio's toAPIErrorCode): which S3 error a Status is.
S3Error ToS3Error(const Status& status);

// What goes into an error body beyond the table row.
struct ErrorDetails {
  std::string_view resource;  // the request path, e.g. "/bucket/key"
  std::string_view request_id;
  std::string_view message;         // overrides the table text for 4xx when non-empty
  std::string_view argument_name;   // the header, query parameter or element at fault
  std::string_view argument_value;  // its value as received
};

// <?xml ...?><Error><Code/><Message/><Resource/><RequestId/>[<ArgumentName/><ArgumentValue/>]
// </Error>. A 5xx always carries the table's generic message.
std::string RenderErrorXml(S3Error error, const ErrorDetails& details);

}  // namespace oc::gateway
