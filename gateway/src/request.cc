#include "request.h"

#include <algorithm>

#include "fmt/format.h"
#include "oc/common/utf8.h"
#include "oc/sigv4/uri.h"

namespace oc::gateway {

std::optional<std::string_view> Request::Header(std::string_view name) const {
  return FindHeader(headers, name);
}

std::optional<std::string_view> Request::Query(std::string_view name) const {
  for (const auto& [k, v] : parsed.query) {
    if (k == name) {
      return std::string_view(v);
    }
  }
  return std::nullopt;
}

std::string Request::Resource() const { return parsed.path; }

Response Response::Error(S3Error error, std::string field, std::string value, std::string message) {
  Response r;
  r.status = ErrorRow(error).http_status;
  r.error = error;
  r.error_field = std::move(field);
  r.error_value = std::move(value);
  r.error_message = std::move(message);
  if (error == S3Error::kSlowDown) {
    r.AddHeader("Retry-After", std::to_string(kSlowDownRetryAfterSeconds));
  }
  return r;
}

Response Response::FromStatus(const Status& status, const Request* request) {
  const S3Error error = ToS3Error(status);
  std::string field(status.field());
  std::string value;
  if (request != nullptr && !field.empty()) {
    if (auto h = request->Header(field)) {
      value = std::string(*h);
    } else if (auto q = request->Query(field)) {
      value = std::string(*q);
    }
  }
  // Only errors about a request field name it; auth-internal fields are not echoed.
  if (error == S3Error::kSignatureDoesNotMatch || error == S3Error::kInvalidAccessKeyId ||
      error == S3Error::kQuotaExceeded || field == "xml") {
    field.clear();
    value.clear();
  }
  // Messages that explain what was wrong with the request are passed on; the other codes
  // carry the table's text (the status message goes to the log instead).
  std::string message;
  switch (error) {
    case S3Error::kInvalidArgument:
    case S3Error::kInvalidRequest:
    case S3Error::kAuthorizationHeaderMalformed:
    case S3Error::kAuthorizationQueryParametersError:
    case S3Error::kAccessDenied:
    case S3Error::kMalformedXML:
    case S3Error::kInvalidBucketName:
    case S3Error::kBadDigest:      // which digest (Content-MD5, x-amz-checksum-*) differed
    case S3Error::kQuotaExceeded:  // which bucket and which limit
      message = std::string(status.message());
      break;
    case S3Error::kSlowDown:
      // Which bound refused it (the admission queue full, its deadline passed, or a PUT
      // finding every worker busy): load, not an internal detail (docs/protocol.md,
      // "Admission").
      message = fmt::format("Please reduce your request rate: {}.", status.message());
      break;
    default:
      break;
  }
  Response r = Error(error, std::move(field), std::move(value), std::move(message));
  if (ErrorRow(error).http_status >= 500) {
    r.error_cause = status.ToString();
  }
  return r;
}

bool IsValidObjectKey(std::string_view key) {
  return key.find('\0') == std::string_view::npos && IsValidUtf8(key);
}

Response InvalidKeyEncoding(std::string_view field, std::string_view key) {
  return Response::Error(S3Error::kInvalidArgument, std::string(field),
                         sigv4::UriEncode(key, /*encode_slash=*/false),
                         "Object keys must be well-formed UTF-8 without NUL; this one is not "
                         "(shown percent-encoded).");
}

Response Response::Xml(std::string body, unsigned status) {
  Response r;
  r.status = status;
  r.content_type = "application/xml";
  r.body = std::move(body);
  return r;
}

}  // namespace oc::gateway
