// Multipart uploads: CreateMultipartUpload, UploadPartCopy, CompleteMultipartUpload,
// AbortMultipartUpload, ListParts, ListMultipartUploads (UploadPart streams:
// object_handlers.cc OpenUpload).
#include <algorithm>
#include <charconv>
#include <vector>

#include <fmt/format.h>

#include "handlers/handlers.h"
#include "oc/common/text.h"
#include "oc/sigv4/uri.h"
#include "s3/s3_headers.h"
#include "s3/s3_xml.h"

namespace oc::gateway {
namespace {

storage::ObjectKey KeyOf(const Request& req) { return {req.route.bucket, req.route.key}; }

// UploadPartCopy moves the source's bytes through a buffer of this size (one per request).
constexpr uint64_t kCopyPieceBytes = 1 << 20;

// x-amz-copy-source-range: exactly "bytes=first-last", first <= last (S3 takes no other form).
std::optional<storage::ByteRange> ParseCopySourceRange(std::string_view v) {
  constexpr std::string_view kPrefix = "bytes=";
  if (!v.starts_with(kPrefix)) {
    return std::nullopt;
  }
  v.remove_prefix(kPrefix.size());
  const size_t dash = v.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == v.size()) {
    return std::nullopt;
  }
  auto number = [](std::string_view s, uint64_t* out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return ec == std::errc() && p == s.data() + s.size();
  };
  uint64_t first = 0;
  uint64_t last = 0;
  if (!number(v.substr(0, dash), &first) || !number(v.substr(dash + 1), &last) || last < first) {
    return std::nullopt;
  }
  return storage::ByteRange{first, last - first + 1, false};
}

// encoding-type=url: keys, prefixes and markers percent-encoded in the listing (S3's
// ListMultipartUploads; ListParts' key likewise, as MinIO does).
struct UrlEncoding {
  bool url = false;
  std::string operator()(std::string_view s) const {
    return url ? sigv4::UriEncode(s, /*encode_slash=*/false) : std::string(s);
  }
};

std::optional<Response> ParseUrlEncoding(const Request& req, UrlEncoding* out) {
  std::optional<std::string_view> v = req.Query("encoding-type");
  if (v && *v != "url") {
    return Response::Error(S3Error::kInvalidArgument, "encoding-type", std::string(*v),
                           "Invalid Encoding Method specified in Request");
  }
  out->url = v.has_value();
  return std::nullopt;
}

Result<uint32_t> ParseBounded(const Request& req, std::string_view param, uint32_t fallback,
                              uint32_t max) {
  std::optional<std::string_view> v = req.Query(param);
  if (!v) {
    return fallback;
  }
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (v->empty() || ec != std::errc() || p != v->data() + v->size()) {
    return Status::InvalidArgument(std::string(param), "must be a non-negative integer");
  }
  return static_cast<uint32_t>(std::min<uint64_t>(n, max));
}

// The checksum of checksums of a completion whose parts list checksums (S3 "Using part-level
// checksums for multipart uploads"): every part must then name one of the same algorithm.
// The store compares each listed checksum with the part's own and stores this value with the
// object (docs/decisions.md, "S3 checksums: multipart in full").
std::optional<Response> CompositeOf(
    const std::vector<XmlPart>& parts,
    std::optional<std::pair<auth::ChecksumAlgorithm, std::string>>* out) {
  const std::string& name = parts.front().checksum_algorithm;
  if (std::all_of(parts.begin(), parts.end(),
                  [](const XmlPart& p) { return p.checksum_algorithm.empty(); })) {
    return std::nullopt;
  }
  const std::optional<auth::ChecksumAlgorithm> algorithm = auth::ChecksumFromName(name);
  std::vector<std::string> values;
  values.reserve(parts.size());
  for (const XmlPart& p : parts) {
    if (!algorithm || p.checksum_algorithm != name) {
      return Response::Error(S3Error::kInvalidPart, "Checksum" + p.checksum_algorithm,
                             std::to_string(p.part_number),
                             "Every part must list a checksum of the same algorithm.");
    }
    values.push_back(p.checksum);
  }
  std::optional<std::string> value = auth::CompositeChecksum(*algorithm, values);
  if (!value) {
    return Response::Error(S3Error::kInvalidPart, "Checksum" + name, "",
                           "A part's checksum is not the base64 of a " + name + " digest.");
  }
  *out = std::make_pair(*algorithm, std::move(*value));
  return std::nullopt;
}

// The object checksum a CompleteMultipartUpload request may carry (x-amz-checksum-<algorithm>,
// boto3's ChecksumCRC32=... on complete_multipart_upload): the checksum of checksums it
// expects, with or without the "-N" suffix; a different value is 400 BadDigest naming it, as S3
// answers. A full-object checksum (x-amz-checksum-type: FULL_OBJECT) is not computed here
// (docs/decisions.md), so it is neither checked nor stored.
std::optional<Response> CheckCompletionChecksum(
    const Request& req,
    const std::optional<std::pair<auth::ChecksumAlgorithm, std::string>>& composite) {
  for (const auto& [name, value] : req.headers) {
    std::optional<auth::ChecksumAlgorithm> algorithm = auth::ChecksumFromHeaderName(name);
    if (!algorithm) {
      continue;
    }
    const std::optional<std::string_view> type = req.Header("x-amz-checksum-type");
    if (type && EqualsIgnoreCase(Trim(*type), "FULL_OBJECT")) {
      return std::nullopt;
    }
    auto base = [](std::string_view v) { return v.substr(0, v.find('-')); };
    if (!composite || composite->first != *algorithm ||
        base(Trim(value)) != base(composite->second)) {
      return Response::Error(S3Error::kBadDigest, std::string(name), std::string(value),
                             fmt::format("The {} you specified did not match the calculated "
                                         "checksum.",
                                         auth::ChecksumName(*algorithm)));
    }
  }
  return std::nullopt;
}

}  // namespace

