// The gateway's S3 error answers (<Error><Code/><Message/><ArgumentName/>) as a Status, so
// that a caller of the client sees the same Code/Subject/field the gateway started from.
#include <string>
#include <string_view>
#include <utility>

#include "fmt/format.h"
#include "oc/client/client.h"

namespace oc::client {
namespace {

std::string XmlElement(std::string_view xml, std::string_view name) {
  const std::string open = fmt::format("<{}>", name);
  const std::string close = fmt::format("</{}>", name);
  const size_t b = xml.find(open);
  if (b == std::string_view::npos) {
    return {};
  }
  const size_t start = b + open.size();
  const size_t e = xml.find(close, start);
  if (e == std::string_view::npos) {
    return {};
  }
  std::string out;
  std::string_view v = xml.substr(start, e - start);
  constexpr std::pair<std::string_view, char> kEntities[] = {
      {"&lt;", '<'}, {"&gt;", '>'}, {"&amp;", '&'}, {"&quot;", '"'}, {"&apos;", '\''}};
  while (!v.empty()) {
    bool replaced = false;
    if (v.front() == '&') {
      for (const auto& [entity, c] : kEntities) {
        if (v.starts_with(entity)) {
          out.push_back(c);
          v.remove_prefix(entity.size());
          replaced = true;
          break;
        }
      }
    }
    if (!replaced) {
      out.push_back(v.front());
      v.remove_prefix(1);
    }
  }
  return out;
}

}  // namespace

Status StatusFromS3Response(unsigned http_status, std::string_view body) {
  std::string code = XmlElement(body, "Code");
  std::string message = XmlElement(body, "Message");
  std::string field = XmlElement(body, "ArgumentName");
  if (code.empty()) {
    code = fmt::format("HTTP{}", http_status);
  }
  Code c = Code::kInternal;
  Subject subject = Subject::kNone;
  switch (http_status) {
    case 400:
      c = Code::kInvalidArgument;
      if (field.starts_with("x-oc-") || field == "body") {
        subject = Subject::kDescriptor;
      }
      break;
    case 401:
      c = Code::kUnauthenticated;
      break;
    case 403:
      c = (code == "AccessDenied") ? Code::kPermissionDenied : Code::kUnauthenticated;
      if (code == "SignatureDoesNotMatch") {
        subject = Subject::kSignature;
      } else if (code == "InvalidAccessKeyId") {
        subject = Subject::kAccessKey;
      }
      break;
    case 404:
      c = Code::kNotFound;
      subject = code == "NoSuchBucket"   ? Subject::kBucket
                : code == "NoSuchUpload" ? Subject::kUpload
                                         : Subject::kKey;
      break;
    case 409:
      c = code.find("AlreadyOwned") != std::string::npos ||
                  code.find("AlreadyExists") != std::string::npos
              ? Code::kAlreadyExists
              : Code::kFailedPrecondition;
      if (code.starts_with("Bucket")) {
        subject = Subject::kBucket;
      }
      break;
    case 412:
      c = Code::kFailedPrecondition;
      break;
    case 416:
      c = Code::kOutOfRange;
      subject = Subject::kRange;
      break;
    case 501:
      c = Code::kUnimplemented;
      break;
    case 503:
      c = Code::kUnavailable;
      break;
    default:
      c = http_status >= 500 ? Code::kInternal : Code::kInvalidArgument;
      break;
  }
  return Status(c, subject, std::move(field),
                fmt::format("{} (HTTP {}): {}", code, http_status, message));
}

}  // namespace oc::client
