#include <algorithm>
#include <charconv>

#include "handlers/handlers.h"
#include "oc/common/text.h"
#include "s3/s3_copy_source.h"
#include "s3/s3_headers.h"
#include "s3/s3_tagging.h"
#include "s3/s3_xml.h"

namespace oc::gateway {
namespace {

constexpr std::string_view kMetaPrefix = "x-amz-meta-";
// Stored checksums are headers with this prefix
// (docs/decisions/s3-checksums-verified-on-upload.md).
constexpr std::string_view kChecksumPrefix = "x-amz-checksum-";
// Representation headers S3 stores with an object and returns on GET/HEAD.
constexpr std::string_view kStoredHeaders[] = {"cache-control", "content-disposition",
                                               "content-encoding", "content-language", "expires"};

// "aws-chunked" is a transfer detail of streaming uploads, not part of the object (S3 drops it).
// Everything else is kept as sent, separators and spaces included ("deflate, gzip").
std::string WithoutAwsChunked(std::string_view encoding) {
  std::string out;
  bool first = true;
  while (true) {
    const size_t comma = encoding.find(',');
    const std::string_view item = encoding.substr(0, comma);
    if (!EqualsIgnoreCase(Trim(item), "aws-chunked")) {
      if (!first) {
        out.push_back(',');
      }
      out.append(item);
      first = false;
    }
    if (comma == std::string_view::npos) {
      break;
    }
    encoding.remove_prefix(comma + 1);
  }
  return std::string(Trim(out));
}

// S3 returns a metadata value with bytes outside printable ASCII as an RFC 2047 encoded word
// ("Using non-US-ASCII characters in metadata"); values that are already encoded words are
// ASCII and pass unchanged. Base64 ("B") encoding: any byte sequence decodes back exactly.
std::string MailSafe(const std::string& value) {
  const bool plain = std::all_of(value.begin(), value.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u >= 0x20 && u < 0x7f) || u == '\t';
  });
  if (plain) {
    return value;
  }
  return "=?UTF-8?B?" + Base64Encode(value) + "?=";
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
    res->AddHeader(std::move(header), MailSafe(value));
  }
  for (const auto& [name, value] : meta.headers) {
    if (!name.starts_with(kChecksumPrefix)) {
      res->AddHeader(name, value);
    }
  }
  if (meta.parts_count > 0) {
    res->AddHeader("x-amz-mp-parts-count", std::to_string(meta.parts_count));
  }
  if (!meta.tags.empty()) {  // S3 sends it only for a tagged object
    res->AddHeader("x-amz-tagging-count", std::to_string(meta.tags.size()));
  }
}

std::optional<Response> WriteConditionsOf(const Request& req, storage::WriteConditions* out) {
  if (std::optional<std::string_view> none = req.Header("if-none-match")) {
    if (Trim(*none) != "*") {
      return Response::Error(S3Error::kNotImplemented, "If-None-Match", std::string(*none),
                             "If-None-Match on a write takes only *.");
    }
    out->if_none_match = true;
  }
  if (std::optional<std::string_view> match = req.Header("if-match")) {
    out->if_match = std::string(Trim(*match));
  }
  return std::nullopt;
}

TaggingHeader TaggingHeaderOf(const Request& req) {
  TaggingHeader out;
  const std::optional<std::string_view> header = req.Header("x-amz-tagging");
  if (!header.has_value()) {
    return out;
  }
  Result<TagSet> tags = ParseTaggingHeader(*header);
  if (!tags.has_value()) {
    out.error = Response::Error(S3Error::kInvalidTag, "x-amz-tagging", std::string(*header),
                                std::string(tags.error().message()));
    return out;
  }
  out.tags = std::move(*tags);
  return out;
}

