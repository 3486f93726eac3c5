// GetObjectAttributes (GET /bucket/key?attributes): what HeadObject and ListParts would say of
// an object, in one XML answer, as the S3 API reference "GetObjectAttributes" describes it.
// The attributes asked for come in x-amz-object-attributes (ETag, Checksum, ObjectParts,
// StorageClass, ObjectSize); the parts listing pages with x-amz-max-parts and
// x-amz-part-number-marker. Everything comes from Store::Head and, for part sizes, the part
// ranges Store::Get resolves (ByteRange::Part), so both backends answer alike.
#include <algorithm>
#include <charconv>

#include "handlers/handlers.h"
#include "oc/common/text.h"
#include "s3/s3_headers.h"
#include "s3/s3_xml.h"

namespace oc::gateway {
namespace {

// S3's ceiling (and default) for x-amz-max-parts, as ListParts'.
constexpr uint32_t kMaxAttributeParts = 1000;

struct Wanted {
  bool etag = false;
  bool checksum = false;
  bool parts = false;
  bool storage_class = false;
  bool size = false;
};

Result<Wanted> ParseAttributes(const Request& req) {
  constexpr std::string_view kHeader = "x-amz-object-attributes";
  Wanted w;
  bool any = false;
  // The header may come once as a comma-separated list or repeated; both are read.
  for (const HeaderField& h : req.headers) {
    if (!EqualsIgnoreCase(h.name, kHeader)) {
      continue;
    }
    std::string_view rest = h.value;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      const std::string_view name = Trim(rest.substr(0, comma));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      bool* flag = name == "ETag"           ? &w.etag
                   : name == "Checksum"     ? &w.checksum
                   : name == "ObjectParts"  ? &w.parts
                   : name == "StorageClass" ? &w.storage_class
                   : name == "ObjectSize"   ? &w.size
                                            : nullptr;
      if (flag == nullptr) {
        return Status::InvalidArgument(std::string(kHeader), "Invalid attribute name specified.");
      }
      *flag = true;
      any = true;
    }
  }
  if (!any) {
    return Status::InvalidArgument(std::string(kHeader),
                                   "The x-amz-object-attributes header specifying the attributes "
                                   "to be retrieved is either missing or empty");
  }
  return w;
}

// A non-negative integer header, `fallback` when absent.
Result<uint32_t> HeaderNumber(const Request& req, std::string_view name, uint32_t fallback) {
  std::optional<std::string_view> v = req.Header(name);
  if (!v) {
    return fallback;
  }
  const std::string_view t = Trim(*v);
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), n);
  if (t.empty() || ec != std::errc() || p != t.data() + t.size() || n > 0xffffffffull) {
    return Status::InvalidArgument(std::string(name), "must be a non-negative integer");
  }
  return static_cast<uint32_t>(n);
}

}  // namespace

Response HandleGetObjectAttributes(HandlerEnv& env, Request& req) {
  Result<Wanted> wanted = ParseAttributes(req);
  if (!wanted.has_value()) {
    return Response::FromStatus(wanted.error(), &req);
  }
  Result<uint32_t> max_parts = HeaderNumber(req, "x-amz-max-parts", kMaxAttributeParts);
  if (!max_parts.has_value()) {
    return Response::FromStatus(max_parts.error(), &req);
  }
  Result<uint32_t> marker = HeaderNumber(req, "x-amz-part-number-marker", 0);
  if (!marker.has_value()) {
    return Response::FromStatus(marker.error(), &req);
  }
  const storage::ObjectKey key{req.route.bucket, req.route.key};
  Result<storage::ObjectMeta> meta = env.store->Head(key);
  if (!meta.has_value()) {
    return Response::FromStatus(meta.error(), &req);
  }
  const auto* checksum = StoredChecksum(meta->headers);

  XmlWriter xml;
  xml.OpenRoot("GetObjectAttributesResponse");
  if (wanted->etag) {
    xml.Element("ETag", meta->etag);  // unquoted here, unlike every other answer (S3 does so)
  }
  if (wanted->checksum && checksum != nullptr) {
    // A multipart upload's checksum of checksums without the "-N" that GetObject appends:
    // the part count is ObjectParts' (S3 answers it so).
    const std::string_view value = checksum->second;
    const std::string_view bare = value.substr(0, value.find('-'));
    xml.Open("Checksum");
    xml.Element("Checksum" +
                    std::string(auth::ChecksumName(*auth::ChecksumFromHeaderName(checksum->first))),
                bare);
    xml.Element("ChecksumType", ChecksumTypeOfValue(value));
    xml.Close("Checksum");
  }
  // ObjectParts only for an object made by a multipart upload; its Part list (number and
  // size) only when the object carries an additional checksum (API reference,
  // GetObjectAttributesParts: "if an additional checksum ... isn't applied to the object ...
  // the response doesn't return the Part element"). The parts' own checksums are not kept
  // after the completion, so Part lists none (README, S3 compatibility).
  if (wanted->parts && meta->parts_count > 0) {
    const uint32_t count = meta->parts_count;
    xml.Open("ObjectParts");
    xml.Element("PartsCount", uint64_t{count});
    if (checksum != nullptr) {
      const uint32_t max = std::min(*max_parts, kMaxAttributeParts);
      const uint32_t first = *marker < count ? *marker + 1 : count + 1;
      const uint32_t last =
          static_cast<uint32_t>(std::min<uint64_t>(count, uint64_t{first} + max - 1));
      xml.Element("PartNumberMarker", uint64_t{*marker});
      xml.Element("NextPartNumberMarker", uint64_t{first <= last ? last : *marker});
      xml.Element("MaxParts", uint64_t{max});
      xml.Flag("IsTruncated", first <= count && last < count);
      for (uint32_t n = first; n <= last && max > 0; ++n) {
        Result<std::unique_ptr<storage::ObjectReader>> part =
            env.store->Get(key, storage::ByteRange::Part(n));
        if (!part.has_value()) {
          return Response::FromStatus(part.error(), &req);
        }
        xml.Open("Part");
        xml.Element("PartNumber", uint64_t{n});
        xml.Element("Size", (*part)->length());
        xml.Close("Part");
      }
    }
    xml.Close("ObjectParts");
  }
  if (wanted->storage_class) {
    xml.Element("StorageClass", "STANDARD");
  }
  if (wanted->size) {
    xml.Element("ObjectSize", meta->size);
  }
  xml.Close("GetObjectAttributesResponse");
  Response res = Response::Xml(std::move(xml).Finish());
  res.AddHeader("Last-Modified", FormatHttpDate(meta->mtime_unix_ms));
  return res;
}

}  // namespace oc::gateway
