// Object operations: GetObject, HeadObject, DeleteObject, DeleteObjects, CopyObject,
// GetObjectAcl, and the streamed PutObject/UploadPart (OpenPutObject, OpenUploadPart,
// FinishPutObject: their rows' open/finish pair, s3_ops.def).
#include <openssl/evp.h>

#include <charconv>
#include <cstring>

#include "handlers/handlers.h"
#include "oc/common/text.h"
#include "s3/http_range.h"
#include "s3/s3_headers.h"
#include "s3/s3_xml.h"

namespace oc::gateway {
namespace {

// GetObject query parameters that override response headers (S3: "Overriding response
// header values"); refused for anonymous requests as S3 does.
constexpr std::pair<std::string_view, std::string_view> kResponseOverrides[] = {
    {"response-content-type", "Content-Type"},
    {"response-content-language", "Content-Language"},
    {"response-expires", "Expires"},
    {"response-cache-control", "Cache-Control"},
    {"response-content-disposition", "Content-Disposition"},
    {"response-content-encoding", "Content-Encoding"},
};

storage::ObjectKey KeyOf(const Request& req) { return {req.route.bucket, req.route.key}; }

// A copy streamed through the gateway moves its bytes in pieces of this size.
constexpr uint64_t kCopyPieceBytes = 1 << 20;

// CopyObject with x-amz-checksum-algorithm naming another algorithm than the source's stored
// checksum (or a source without one): S3 computes the new checksum over the bytes, so the
// copy is streamed through the gateway from `reader` (one version of the source) into a new
// object, checksummed on the way, instead of Store::Copy
// (docs/decisions/s3-checksums-multipart-in-full.md). `replace` is the copy's metadata (nullopt:
// the source's), `tags` its tags (nullopt: the source's).
Result<storage::ObjectMeta> CopyWithChecksum(HandlerEnv& env, storage::ObjectReader& reader,
                                             const storage::ObjectKey& dst,
                                             std::optional<storage::PutOptions> replace,
                                             std::optional<storage::Tags> tags,
                                             const storage::WriteConditions& conditions,
                                             auth::ChecksumAlgorithm algorithm) {
  const storage::ObjectMeta& meta = reader.meta();
  storage::PutOptions options;
  if (replace.has_value()) {
    options = std::move(*replace);
  } else {
    options.content_type = meta.content_type;
    options.user_meta = meta.user_meta;
    options.headers = meta.headers;
    options.chunk = meta.chunk;
  }
  std::erase_if(options.headers,
                [](const auto& h) { return auth::ChecksumFromHeaderName(h.first).has_value(); });
  options.tags = tags.has_value() ? std::move(tags) : std::optional<storage::Tags>(meta.tags);
  options.if_none_match = conditions.if_none_match;
  options.if_match = conditions.if_match;
  options.expected_size = reader.length();
  OC_ASSIGN_OR_RETURN(std::unique_ptr<storage::ObjectWriter> writer, env.store->Put(dst, options));
  auth::Checksum checksum(algorithm);
  std::vector<std::byte> buffer(
      std::min<uint64_t>(kCopyPieceBytes, std::max<uint64_t>(reader.length(), 1)));
  for (;;) {
    OC_ASSIGN_OR_RETURN(const uint64_t n, reader.Read(buffer));
    if (n == 0) {
      break;
    }
    checksum.Update(ByteSpan(buffer.data(), n));
    OC_RETURN_IF_ERROR(writer->Append(ByteSpan(buffer.data(), n)));
  }
  OC_RETURN_IF_ERROR(
      writer->AddHeader(std::string(auth::ChecksumHeaderName(algorithm)), checksum.FinishBase64()));
  return writer->Commit();
}

// 304 carries the validators and no body; 412 is an ordinary error.
std::optional<Response> ApplyConditions(const Request& req, const storage::ObjectMeta& meta) {
  switch (EvaluateConditions(ConditionsOf(req, ""), meta.etag, meta.mtime_unix_ms)) {
    case ConditionOutcome::kProceed:
      return std::nullopt;
    case ConditionOutcome::kNotModified: {
      Response res;
      res.status = 304;
      res.AddHeader("ETag", QuoteEtag(meta.etag));
      res.AddHeader("Last-Modified", FormatHttpDate(meta.mtime_unix_ms));
      return res;
    }
    case ConditionOutcome::kPreconditionFailed:
      return Response::Error(S3Error::kPreconditionFailed);
  }
  return std::nullopt;
}

Response Unsatisfiable(uint64_t size) {
  Response res = Response::Error(S3Error::kInvalidRange);
  res.AddHeader("Content-Range", "bytes */" + std::to_string(size));
  return res;
}

void ApplyOverrides(const Request& req, Response* res) {
  for (const auto& [param, header] : kResponseOverrides) {
    std::optional<std::string_view> v = req.Query(param);
    if (!v) {
      continue;
    }
    if (header == "Content-Type") {
      res->content_type = std::string(*v);
      continue;
    }
    bool replaced = false;
    for (auto& [name, value] : res->headers) {
      if (EqualsIgnoreCase(name, header)) {
        value = std::string(*v);
        replaced = true;
      }
    }
    if (!replaced) {
      res->AddHeader(std::string(header), std::string(*v));
    }
  }
}

std::optional<Response> CheckReadRequest(const Request& req) {
  if (req.Query("partNumber") && req.Header("range")) {
    return Response::Error(S3Error::kInvalidRequest, "partNumber",
                           std::string(*req.Query("partNumber")),
                           "Cannot specify both Range header and partNumber query parameter.");
  }
  if (req.user == nullptr) {
    for (const auto& [param, header] : kResponseOverrides) {
      if (req.Query(param)) {
        return Response::Error(
            S3Error::kInvalidRequest, std::string(param), "",
            "Request specific response headers cannot be used for anonymous GET requests.");
      }
    }
  }
  return std::nullopt;
}

// GetObject and HeadObject of one part (?partNumber): the part's bytes as a 206 with the part's
// Content-Range, the whole object's ETag and, for a multipart object, x-amz-mp-parts-count.
// The store resolves the part in the version it opens; a HEAD drops the reader unread.
Response ServePart(HandlerEnv& env, Request& req, bool head, uint32_t part) {
  Result<std::unique_ptr<storage::ObjectReader>> reader =
      env.store->Get(KeyOf(req), storage::ByteRange::Part(part));
  if (!reader.has_value()) {
    return Response::FromStatus(reader.error(), &req);
  }
  const storage::ObjectMeta& meta = (*reader)->meta();
  if (std::optional<Response> c = ApplyConditions(req, meta)) {
    return std::move(*c);
  }
  Response res;
  const uint64_t offset = (*reader)->offset();
  const uint64_t length = (*reader)->length();
  res.stream_length = length;
  AddObjectHeaders(meta, &res);
  AddExpirationHeader(env, req, meta, &res);
  res.AddHeader("Accept-Ranges", "bytes");
  if (length > 0) {  // an empty part has no byte range to name
    res.status = 206;
    res.AddHeader("Content-Range", "bytes " + std::to_string(offset) + "-" +
                                       std::to_string(offset + length - 1) + "/" +
                                       std::to_string(meta.size));
  }
  ApplyOverrides(req, &res);
  if (!head) {
    res.reader = std::move(*reader);
  }
  return res;
}

// GetObject and HeadObject: conditions first (RFC 7232 6), then the range (RFC 7233).
Response ServeObject(HandlerEnv& env, Request& req, bool head) {
  if (std::optional<Response> bad = CheckReadRequest(req)) {
    return std::move(*bad);
  }
  if (req.Query("partNumber")) {
    Result<uint32_t> part = ParsePartNumber(req);
    if (!part.has_value()) {
      return Response::FromStatus(part.error(), &req);
    }
    return ServePart(env, req, head, *part);
  }
  std::optional<HttpRange> range;
  if (std::optional<std::string_view> h = req.Header("range")) {
    range = ParseRangeHeader(*h);
  }
  const storage::ObjectKey key = KeyOf(req);
  Response res;
  ResolvedRange resolved;
  storage::ObjectMeta meta;
  if (head || range) {
    Result<storage::ObjectMeta> m = env.store->Head(key);
    if (!m.has_value()) {
      return Response::FromStatus(m.error(), &req);
    }
    meta = std::move(*m);
    if (std::optional<Response> c = ApplyConditions(req, meta)) {
      return std::move(*c);
    }
    if (range) {
      resolved = ResolveRange(*range, meta.size);
      if (!resolved.satisfiable) {
        return Unsatisfiable(meta.size);
      }
    }
  }
  if (!head) {
    storage::ByteRange br = storage::ByteRange::All();
    if (range) {
      br = {resolved.offset, resolved.length, false};
    }
    Result<std::unique_ptr<storage::ObjectReader>> reader = env.store->Get(key, br);
    if (!reader.has_value()) {
      if (reader.error().code() == Code::kOutOfRange) {
        return Unsatisfiable(0);  // the object shrank since the HEAD above
      }
      return Response::FromStatus(reader.error(), &req);
    }
    res.reader = std::move(*reader);
    meta = res.reader->meta();
    if (!range) {
      if (std::optional<Response> c = ApplyConditions(req, meta)) {
        return std::move(*c);
      }
    } else {
      resolved.offset = res.reader->offset();
      resolved.length = res.reader->length();
    }
    res.stream_length = res.reader->length();
  } else {
    res.stream_length = range ? resolved.length : meta.size;
  }
  res.status = range ? 206 : 200;
  AddObjectHeaders(meta, &res);
  AddExpirationHeader(env, req, meta, &res);
  if (!range && ChecksumModeEnabled(req)) {
    AddChecksumHeaders(meta, &res);  // S3 sends the whole object's checksum only with it
  }
  res.AddHeader("Accept-Ranges", "bytes");
  if (range) {
    res.AddHeader("Content-Range", "bytes " + std::to_string(resolved.offset) + "-" +
                                       std::to_string(resolved.offset + resolved.length - 1) + "/" +
                                       std::to_string(meta.size));
  }
  ApplyOverrides(req, &res);
  return res;
}

// Content-MD5: base64 of 16 bytes, else InvalidDigest.
Result<std::optional<std::array<std::byte, 16>>> ParseContentMd5(const Request& req) {
  std::optional<std::string_view> h = req.Header("content-md5");
  if (!h) {
    return std::optional<std::array<std::byte, 16>>();
  }
  std::optional<std::string> raw = Base64Decode(*h);
  if (!raw || raw->size() != 16) {
    return Status::InvalidArgument("Content-MD5", "not the base64 of 16 bytes");
  }
  std::array<std::byte, 16> out;
  std::memcpy(out.data(), raw->data(), 16);
  return std::optional<std::array<std::byte, 16>>(out);
}

// What PutObject and UploadPart check first (after access): Content-MD5 into *md5, and the
// declared checksum into *start; the answer to a bad one.
std::optional<Response> ParseUploadDigests(const Request& req, UploadStart* start,
                                           std::optional<std::array<std::byte, 16>>* md5) {
  Result<std::optional<std::array<std::byte, 16>>> parsed = ParseContentMd5(req);
  if (!parsed.has_value()) {
    return Response::Error(S3Error::kInvalidDigest, "Content-MD5",
                           std::string(req.Header("content-md5").value_or("")));
  }
  *md5 = *parsed;
  return ParseUploadChecksum(req, start);
}

// A body of unknown length: plain chunked transfer (an aws-chunked one declares its length).
bool ChunkedTransfer(const Request& req) {
  return !req.content_length.has_value() &&
         req.Header("x-amz-decoded-content-length") == std::nullopt;
}

}  // namespace

std::string Md5Of(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(data.data(), data.size(), digest, &size, EVP_md5(), nullptr);
  return std::string(reinterpret_cast<const char*>(digest), size);
}

Response HandleGetObject(HandlerEnv& env, Request& req) { return ServeObject(env, req, false); }

Response HandleHeadObject(HandlerEnv& env, Request& req) { return ServeObject(env, req, true); }

Response HandleDeleteObject(HandlerEnv& env, Request& req) {
  Status s = env.store->Delete(KeyOf(req));
  if (!s.ok() && !(s.code() == Code::kNotFound && s.subject() != Subject::kBucket)) {
    return Response::FromStatus(s, &req);
  }
  Response res;
  res.status = 204;
  return res;
}

Response HandleDeleteObjects(HandlerEnv& env, Request& req) {
  if (std::optional<std::string_view> md5 = req.Header("content-md5")) {
    std::optional<std::string> raw = Base64Decode(*md5);
    if (!raw || raw->size() != 16) {
      return Response::Error(S3Error::kInvalidDigest, "Content-MD5", std::string(*md5));
    }
    if (*raw != Md5Of(req.body)) {
      return Response::Error(S3Error::kBadDigest, "Content-MD5", std::string(*md5));
    }
  }
  Result<XmlDeleteRequest> parsed = ParseDeleteObjects(req.body);
  if (!parsed.has_value()) {
    return Response::FromStatus(parsed.error(), &req);
  }
  XmlWriter xml;
  xml.OpenRoot("DeleteResult");
  for (const std::string& name : parsed->keys) {
    Status s = env.store->Delete({req.route.bucket, name});
    if (s.ok() || (s.code() == Code::kNotFound && s.subject() != Subject::kBucket)) {
      if (!parsed->quiet) {
        xml.Open("Deleted");
        xml.Element("Key", name);
        xml.Close("Deleted");
      }
      continue;
    }
    const S3ErrorRow& row = ErrorRow(ToS3Error(s));
    xml.Open("Error");
    xml.Element("Key", name);
    xml.Element("Code", row.code);
    xml.Element("Message", row.message);
    xml.Close("Error");
  }
  xml.Close("DeleteResult");
  return Response::Xml(std::move(xml).Finish());
}

Response HandleCopyObject(HandlerEnv& env, Request& req) {
  if (std::optional<Response> refused = CheckAclHeaders(req, /*bucket=*/false)) {
    return std::move(*refused);
  }
  CopySource source = ParseCopySource(env, req);
  if (source.error) {
    return std::move(*source.error);
  }
  const storage::ObjectKey& src = source.key;
  const std::string_view directive = req.Header("x-amz-metadata-directive").value_or("COPY");
  if (directive != "COPY" && directive != "REPLACE") {
    return Response::Error(S3Error::kInvalidArgument, "x-amz-metadata-directive",
                           std::string(directive), "Unknown metadata directive.");
  }
  const storage::ObjectKey dst = KeyOf(req);
  if (directive == "COPY" && src.bucket == dst.bucket && src.name == dst.name) {
    return Response::Error(S3Error::kInvalidRequest, "", "",
                           "This copy request is illegal because it is trying to copy an object "
                           "to itself without changing the object's metadata.");
  }
  storage::WriteConditions write_conditions;  // on dst (If-None-Match: *, If-Match)
  if (std::optional<Response> bad = WriteConditionsOf(req, &write_conditions)) {
    return std::move(*bad);
  }
  const Conditions conditions = ConditionsOf(req, "x-amz-copy-source-");
  if (conditions.if_match || conditions.if_none_match || conditions.if_modified_since ||
      conditions.if_unmodified_since) {
    Result<storage::ObjectMeta> meta = env.store->Head(src);
    if (!meta.has_value()) {
      return Response::FromStatus(meta.error(), &req);
    }
    if (EvaluateConditions(conditions, meta->etag, meta->mtime_unix_ms, /*copy_source=*/true) !=
        ConditionOutcome::kProceed) {
      return Response::Error(S3Error::kPreconditionFailed);
    }
  }
  // The tags follow x-amz-tagging-directive as the metadata follows its directive: COPY keeps
  // the source's, REPLACE takes x-amz-tagging (none when absent).
  const std::string_view tagging_directive = req.Header("x-amz-tagging-directive").value_or("COPY");
  if (tagging_directive != "COPY" && tagging_directive != "REPLACE") {
    return Response::Error(S3Error::kInvalidArgument, "x-amz-tagging-directive",
                           std::string(tagging_directive), "Unknown tagging directive.");
  }
  std::optional<storage::Tags> new_tags;
  if (tagging_directive == "REPLACE") {
    TaggingHeader tagging = TaggingHeaderOf(req);
    if (tagging.error) {
      return std::move(*tagging.error);
    }
    new_tags = tagging.tags.value_or(storage::Tags{});
  }
  std::optional<storage::PutOptions> replace;
  if (directive == "REPLACE") {
    replace = PutOptionsFromHeaders(req);
  } else if (new_tags.has_value()) {
    // Metadata copied, tags replaced: the store copies metadata only with no `replace`, so
    // the source's metadata is read here and passed on with the new tags.
    Result<storage::ObjectMeta> meta = env.store->Head(src);
    if (!meta.has_value()) {
      return Response::FromStatus(meta.error(), &req);
    }
    replace.emplace();
    replace->content_type = meta->content_type;
    replace->user_meta = meta->user_meta;
    replace->headers = meta->headers;
    replace->chunk = meta->chunk;
  }
  if (replace.has_value()) {
    replace->tags = new_tags;
  }
  Result<storage::ObjectMeta> copied = Status::Internal("unset");
  // S3 keeps the source's checksum unless x-amz-checksum-algorithm asks for another, which it
  // then computes over the bytes (CopyWithChecksum); Store::Copy keeps the stored one.
  const std::optional<std::string_view> algorithm_header = req.Header("x-amz-checksum-algorithm");
  std::optional<auth::ChecksumAlgorithm> algorithm;
  if (algorithm_header) {
    algorithm = auth::ChecksumFromName(Trim(*algorithm_header));
    if (!algorithm) {
      return Response::Error(S3Error::kInvalidRequest, "x-amz-checksum-algorithm",
                             std::string(*algorithm_header),
                             "Checksum algorithm provided is unsupported.");
    }
  }
  std::unique_ptr<storage::ObjectReader> reader;
  if (algorithm) {
    Result<std::unique_ptr<storage::ObjectReader>> opened =
        env.store->Get(src, storage::ByteRange::All());
    if (!opened.has_value()) {
      return Response::FromStatus(opened.error(), &req);
    }
    const auto* stored = StoredChecksum((*opened)->meta().headers);
    if (stored == nullptr || stored->first != auth::ChecksumHeaderName(*algorithm)) {
      reader = std::move(*opened);
    }
  }
  if (reader) {
    if (reader->length() > env.options->max_object_bytes) {
      return Response::Error(S3Error::kEntityTooLarge);
    }
    std::optional<storage::PutOptions> metadata;
    if (directive == "REPLACE") {
      metadata = std::move(replace);
    }
    copied = CopyWithChecksum(env, *reader, dst, std::move(metadata), std::move(new_tags),
                              write_conditions, *algorithm);
  } else {
    copied = env.store->Copy(src, dst, replace, write_conditions);
  }
  if (!copied.has_value()) {
    return Response::FromStatus(copied.error(), &req);
  }
  XmlWriter xml;
  xml.OpenRoot("CopyObjectResult");
  xml.Element("LastModified", FormatIso8601(copied->mtime_unix_ms));
  xml.Element("ETag", QuoteEtag(copied->etag));
  if (const auto* stored = StoredChecksum(copied->headers)) {
    xml.Element(
        "Checksum" + std::string(auth::ChecksumName(*auth::ChecksumFromHeaderName(stored->first))),
        stored->second);
  }
  xml.Close("CopyObjectResult");
  return Response::Xml(std::move(xml).Finish());
}

Response HandleGetObjectAcl(HandlerEnv& env, Request& req) {
  Result<storage::ObjectMeta> meta = env.store->Head(KeyOf(req));
  if (!meta.has_value()) {
    return Response::FromStatus(meta.error(), &req);
  }
  Result<storage::BucketInfo> info = env.store->HeadBucket(req.route.bucket);
  if (!info.has_value()) {
    return Response::FromStatus(info.error(), &req);
  }
  return OwnerOnlyAcl(info->owner);
}

UploadStart OpenPutObject(HandlerEnv& env, Request& req, uint64_t body_bytes) {
  UploadStart start;
  std::optional<std::array<std::byte, 16>> md5;
  if (std::optional<Response> bad = ParseUploadDigests(req, &start, &md5)) {
    start.error = std::move(*bad);
    return start;
  }
  if (std::optional<Response> refused = CheckAclHeaders(req, /*bucket=*/false)) {
    start.error = std::move(*refused);
    return start;
  }
  storage::PutOptions options = PutOptionsFromHeaders(req);
  options.content_md5 = md5;
  // A checksum sent as a header is stored as sent: the session checks it before Commit. One
  // sent as a trailer is added then (ObjectWriter::AddHeader).
  if (start.checksum && !start.checksum_expected.empty()) {
    options.headers.emplace_back(auth::ChecksumHeaderName(start.checksum->algorithm()),
                                 start.checksum_expected);
  }
  // Conditional writes, decided by the store at commit (types.h PutOptions).
  storage::WriteConditions conditions;
  if (std::optional<Response> bad = WriteConditionsOf(req, &conditions)) {
    start.error = std::move(*bad);
    return start;
  }
  options.if_none_match = conditions.if_none_match;
  options.if_match = std::move(conditions.if_match);
  TaggingHeader tagging = TaggingHeaderOf(req);
  if (tagging.error) {
    start.error = std::move(*tagging.error);
    return start;
  }
  options.tags = std::move(tagging.tags);
  if (!ChunkedTransfer(req)) {
    options.expected_size = body_bytes;
  }
  Result<std::unique_ptr<storage::ObjectWriter>> writer = env.store->Put(KeyOf(req), options);
  if (!writer.has_value()) {
    start.error = Response::FromStatus(writer.error(), &req);
    return start;
  }
  start.writer = std::move(*writer);
  return start;
}

UploadStart OpenUploadPart(HandlerEnv& env, Request& req, uint64_t body_bytes) {
  UploadStart start;
  std::optional<std::array<std::byte, 16>> md5;
  if (std::optional<Response> bad = ParseUploadDigests(req, &start, &md5)) {
    start.error = std::move(*bad);
    return start;
  }
  Result<uint32_t> part = ParsePartNumber(req);
  if (!part.has_value()) {
    start.error = Response::FromStatus(part.error(), &req);
    return start;
  }
  storage::PutOptions options;
  options.content_md5 = md5;
  // The part keeps its checksum (ListParts, the completion's comparison): one sent as a
  // header is stored as sent once the session has checked it, a trailer's is added then.
  if (start.checksum && !start.checksum_expected.empty()) {
    options.headers.emplace_back(auth::ChecksumHeaderName(start.checksum->algorithm()),
                                 start.checksum_expected);
  }
  // Header or trailer, the store refuses a checksum of another algorithm than the upload's
  // before any of the body is read (S3 does; PutOptions::part_checksum_header).
  if (start.checksum) {
    options.part_checksum_header = auth::ChecksumHeaderName(start.checksum->algorithm());
  }
  if (!ChunkedTransfer(req)) {
    options.expected_size = body_bytes;
  }
  Result<std::unique_ptr<storage::ObjectWriter>> writer =
      env.store->UploadPart(KeyOf(req), req.Query("uploadId").value_or(""), *part, options);
  if (!writer.has_value()) {
    start.error = Response::FromStatus(writer.error(), &req);
    return start;
  }
  start.writer = std::move(*writer);
  return start;
}

Response FinishPutObject(HandlerEnv& env, Request& req, const UploadStart& /*start*/,
                         Result<storage::ObjectMeta> committed) {
  if (!committed.has_value()) {
    return Response::FromStatus(committed.error(), &req);
  }
  Response res;
  res.AddHeader("ETag", QuoteEtag(committed->etag));
  if (req.route.op == S3Op::kPutObject) {  // not UploadPart, which shares this finish
    AddExpirationHeader(env, req, *committed, &res);
  }
  return res;
}

}  // namespace oc::gateway
