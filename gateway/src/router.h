#pragma once
// The route table (STYLE 3.6 step 2): method x addressed level (service, bucket, object) x
// sub-resource query parameter -> the S3 operation, named as AWS names it. The operation name
// is the one identifier for handler, metric label and the access log's op=.
//
// Addressing: virtual-host style when the Host header (port removed) ends with
// "." + virtual_host_domain, the bucket being the part before it; otherwise path style
// ("/bucket/key"). The operations endpoints (/healthz, /readyz, /stats, /metrics) answer only
// GETs carrying no S3 credentials (no Authorization header, no X-Amz-Credential), so a signed
// request for a bucket called "stats" still reaches S3.
//
// A request naming a sub-resource we do not serve (?tagging on a bucket, ?versioning on PUT,
// ?policy, ?lifecycle, ...) routes to kNotImplemented, never to a plain operation that would
// answer a wrong success. A method the resource does not support routes to kMethodNotAllowed.
// Pure; thread-safe.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace oc::gateway {

#define OC_S3_OPS(X)         \
  X(ListBuckets)             \
  X(CreateBucket)            \
  X(DeleteBucket)            \
  X(HeadBucket)              \
  X(GetBucketLocation)       \
  X(GetBucketAcl)            \
  X(GetBucketVersioning)     \
  X(PutBucketAcl)            \
  X(ListObjectVersions)      \
  X(ListObjects)             \
  X(ListObjectsV2)           \
  X(ListMultipartUploads)    \
  X(DeleteObjects)           \
  X(PutObject)               \
  X(CopyObject)              \
  X(GetObject)               \
  X(HeadObject)              \
  X(DeleteObject)            \
  X(GetObjectAcl)            \
  X(PutObjectAcl)            \
  X(GetObjectAttributes)     \
  X(GetObjectTagging)        \
  X(PutObjectTagging)        \
  X(DeleteObjectTagging)     \
  X(CreateMultipartUpload)   \
  X(UploadPart)              \
  X(UploadPartCopy)          \
  X(CompleteMultipartUpload) \
  X(AbortMultipartUpload)    \
  X(ListParts)               \
  X(GetObjectCache)          \
  X(PutObjectCache)          \
  X(Healthz)                 \
  X(Readyz)                  \
  X(Stats)                   \
  X(Metrics)                 \
  X(NotImplemented)          \
  X(MethodNotAllowed)        \
  X(BadRequest)

enum class S3Op : uint8_t {
#define OC_S3_OP_ENUM(name) k##name,
  OC_S3_OPS(OC_S3_OP_ENUM)
#undef OC_S3_OP_ENUM
};

inline constexpr std::string_view kS3OpNames[] = {
#define OC_S3_OP_NAME(name) #name,
    OC_S3_OPS(OC_S3_OP_NAME)
#undef OC_S3_OP_NAME
};
inline constexpr size_t kS3OpCount = std::size(kS3OpNames);

inline std::string_view OpName(S3Op op) { return kS3OpNames[static_cast<size_t>(op)]; }

// How the request body is read before or while the handler runs.
enum class BodyPolicy : uint8_t {
  kNone,    // no body expected; any body is drained (bounded) or the connection closed
  kXml,     // a small document read whole under Options::max_xml_body_bytes
  kStream,  // object bytes streamed into a Store writer
};

struct Route {
  S3Op op = S3Op::kBadRequest;
  BodyPolicy body = BodyPolicy::kNone;
  std::string bucket;
  std::string key;
};

struct RouteInput {
  std::string_view method;  // "GET"
  std::string_view host;    // Host header, may carry ":port"
  std::string_view path;    // percent-decoded path
  const std::vector<std::pair<std::string, std::string>>* query = nullptr;  // decoded
  bool has_copy_source = false;  // x-amz-copy-source present
  bool has_credentials = false;  // Authorization header or X-Amz-Credential present
};

// `virtual_host_domain` empty disables virtual-host addressing.
Route RouteRequest(const RouteInput& in, std::string_view virtual_host_domain);

}  // namespace oc::gateway