Response HandleCreateMultipartUpload(HandlerEnv& env, Request& req) {
  const std::optional<std::string_view> algorithm = req.Header("x-amz-checksum-algorithm");
  if (algorithm && !auth::ChecksumFromName(Trim(*algorithm))) {
    return Response::Error(S3Error::kInvalidRequest, "x-amz-checksum-algorithm",
                           std::string(*algorithm),
                           "Checksum algorithm provided is unsupported. Please try again with any "
                           "of the valid types: [CRC32, CRC32C, CRC64NVME, SHA1, SHA256]");
  }
  storage::PutOptions options = PutOptionsFromHeaders(req);
  if (algorithm) {
    options.upload_checksum_header =
        auth::ChecksumHeaderName(*auth::ChecksumFromName(Trim(*algorithm)));
  }
  TaggingHeader tagging = TaggingHeaderOf(req);
  if (tagging.error) {
    return std::move(*tagging.error);
  }
  options.tags = std::move(tagging.tags);
  Result<std::string> upload = env.store->CreateMultipartUpload(KeyOf(req), options);
  if (!upload.has_value()) {
    return Response::FromStatus(upload.error(), &req);
  }
  XmlWriter xml;
  xml.OpenRoot("InitiateMultipartUploadResult");
  xml.Element("Bucket", req.route.bucket);
  xml.Element("Key", req.route.key);
  xml.Element("UploadId", *upload);
  xml.Close("InitiateMultipartUploadResult");
  Response res = Response::Xml(std::move(xml).Finish());
  if (algorithm) {
    res.AddHeader("x-amz-checksum-algorithm",
                  std::string(auth::ChecksumName(*auth::ChecksumFromName(Trim(*algorithm)))));
  }
  return res;
}

// The part is written from a reader of the source's one version, so conditions, range check and
// bytes all see the same object.
Response HandleUploadPartCopy(HandlerEnv& env, Request& req) {
  CopySource source = ParseCopySource(env, req);
  if (source.error) {
    return std::move(*source.error);
  }
  Result<uint32_t> part = ParsePartNumber(req);
  if (!part.has_value()) {
    return Response::FromStatus(part.error(), &req);
  }
  storage::ByteRange range = storage::ByteRange::All();
  const std::optional<std::string_view> range_header = req.Header("x-amz-copy-source-range");
  if (range_header) {
    std::optional<storage::ByteRange> parsed = ParseCopySourceRange(*range_header);
    if (!parsed) {
      return Response::Error(S3Error::kInvalidArgument, "x-amz-copy-source-range",
                             std::string(*range_header),
                             "The x-amz-copy-source-range value must be of the form "
                             "bytes=first-last where first and last are the zero-based offsets "
                             "of the first and last bytes to copy");
    }
    range = *parsed;
  }
  Result<std::unique_ptr<storage::ObjectReader>> reader = env.store->Get(source.key, range);
  if (!reader.has_value()) {
    if (reader.error().code() == Code::kOutOfRange) {
      return Response::Error(S3Error::kInvalidRange, "x-amz-copy-source-range",
                             std::string(range_header.value_or("")));
    }
    return Response::FromStatus(reader.error(), &req);
  }
  const storage::ObjectMeta& meta = (*reader)->meta();
  if (range_header && range.offset + range.length > meta.size) {
    return Response::Error(S3Error::kInvalidRange, "x-amz-copy-source-range",
                           std::string(*range_header));
  }
  if (EvaluateConditions(ConditionsOf(req, "x-amz-copy-source-"), meta.etag, meta.mtime_unix_ms,
                         /*copy_source=*/true) != ConditionOutcome::kProceed) {
    return Response::Error(S3Error::kPreconditionFailed);
  }
  const uint64_t length = (*reader)->length();
  if (length > env.options->max_object_bytes) {
    return Response::Error(S3Error::kEntityTooLarge);
  }
  storage::PutOptions options;
  options.expected_size = length;
  Result<std::unique_ptr<storage::ObjectWriter>> writer =
      env.store->UploadPart(KeyOf(req), req.Query("uploadId").value_or(""), *part, options);
  if (!writer.has_value()) {
    return Response::FromStatus(writer.error(), &req);
  }
  std::vector<std::byte> buffer(std::min<uint64_t>(kCopyPieceBytes, std::max<uint64_t>(length, 1)));
  for (;;) {
    Result<uint64_t> n = (*reader)->Read(buffer);
    if (!n.has_value()) {
      return Response::FromStatus(n.error(), &req);
    }
    if (*n == 0) {
      break;
    }
    if (Status s = (*writer)->Append(ByteSpan(buffer.data(), *n)); !s.ok()) {
      return Response::FromStatus(s, &req);
    }
  }
  Result<storage::ObjectMeta> committed = (*writer)->Commit();
  if (!committed.has_value()) {
    return Response::FromStatus(committed.error(), &req);
  }
  XmlWriter xml;
  xml.OpenRoot("CopyPartResult");
  xml.Element("LastModified", FormatIso8601(committed->mtime_unix_ms));
  xml.Element("ETag", QuoteEtag(committed->etag));
  xml.Close("CopyPartResult");
  return Response::Xml(std::move(xml).Finish());
}

