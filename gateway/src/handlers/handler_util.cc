#include <algorithm>

#include "handlers/handlers.h"
#include "oc/common/text.h"
#include "s3/s3_headers.h"
#include "s3/s3_xml.h"

namespace oc::gateway {
namespace {

constexpr std::string_view kMetaPrefix = "x-amz-meta-";
// Representation headers S3 stores with an object and returns on GET/HEAD.
constexpr std::string_view kStoredHeaders[] = {"cache-control", "content-disposition",
                                               "content-encoding", "content-language", "expires"};

// "aws-chunked" is a transfer detail of streaming uploads, not part of the object (S3 drops it).
std::string WithoutAwsChunked(std::string_view encoding) {
  std::string out;
  while (!encoding.empty()) {
    const size_t comma = encoding.find(',');
    const std::string_view item = Trim(encoding.substr(0, comma), " ");
    if (!item.empty() && !EqualsIgnoreCase(item, "aws-chunked")) {
      if (!out.empty()) {
        out.push_back(',');
      }
      out.append(item);
    }
    if (comma == std::string_view::npos) {
      break;
    }
    encoding.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace

storage::PutOptions PutOptionsFromHeaders(const Request& req) {
  storage::PutOptions options;
  for (const auto& [name, value] : req.headers) {
    const std::string lower = AsciiLower(name);
    if (lower.starts_with(kMetaPrefix)) {
      options.user_meta.emplace_back(lower.substr(kMetaPrefix.size()), std::string(value));
    } else if (lower == "content-type") {
      options.content_type = std::string(value);
    } else if (lower == "content-encoding") {
      std::string encoding = WithoutAwsChunked(value);
      if (!encoding.empty()) {
        options.headers.emplace_back(lower, std::move(encoding));
      }
    } else if (std::find(std::begin(kStoredHeaders), std::end(kStoredHeaders), lower) !=
               std::end(kStoredHeaders)) {
      options.headers.emplace_back(lower, std::string(value));
    }
  }
  return options;
}

void AddObjectHeaders(const storage::ObjectMeta& meta, Response* res) {
  res->AddHeader("ETag", QuoteEtag(meta.etag));
  res->AddHeader("Last-Modified", FormatHttpDate(meta.mtime_unix_ms));
  res->content_type = meta.content_type.empty() ? "binary/octet-stream" : meta.content_type;
  for (const auto& [name, value] : meta.user_meta) {
    std::string header(kMetaPrefix);
    header.append(name);
    res->AddHeader(std::move(header), value);
  }
  for (const auto& [name, value] : meta.headers) {
    res->AddHeader(name, value);
  }
  if (meta.parts_count > 0) {
    res->AddHeader("x-amz-mp-parts-count", std::to_string(meta.parts_count));
  }
}

void AppendOwner(XmlWriter& xml, std::string_view id) {
  xml.Open("Owner");
  xml.Element("ID", id);
  xml.Element("DisplayName", id);
  xml.Close("Owner");
}

}  // namespace oc::gateway