std::optional<Response> ParseUploadChecksum(const Request& req, UploadStart* start) {
  constexpr std::string_view kMultiple =
      "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.";
  std::optional<auth::ChecksumAlgorithm> algorithm;
  std::string_view header;
  std::string_view value;
  for (const auto& [name, v] : req.headers) {
    std::optional<auth::ChecksumAlgorithm> a = auth::ChecksumFromHeaderName(name);
    if (!a) {
      continue;
    }
    if (algorithm || !req.checksum_trailer.empty()) {
      return Response::Error(S3Error::kInvalidRequest, std::string(name), std::string(v),
                             std::string(kMultiple));
    }
    algorithm = a;
    header = auth::ChecksumHeaderName(*a);
    value = Trim(v);
    if (!auth::IsChecksumValue(*a, value)) {
      return Response::Error(S3Error::kInvalidRequest, std::string(header), std::string(v),
                             "Value for " + std::string(header) + " header is invalid.");
    }
  }
  if (!req.checksum_trailer.empty()) {
    algorithm = auth::ChecksumFromHeaderName(req.checksum_trailer);
  }
  if (std::optional<std::string_view> sdk = req.Header("x-amz-sdk-checksum-algorithm")) {
    std::optional<auth::ChecksumAlgorithm> named = auth::ChecksumFromName(Trim(*sdk));
    if (!named || (algorithm && *named != *algorithm)) {
      return Response::Error(S3Error::kInvalidRequest, "x-amz-sdk-checksum-algorithm",
                             std::string(*sdk),
                             "Value for x-amz-sdk-checksum-algorithm header is invalid.");
    }
  }
  if (!algorithm) {
    return std::nullopt;
  }
  start->checksum = std::make_unique<auth::Checksum>(*algorithm);
  start->checksum_expected = std::string(value);
  return std::nullopt;
}

bool ChecksumModeEnabled(const Request& req) {
  std::optional<std::string_view> mode = req.Header("x-amz-checksum-mode");
  return mode && EqualsIgnoreCase(Trim(*mode), "ENABLED");
}

void AddChecksumHeaders(const storage::ObjectMeta& meta, Response* res) {
  for (const auto& [name, value] : meta.headers) {
    if (name.starts_with(kChecksumPrefix)) {
      res->AddHeader(name, value);
      res->AddHeader("x-amz-checksum-type", std::string(ChecksumTypeOfValue(value)));
      return;
    }
  }
}

const std::pair<std::string, std::string>* StoredChecksum(
    const std::vector<std::pair<std::string, std::string>>& headers) {
  for (const auto& header : headers) {
    if (auth::ChecksumFromHeaderName(header.first)) {
      return &header;
    }
  }
  return nullptr;
}

std::string_view ChecksumTypeName(storage::ChecksumType type) {
  return type == storage::ChecksumType::kFullObject ? "FULL_OBJECT" : "COMPOSITE";
}

std::string_view ChecksumTypeOfValue(std::string_view value) {
  return value.find('-') != std::string_view::npos ? "COMPOSITE" : "FULL_OBJECT";
}

Result<uint32_t> ParsePartNumber(const Request& req) {
  std::string_view v = req.Query("partNumber").value_or("");
  uint32_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size() || n < 1 ||
      n > storage::kMaxPartNumber) {
    return Status::InvalidArgument("partNumber",
                                   "Part number must be an integer between 1 and 10000, inclusive");
  }
  return n;
}

Conditions ConditionsOf(const Request& req, std::string_view prefix) {
  auto header = [&](std::string_view name) {
    std::string full(prefix);
    full.append(name);
    return req.Header(full);
  };
  Conditions c;
  c.if_match = header("if-match");
  c.if_none_match = header("if-none-match");
  c.if_modified_since = header("if-modified-since");
  c.if_unmodified_since = header("if-unmodified-since");
  return c;
}

CopySource ParseCopySource(HandlerEnv& env, const Request& req) {
  CopySource out;
  const std::string_view header = req.Header("x-amz-copy-source").value_or("");
  Result<CopySourceName> name = ParseCopySourceHeader(header);
  if (!name.has_value()) {
    out.error = Response::Error(
        name.error().code() == Code::kUnimplemented ? S3Error::kNotImplemented
                                                    : S3Error::kInvalidArgument,
        "x-amz-copy-source", std::string(header), std::string(name.error().message()));
    return out;
  }
  out.key = {std::move(name->bucket), std::move(name->key)};
  if (!IsValidObjectKey(out.key.name)) {
    out.error = InvalidKeyEncoding("x-amz-copy-source", out.key.name);
    return out;
  }
  // Reading the source needs what GetObject needs.
  out.error = env.access->Check(req, RowOf(S3Op::kGetObject).access, out.key.bucket);
  return out;
}

void AppendOwner(XmlWriter& xml, std::string_view id) {
  xml.Open("Owner");
  xml.Element("ID", id);
  xml.Element("DisplayName", id);
  xml.Close("Owner");
}

}  // namespace oc::gateway