Response HandleCompleteMultipartUpload(HandlerEnv& env, Request& req) {
  Result<std::vector<XmlPart>> parsed = ParseCompleteMultipartUpload(req.body);
  if (!parsed.has_value()) {
    return Response::FromStatus(parsed.error(), &req);
  }
  std::optional<std::pair<auth::ChecksumAlgorithm, std::string>> composite;
  if (std::optional<Response> bad = CompositeOf(*parsed, &composite)) {
    return std::move(*bad);
  }
  storage::CompleteOptions options;
  if (std::optional<Response> bad = WriteConditionsOf(req, &options.conditions)) {
    return std::move(*bad);
  }
  if (std::optional<Response> bad = CheckCompletionChecksum(req, composite)) {
    return std::move(*bad);
  }
  if (composite) {
    options.checksum = {std::string(auth::ChecksumHeaderName(composite->first)), composite->second};
  }
  std::vector<storage::CompletedPart> parts;
  parts.reserve(parsed->size());
  for (XmlPart& p : *parsed) {
    storage::CompletedPart part{p.part_number, std::move(p.etag), {}};
    if (!p.checksum_algorithm.empty()) {
      part.checksum = {std::string(auth::ChecksumHeaderName(composite->first)),
                       std::move(p.checksum)};
    }
    parts.push_back(std::move(part));
  }
  Result<storage::ObjectMeta> meta = env.store->CompleteMultipartUpload(
      KeyOf(req), req.Query("uploadId").value_or(""), parts, options);
  if (!meta.has_value()) {
    return Response::FromStatus(meta.error(), &req);
  }
  XmlWriter xml;
  xml.OpenRoot("CompleteMultipartUploadResult");
  xml.Element("Location", "/" + req.route.bucket + "/" + req.route.key);
  xml.Element("Bucket", req.route.bucket);
  xml.Element("Key", req.route.key);
  xml.Element("ETag", QuoteEtag(meta->etag));
  if (composite) {
    xml.Element("Checksum" + std::string(auth::ChecksumName(composite->first)), composite->second);
    xml.Element("ChecksumType", "COMPOSITE");
  }
  xml.Close("CompleteMultipartUploadResult");
  return Response::Xml(std::move(xml).Finish());
}

Response HandleAbortMultipartUpload(HandlerEnv& env, Request& req) {
  Status s = env.store->AbortMultipartUpload(KeyOf(req), req.Query("uploadId").value_or(""));
  if (!s.ok()) {
    return Response::FromStatus(s, &req);
  }
  Response res;
  res.status = 204;
  return res;
}

