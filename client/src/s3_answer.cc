// The gateway's S3 answers read by the client: error answers (<Error><Code/><Message/>
// <ArgumentName/><RequestId/>) as a Status, so that a caller of the client sees the same
// Code/Subject/field the gateway started from, with the S3 code, HTTP status and request id as
// its ErrorInfo (oc/client/errors.h); and ListObjectsV2 pages.
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "client_impl.h"
#include "fmt/format.h"
#include "oc/client/client.h"
#include "oc/client/errors.h"
#include "oc/common/units.h"

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

Status StatusFromS3Response(unsigned http_status, std::string_view body,
                            std::string_view request_id) {
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
  auto info = std::make_unique<ErrorInfo>();
  info->s3_code = std::move(code);
  info->http_status = http_status;
  info->request_id = request_id.empty() ? XmlElement(body, "RequestId") : std::string(request_id);
  return Status(c, subject, std::move(field), std::move(message)).WithDetail(std::move(info));
}

Result<ListPage> ParseListObjectsV2(std::string_view xml) {
  if (xml.find("<ListBucketResult") == std::string_view::npos) {
    return Status::Corruption("ListObjectsV2 answer without <ListBucketResult>");
  }
  ListPage page;
  // Elements of the page itself come after the last <Contents> or <CommonPrefixes>.
  std::string_view rest = xml;
  for (;;) {
    const size_t contents = rest.find("<Contents>");
    const size_t prefixes = rest.find("<CommonPrefixes>");
    const size_t next = std::min(contents, prefixes);
    if (next == std::string_view::npos) {
      break;
    }
    const bool is_object = next == contents;
    const std::string_view close = is_object ? "</Contents>" : "</CommonPrefixes>";
    const size_t end = rest.find(close, next);
    if (end == std::string_view::npos) {
      return Status::Corruption("ListObjectsV2 answer with an unclosed element");
    }
    const std::string_view item = rest.substr(next, end - next);
    if (is_object) {
      ObjectEntry e;
      e.key = XmlElement(item, "Key");
      OC_ASSIGN_OR_RETURN(e.size, ParseUint64(XmlElement(item, "Size"), "Size"));
      e.etag = XmlElement(item, "ETag");
      if (e.etag.size() >= 2 && e.etag.front() == '"' && e.etag.back() == '"') {
        e.etag = e.etag.substr(1, e.etag.size() - 2);
      }
      page.objects.push_back(std::move(e));
    } else {
      page.common_prefixes.push_back(XmlElement(item, "Prefix"));
    }
    rest = rest.substr(end + close.size());
  }
  page.truncated = XmlElement(xml, "IsTruncated") == "true";
  page.next_continuation_token = XmlElement(xml, "NextContinuationToken");
  return page;
}

}  // namespace oc::client
