// Bucket operations: ListBuckets, CreateBucket, DeleteBucket, HeadBucket, GetBucketLocation,
// GetBucketAcl, GetBucketVersioning, ListObjects (v1), ListObjectsV2 and ListObjectVersions.
#include <charconv>

#include "handlers/handlers.h"
#include "oc/common/bytes.h"
#include "oc/sigv4/uri.h"
#include "s3/s3_headers.h"
#include "s3/s3_xml.h"

namespace oc::gateway {
namespace {

// S3's ceiling for max-keys; larger requests are answered with at most this many.
constexpr uint32_t kMaxListKeys = 1000;
// S3's range for ListBuckets' max-buckets (1..10000); the default lists all (up to this many).
constexpr uint32_t kMaxListBuckets = 10000;

Result<uint32_t> ParseMaxKeys(const Request& req, std::string_view param) {
  std::optional<std::string_view> v = req.Query(param);
  if (!v) {
    return kMaxListKeys;
  }
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (v->empty() || ec != std::errc() || p != v->data() + v->size()) {
    return Status::InvalidArgument(std::string(param), "must be a non-negative integer");
  }
  return static_cast<uint32_t>(std::min<uint64_t>(n, kMaxListKeys));
}

// encoding-type=url: S3 percent-encodes keys and prefixes in the listing.
struct ListEncoding {
  bool url = false;
  std::string operator()(std::string_view s) const {
    return url ? sigv4::UriEncode(s, /*encode_slash=*/false) : std::string(s);
  }
};

Result<ListEncoding> ParseEncoding(const Request& req) {
  std::optional<std::string_view> v = req.Query("encoding-type");
  if (!v) {
    return ListEncoding{};
  }
  if (*v != "url") {
    return Status::InvalidArgument("encoding-type", "Invalid Encoding Method specified in Request");
  }
  return ListEncoding{true};
}

void AppendContents(XmlWriter& xml, const storage::ListResult& result, const ListEncoding& enc,
                    bool with_owner, std::string_view owner) {
  for (const storage::ListEntry& e : result.objects) {
    xml.Open("Contents");
    xml.Element("Key", enc(e.name));
    xml.Element("LastModified", FormatIso8601(e.meta.mtime_unix_ms));
    xml.Element("ETag", QuoteEtag(e.meta.etag));
    xml.Element("Size", e.meta.size);
    if (with_owner) {
      AppendOwner(xml, owner);
    }
    xml.Element("StorageClass", "STANDARD");
    xml.Close("Contents");
  }
  for (const std::string& prefix : result.common_prefixes) {
    xml.Open("CommonPrefixes");
    xml.Element("Prefix", enc(prefix));
    xml.Close("CommonPrefixes");
  }
}

std::string QueryOr(const Request& req, std::string_view name) {
  std::optional<std::string_view> v = req.Query(name);
  return v ? std::string(*v) : std::string();
}

}  // namespace

// ListBuckets pages (S3's max-buckets, continuation-token and prefix): the token is the hex of
// the last bucket name returned, as ListObjectsV2's, and the listing is sorted by name.
Response HandleListBuckets(HandlerEnv& env, Request& req) {
  uint32_t max_buckets = kMaxListBuckets;
  if (std::optional<std::string_view> v = req.Query("max-buckets")) {
    uint64_t n = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (v->empty() || ec != std::errc() || p != v->data() + v->size() || n < 1 ||
        n > kMaxListBuckets) {
      return Response::Error(S3Error::kInvalidArgument, "max-buckets", std::string(*v),
                             "max-buckets must be an integer from 1 to 10000");
    }
    max_buckets = static_cast<uint32_t>(n);
  }
  std::string after;
  const std::optional<std::string_view> token = req.Query("continuation-token");
  if (token && !token->empty()) {
    std::optional<std::vector<std::byte>> decoded = HexDecode(*token);
    if (!decoded) {
      return Response::Error(S3Error::kInvalidArgument, "continuation-token", std::string(*token),
                             "The continuation token provided is incorrect");
    }
    after.assign(reinterpret_cast<const char*>(decoded->data()), decoded->size());
  }
  const std::string prefix = QueryOr(req, "prefix");
  Result<std::vector<storage::BucketInfo>> buckets = env.store->ListBuckets();
  if (!buckets.has_value()) {
    return Response::FromStatus(buckets.error(), &req);
  }
  XmlWriter xml;
  xml.OpenRoot("ListAllMyBucketsResult");
  AppendOwner(xml, req.user->access_key);
  xml.Open("Buckets");
  uint32_t listed = 0;
  std::string last;
  bool truncated = false;
  for (const storage::BucketInfo& b : *buckets) {
    if (b.name <= after || !b.name.starts_with(prefix) || !env.access->MayList(*req.user, b)) {
      continue;
    }
    if (listed == max_buckets) {
      truncated = true;
      break;
    }
    xml.Open("Bucket");
    xml.Element("Name", b.name);
    xml.Element("CreationDate", FormatIso8601(b.created_unix_ms));
    xml.Element("BucketRegion", env.options->region);
    xml.Close("Bucket");
    last = b.name;
    ++listed;
  }
  xml.Close("Buckets");
  if (truncated) {
    xml.Element("ContinuationToken", HexEncode(AsBytes(last)));
  }
  if (req.Query("prefix")) {
    xml.Element("Prefix", prefix);
  }
  xml.Close("ListAllMyBucketsResult");
  return Response::Xml(std::move(xml).Finish());
}

Response HandleCreateBucket(HandlerEnv& env, Request& req) {
  const std::string& bucket = req.route.bucket;
  if (std::optional<Response> refused = CheckAclHeaders(req, /*bucket=*/true)) {
    return std::move(*refused);
  }
  if (!req.body.empty()) {
    Result<std::string> location = ParseCreateBucketConfiguration(req.body);
    if (!location.has_value()) {
      return Response::FromStatus(location.error(), &req);
    }
  }
  Status s = env.store->CreateBucket(bucket, req.user->access_key);
  env.access->Forget(bucket);
  if (s.code() == Code::kAlreadyExists) {
    Result<storage::BucketInfo> info = env.store->HeadBucket(bucket);
    if (info.has_value() && info->owner == req.user->access_key) {
      // S3 in us-east-1 answers its owner's re-creation 200 and changes nothing (the legacy
      // behaviour clients and the s3-tests suite expect there); other regions answer 409.
      if (env.options->region == "us-east-1") {
        Response res;
        res.AddHeader("Location", "/" + bucket);
        return res;
      }
      return Response::Error(S3Error::kBucketAlreadyOwnedByYou);
    }
    return Response::Error(S3Error::kBucketAlreadyExists);
  }
  if (!s.ok()) {
    return Response::FromStatus(s.subject() == Subject::kNone ? s.WithSubject(Subject::kBucket) : s,
                                &req);
  }
  Response res;
  res.AddHeader("Location", "/" + bucket);
  return res;
}

Response HandleDeleteBucket(HandlerEnv& env, Request& req) {
  Status s = env.store->DeleteBucket(req.route.bucket);
  env.access->Forget(req.route.bucket);
  if (!s.ok()) {
    return Response::FromStatus(s, &req);
  }
  Response res;
  res.status = 204;
  return res;
}

Response HandleHeadBucket(HandlerEnv& env, Request& req) {
  Result<storage::BucketInfo> info = env.store->HeadBucket(req.route.bucket);
  if (!info.has_value()) {
    return Response::FromStatus(info.error(), &req);
  }
  Response res;
  res.AddHeader("x-amz-bucket-region", env.options->region);
  return res;
}

Response HandleGetBucketLocation(HandlerEnv& env, Request& /*req*/) {
  // S3 reports us-east-1 as an empty LocationConstraint.
  const std::string& region = env.options->region;
  XmlWriter xml;
  xml.OpenRoot("LocationConstraint");
  if (region != "us-east-1") {
    xml.Text(region);
  }
  xml.Close("LocationConstraint");
  return Response::Xml(std::move(xml).Finish());
}

// The only ACL we have: the owner holds FULL_CONTROL (clients such as s3cmd ask for it).
Response OwnerOnlyAcl(std::string_view owner) {
  XmlWriter xml;
  xml.OpenRoot("AccessControlPolicy");
  AppendOwner(xml, owner);
  xml.Open("AccessControlList");
  xml.Open("Grant");
  xml.Raw(
      "<Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
      "xsi:type=\"CanonicalUser\">");
  xml.Element("ID", owner);
  xml.Element("DisplayName", owner);
  xml.Close("Grantee");
  xml.Element("Permission", "FULL_CONTROL");
  xml.Close("Grant");
  xml.Close("AccessControlList");
  xml.Close("AccessControlPolicy");
  return Response::Xml(std::move(xml).Finish());
}

Response HandleGetBucketAcl(HandlerEnv& env, Request& req) {
  Result<storage::BucketInfo> info = env.store->HeadBucket(req.route.bucket);
  if (!info.has_value()) {
    return Response::FromStatus(info.error(), &req);
  }
  return OwnerOnlyAcl(info->owner);
}

Response HandleGetBucketVersioning(HandlerEnv& /*env*/, Request& /*req*/) {
  // Versioning is never enabled: S3 answers an empty configuration for such buckets.
  XmlWriter xml;
  xml.OpenRoot("VersioningConfiguration");
  xml.Close("VersioningConfiguration");
  return Response::Xml(std::move(xml).Finish());
}

Response HandleListObjects(HandlerEnv& env, Request& req) {
  Result<uint32_t> max_keys = ParseMaxKeys(req, "max-keys");
  if (!max_keys.has_value()) {
    return Response::FromStatus(max_keys.error(), &req);
  }
  Result<ListEncoding> enc = ParseEncoding(req);
  if (!enc.has_value()) {
    return Response::FromStatus(enc.error(), &req);
  }
  storage::ListOptions options;
  options.prefix = QueryOr(req, "prefix");
  options.delimiter = QueryOr(req, "delimiter");
  options.start_after = QueryOr(req, "marker");
  options.max_keys = *max_keys;
  storage::ListResult result;
  if (options.max_keys > 0) {
    Result<storage::ListResult> listed = env.store->List(req.route.bucket, options);
    if (!listed.has_value()) {
      return Response::FromStatus(listed.error(), &req);
    }
    result = std::move(*listed);
  }
  XmlWriter xml;
  xml.OpenRoot("ListBucketResult");
  xml.Element("Name", req.route.bucket);
  // ListObjects (v1) returns its Prefix as given even with encoding-type=url, as S3 does
  // (botocore decodes every other encoded element of a v1 listing, but not this one).
  xml.Element("Prefix", options.prefix);
  xml.Element("Marker", (*enc)(options.start_after));
  xml.Element("MaxKeys", uint64_t{*max_keys});
  if (!options.delimiter.empty()) {
    xml.Element("Delimiter", (*enc)(options.delimiter));
  }
  if (enc->url) {
    xml.Element("EncodingType", "url");
  }
  xml.Flag("IsTruncated", result.truncated);
  if (result.truncated) {
    xml.Element("NextMarker", (*enc)(result.next_start_after));
  }
  AppendContents(xml, result, *enc, /*with_owner=*/true, req.user ? req.user->access_key : "");
  xml.Close("ListBucketResult");
  return Response::Xml(std::move(xml).Finish());
}

Response HandleListObjectsV2(HandlerEnv& env, Request& req) {
  if (req.Query("list-type") != std::optional<std::string_view>("2")) {
    return Response::Error(S3Error::kInvalidArgument, "list-type",
                           std::string(req.Query("list-type").value_or("")));
  }
  Result<uint32_t> max_keys = ParseMaxKeys(req, "max-keys");
  if (!max_keys.has_value()) {
    return Response::FromStatus(max_keys.error(), &req);
  }
  Result<ListEncoding> enc = ParseEncoding(req);
  if (!enc.has_value()) {
    return Response::FromStatus(enc.error(), &req);
  }
  storage::ListOptions options;
  options.prefix = QueryOr(req, "prefix");
  options.delimiter = QueryOr(req, "delimiter");
  const std::string start_after = QueryOr(req, "start-after");
  // An empty continuation-token lists from the start (some SDKs send one on the first page)
  // and is echoed, empty, like any token sent (API reference, ListObjectsV2: "If
  // ContinuationToken was sent with the request, it is included in the response").
  const std::optional<std::string_view> token = req.Query("continuation-token");
  options.start_after = start_after;
  if (token && !token->empty()) {
    // Our tokens are the hex of the last key or prefix returned: opaque to clients, and
    // checked here like any other input.
    std::optional<std::vector<std::byte>> decoded = HexDecode(*token);
    if (!decoded) {
      return Response::Error(S3Error::kInvalidArgument, "continuation-token", std::string(*token),
                             "The continuation token provided is incorrect");
    }
    std::string after(reinterpret_cast<const char*>(decoded->data()), decoded->size());
    if (after > options.start_after) {
      options.start_after = std::move(after);
    }
  }
  options.max_keys = *max_keys;
  storage::ListResult result;
  if (options.max_keys > 0) {
    Result<storage::ListResult> listed = env.store->List(req.route.bucket, options);
    if (!listed.has_value()) {
      return Response::FromStatus(listed.error(), &req);
    }
    result = std::move(*listed);
  }
  const bool fetch_owner = req.Query("fetch-owner") == std::optional<std::string_view>("true");
  XmlWriter xml;
  xml.OpenRoot("ListBucketResult");
  xml.Element("Name", req.route.bucket);
  xml.Element("Prefix", (*enc)(options.prefix));
  if (!options.delimiter.empty()) {
    xml.Element("Delimiter", (*enc)(options.delimiter));
  }
  xml.Element("MaxKeys", uint64_t{*max_keys});
  if (enc->url) {
    xml.Element("EncodingType", "url");
  }
  xml.Element("KeyCount", uint64_t{result.objects.size() + result.common_prefixes.size()});
  if (token) {
    xml.Element("ContinuationToken", *token);
  }
  if (!start_after.empty()) {
    xml.Element("StartAfter", (*enc)(start_after));
  }
  xml.Flag("IsTruncated", result.truncated);
  if (result.truncated) {
    xml.Element("NextContinuationToken", HexEncode(AsBytes(result.next_start_after)));
  }
  AppendContents(xml, result, *enc, fetch_owner, req.user ? req.user->access_key : "");
  xml.Close("ListBucketResult");
  return Response::Xml(std::move(xml).Finish());
}

// Versioning is never enabled here, so each object is its only version, "null", and the latest
// (S3 on a bucket that never had versioning: "Objects that are stored in your bucket before
// you set the versioning state have a version ID of null", user guide, "Working with objects
// in a versioning-enabled bucket"; ListObjectVersions lists them so). The listing is
// ListObjects' with S3's version markers: key-marker is the key to start after; the only
// version-id-marker that names a version here is "null", whose key is then done too.
Response HandleListObjectVersions(HandlerEnv& env, Request& req) {
  Result<uint32_t> max_keys = ParseMaxKeys(req, "max-keys");
  if (!max_keys.has_value()) {
    return Response::FromStatus(max_keys.error(), &req);
  }
  Result<ListEncoding> enc = ParseEncoding(req);
  if (!enc.has_value()) {
    return Response::FromStatus(enc.error(), &req);
  }
  const std::string key_marker = QueryOr(req, "key-marker");
  const std::optional<std::string_view> version_marker = req.Query("version-id-marker");
  if (version_marker && !version_marker->empty()) {
    // S3: "A version-id marker cannot be specified without a key marker."
    if (key_marker.empty()) {
      return Response::Error(S3Error::kInvalidArgument, "version-id-marker",
                             std::string(*version_marker),
                             "A version-id marker cannot be specified without a key marker.");
    }
    if (*version_marker != "null") {
      return Response::Error(S3Error::kInvalidArgument, "version-id-marker",
                             std::string(*version_marker), "Invalid version id specified");
    }
  }
  storage::ListOptions options;
  options.prefix = QueryOr(req, "prefix");
  options.delimiter = QueryOr(req, "delimiter");
  options.start_after = key_marker;
  options.max_keys = *max_keys;
  storage::ListResult result;
  if (options.max_keys > 0) {
    Result<storage::ListResult> listed = env.store->List(req.route.bucket, options);
    if (!listed.has_value()) {
      return Response::FromStatus(listed.error(), &req);
    }
    result = std::move(*listed);
  }
  const std::string owner = req.user ? req.user->access_key : "";
  XmlWriter xml;
  xml.OpenRoot("ListVersionsResult");
  xml.Element("Name", req.route.bucket);
  xml.Element("Prefix", (*enc)(options.prefix));
  xml.Element("KeyMarker", (*enc)(key_marker));
  xml.Element("VersionIdMarker", version_marker.value_or(""));
  xml.Element("MaxKeys", uint64_t{*max_keys});
  if (!options.delimiter.empty()) {
    xml.Element("Delimiter", (*enc)(options.delimiter));
  }
  if (enc->url) {
    xml.Element("EncodingType", "url");
  }
  xml.Flag("IsTruncated", result.truncated);
  if (result.truncated) {
    xml.Element("NextKeyMarker", (*enc)(result.next_start_after));
    xml.Element("NextVersionIdMarker", "null");
  }
  for (const storage::ListEntry& e : result.objects) {
    xml.Open("Version");
    xml.Element("Key", (*enc)(e.name));
    xml.Element("VersionId", "null");
    xml.Flag("IsLatest", true);
    xml.Element("LastModified", FormatIso8601(e.meta.mtime_unix_ms));
    xml.Element("ETag", QuoteEtag(e.meta.etag));
    xml.Element("Size", e.meta.size);
    AppendOwner(xml, owner);
    xml.Element("StorageClass", "STANDARD");
    xml.Close("Version");
  }
  for (const std::string& prefix : result.common_prefixes) {
    xml.Open("CommonPrefixes");
    xml.Element("Prefix", (*enc)(prefix));
    xml.Close("CommonPrefixes");
  }
  xml.Close("ListVersionsResult");
  return Response::Xml(std::move(xml).Finish());
}

}  // namespace oc::gateway