Response HandleListParts(HandlerEnv& env, Request& req) {
  Result<uint32_t> marker = ParseBounded(req, "part-number-marker", 0, storage::kMaxPartNumber);
  if (!marker.has_value()) {
    return Response::FromStatus(marker.error(), &req);
  }
  Result<uint32_t> max_parts = ParseBounded(req, "max-parts", 1000, 1000);
  if (!max_parts.has_value()) {
    return Response::FromStatus(max_parts.error(), &req);
  }
  UrlEncoding enc;
  if (std::optional<Response> bad = ParseUrlEncoding(req, &enc)) {
    return std::move(*bad);
  }
  const std::string upload_id(req.Query("uploadId").value_or(""));
  Result<storage::ListPartsResult> parts =
      env.store->ListParts(KeyOf(req), upload_id, *marker, *max_parts);
  if (!parts.has_value()) {
    return Response::FromStatus(parts.error(), &req);
  }
  XmlWriter xml;
  xml.OpenRoot("ListPartsResult");
  xml.Element("Bucket", req.route.bucket);
  if (enc.url) {
    xml.Element("EncodingType", "url");
  }
  xml.Element("Key", enc(req.route.key));
  xml.Element("UploadId", upload_id);
  xml.Element("PartNumberMarker", uint64_t{*marker});
  xml.Element("NextPartNumberMarker", uint64_t{parts->next_part_number_marker});
  xml.Element("MaxParts", uint64_t{*max_parts});
  xml.Flag("IsTruncated", parts->truncated);
  if (std::optional<auth::ChecksumAlgorithm> a =
          auth::ChecksumFromHeaderName(parts->checksum_header)) {
    xml.Element("ChecksumAlgorithm", auth::ChecksumName(*a));
  }
  for (const storage::PartInfo& p : parts->parts) {
    xml.Open("Part");
    xml.Element("PartNumber", uint64_t{p.part_number});
    xml.Element("LastModified", FormatIso8601(p.mtime_unix_ms));
    xml.Element("ETag", QuoteEtag(p.etag));
    xml.Element("Size", p.size);
    if (std::optional<auth::ChecksumAlgorithm> a =
            auth::ChecksumFromHeaderName(p.checksum.header)) {
      xml.Element("Checksum" + std::string(auth::ChecksumName(*a)), p.checksum.value);
    }
    xml.Close("Part");
  }
  xml.Element("StorageClass", "STANDARD");
  xml.Close("ListPartsResult");
  return Response::Xml(std::move(xml).Finish());
}

Response HandleListMultipartUploads(HandlerEnv& env, Request& req) {
  Result<uint32_t> max_uploads = ParseBounded(req, "max-uploads", 1000, 1000);
  if (!max_uploads.has_value()) {
    return Response::FromStatus(max_uploads.error(), &req);
  }
  UrlEncoding enc;
  if (std::optional<Response> bad = ParseUrlEncoding(req, &enc)) {
    return std::move(*bad);
  }
  storage::ListUploadsOptions options;
  options.prefix = std::string(req.Query("prefix").value_or(""));
  options.delimiter = std::string(req.Query("delimiter").value_or(""));
  options.key_marker = std::string(req.Query("key-marker").value_or(""));
  options.upload_id_marker = std::string(req.Query("upload-id-marker").value_or(""));
  options.max_uploads = *max_uploads;
  Result<storage::ListUploadsResult> uploads =
      env.store->ListMultipartUploads(req.route.bucket, options);
  if (!uploads.has_value()) {
    return Response::FromStatus(uploads.error(), &req);
  }
  XmlWriter xml;
  xml.OpenRoot("ListMultipartUploadsResult");
  xml.Element("Bucket", req.route.bucket);
  xml.Element("KeyMarker", enc(options.key_marker));
  xml.Element("UploadIdMarker", options.upload_id_marker);
  xml.Element("NextKeyMarker", enc(uploads->next_key_marker));
  xml.Element("NextUploadIdMarker", uploads->next_upload_id_marker);
  if (!options.prefix.empty()) {
    xml.Element("Prefix", enc(options.prefix));
  }
  if (!options.delimiter.empty()) {
    xml.Element("Delimiter", enc(options.delimiter));
  }
  if (enc.url) {
    xml.Element("EncodingType", "url");
  }
  xml.Element("MaxUploads", uint64_t{*max_uploads});
  xml.Flag("IsTruncated", uploads->truncated);
  for (const storage::UploadInfo& u : uploads->uploads) {
    xml.Open("Upload");
    xml.Element("Key", enc(u.key));
    xml.Element("UploadId", u.upload_id);
    xml.Element("Initiated", FormatIso8601(u.initiated_unix_ms));
    xml.Element("StorageClass", "STANDARD");
    xml.Close("Upload");
  }
  for (const std::string& prefix : uploads->common_prefixes) {
    xml.Open("CommonPrefixes");
    xml.Element("Prefix", enc(prefix));
    xml.Close("CommonPrefixes");
  }
  xml.Close("ListMultipartUploadsResult");
  return Response::Xml(std::move(xml).Finish());
}

}  // namespace oc::gateway
