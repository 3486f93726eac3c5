// Multipart uploads: CreateMultipartUpload, UploadPartCopy, CompleteMultipartUpload,
// AbortMultipartUpload, ListParts, ListMultipartUploads (UploadPart streams:
// object_handlers.cc OpenUploadPart).
#include <algorithm>
#include <charconv>
#include <vector>

#include "handlers/handlers.h"
#include "handlers/multipart_checksum.h"
#include "oc/common/text.h"
#include "oc/sigv4/uri.h"
#include "s3/s3_copy_source.h"
#include "s3/s3_headers.h"
#include "s3/s3_xml.h"

namespace oc::gateway {
namespace {

storage::ObjectKey KeyOf(const Request& req) { return {req.route.bucket, req.route.key}; }

// UploadPartCopy moves the source's bytes through a buffer of this size (one per request).
constexpr uint64_t kCopyPieceBytes = 1 << 20;

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

}  // namespace

Response HandleCreateMultipartUpload(HandlerEnv& env, Request& req) {
  if (std::optional<Response> refused = CheckAclHeaders(req, /*bucket=*/false)) {
    return std::move(*refused);
  }
  storage::PutOptions options = PutOptionsFromHeaders(req);
  if (std::optional<Response> bad = ParseCreateUploadChecksum(req, &options)) {
    return std::move(*bad);
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
  if (std::optional<auth::ChecksumAlgorithm> a =
          auth::ChecksumFromHeaderName(options.upload_checksum_header)) {
    res.AddHeader("x-amz-checksum-algorithm", std::string(auth::ChecksumName(*a)));
    res.AddHeader("x-amz-checksum-type",
                  std::string(ChecksumTypeName(options.upload_checksum_type)));
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
    std::optional<CopySourceRange> parsed = ParseCopySourceRange(*range_header);
    if (!parsed) {
      return Response::Error(S3Error::kInvalidArgument, "x-amz-copy-source-range",
                             std::string(*range_header),
                             "The x-amz-copy-source-range value must be of the form "
                             "bytes=first-last where first and last are the zero-based offsets "
                             "of the first and last bytes to copy");
    }
    range = storage::ByteRange{parsed->first, parsed->last - parsed->first + 1, false};
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
  storage::CompleteOptions options;
  if (std::optional<Response> bad = WriteConditionsOf(req, &options.conditions)) {
    return std::move(*bad);
  }
  std::vector<storage::CompletedPart> parts;
  if (std::optional<Response> bad =
          PlanCompletionChecksum(env, req, std::move(*parsed), &parts, &options)) {
    return std::move(*bad);
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
  // The checksum stored (also when this retries a completion that succeeded).
  if (const auto* stored = StoredChecksum(meta->headers)) {
    xml.Element(
        "Checksum" + std::string(auth::ChecksumName(*auth::ChecksumFromHeaderName(stored->first))),
        stored->second);
    xml.Element("ChecksumType", ChecksumTypeOfValue(stored->second));
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
    xml.Element("ChecksumType", ChecksumTypeName(parts->checksum_type));
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
