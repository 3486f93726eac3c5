#include "router.h"

#include <algorithm>
#include <array>

namespace oc::gateway {
namespace {

enum class Level : uint8_t { kService, kBucket, kObject };

struct Row {
  std::string_view method;
  Level level;
  std::string_view subresource;  // query parameter that must be present; "" for none
  bool copy_source;              // row applies only when x-amz-copy-source is present
  S3Op op;
  BodyPolicy body;
};

// Most specific first: a row with a sub-resource or copy source precedes the plain row.
constexpr Row kRoutes[] = {
    // docs/protocol.md: descriptor GET (headers) or POST (body), with &probe the batch
    // existence query; descriptor PUT streams N chunks.
    {"GET", Level::kBucket, "objectcache", false, S3Op::kGetObjectCache, BodyPolicy::kNone},
    {"POST", Level::kBucket, "objectcache", false, S3Op::kGetObjectCache, BodyPolicy::kXml},
    {"PUT", Level::kBucket, "objectcache", false, S3Op::kPutObjectCache, BodyPolicy::kStream},
    {"GET", Level::kService, "", false, S3Op::kListBuckets, BodyPolicy::kNone},
    {"GET", Level::kBucket, "location", false, S3Op::kGetBucketLocation, BodyPolicy::kNone},
    {"GET", Level::kBucket, "acl", false, S3Op::kGetBucketAcl, BodyPolicy::kNone},
    {"GET", Level::kBucket, "versioning", false, S3Op::kGetBucketVersioning, BodyPolicy::kNone},
    {"GET", Level::kBucket, "uploads", false, S3Op::kListMultipartUploads, BodyPolicy::kNone},
    {"GET", Level::kBucket, "versions", false, S3Op::kListObjectVersions, BodyPolicy::kNone},
    {"GET", Level::kBucket, "list-type", false, S3Op::kListObjectsV2, BodyPolicy::kNone},
    {"GET", Level::kBucket, "", false, S3Op::kListObjects, BodyPolicy::kNone},
    {"HEAD", Level::kBucket, "", false, S3Op::kHeadBucket, BodyPolicy::kNone},
    {"PUT", Level::kBucket, "acl", false, S3Op::kPutBucketAcl, BodyPolicy::kXml},
    {"PUT", Level::kBucket, "", false, S3Op::kCreateBucket, BodyPolicy::kXml},
    {"DELETE", Level::kBucket, "", false, S3Op::kDeleteBucket, BodyPolicy::kNone},
    {"POST", Level::kBucket, "delete", false, S3Op::kDeleteObjects, BodyPolicy::kXml},
    {"GET", Level::kObject, "uploadId", false, S3Op::kListParts, BodyPolicy::kNone},
    {"GET", Level::kObject, "acl", false, S3Op::kGetObjectAcl, BodyPolicy::kNone},
    {"GET", Level::kObject, "attributes", false, S3Op::kGetObjectAttributes, BodyPolicy::kNone},
    {"GET", Level::kObject, "tagging", false, S3Op::kGetObjectTagging, BodyPolicy::kNone},
    {"PUT", Level::kObject, "tagging", false, S3Op::kPutObjectTagging, BodyPolicy::kXml},
    {"DELETE", Level::kObject, "tagging", false, S3Op::kDeleteObjectTagging, BodyPolicy::kNone},
    {"GET", Level::kObject, "", false, S3Op::kGetObject, BodyPolicy::kNone},
    {"HEAD", Level::kObject, "", false, S3Op::kHeadObject, BodyPolicy::kNone},
    {"PUT", Level::kObject, "acl", false, S3Op::kPutObjectAcl, BodyPolicy::kXml},
    {"PUT", Level::kObject, "uploadId", true, S3Op::kUploadPartCopy, BodyPolicy::kNone},
    {"PUT", Level::kObject, "uploadId", false, S3Op::kUploadPart, BodyPolicy::kStream},
    {"PUT", Level::kObject, "", true, S3Op::kCopyObject, BodyPolicy::kNone},
    {"PUT", Level::kObject, "", false, S3Op::kPutObject, BodyPolicy::kStream},
    {"DELETE", Level::kObject, "uploadId", false, S3Op::kAbortMultipartUpload, BodyPolicy::kNone},
    {"DELETE", Level::kObject, "", false, S3Op::kDeleteObject, BodyPolicy::kNone},
    {"POST", Level::kObject, "uploads", false, S3Op::kCreateMultipartUpload, BodyPolicy::kNone},
    {"POST", Level::kObject, "uploadId", false, S3Op::kCompleteMultipartUpload, BodyPolicy::kXml},
};

// Query parameters that name a sub-resource (a different operation) in S3. A request carrying
// one that no row above serves for its method and level is NotImplemented. versionId is here
// too: versioning is never enabled, and ignoring it would answer for the wrong version.
constexpr std::array<std::string_view, 35> kSubresources = {"accelerate",
                                                            "acl",
                                                            "analytics",
                                                            "attributes",
                                                            "cors",
                                                            "delete",
                                                            "encryption",
                                                            "intelligent-tiering",
                                                            "inventory",
                                                            "legal-hold",
                                                            "lifecycle",
                                                            "location",
                                                            "logging",
                                                            "metrics",
                                                            "notification",
                                                            "object-lock",
                                                            "objectcache",
                                                            "ownershipControls",
                                                            "policy",
                                                            "policyStatus",
                                                            "publicAccessBlock",
                                                            "replication",
                                                            "requestPayment",
                                                            "restore",
                                                            "retention",
                                                            "select",
                                                            "tagging",
                                                            "torrent",
                                                            "uploadId",
                                                            "uploads",
                                                            "versioning",
                                                            "versions",
                                                            "website",
                                                            "list-type",
                                                            "versionId"};

bool HasParam(const std::vector<std::pair<std::string, std::string>>& query,
              std::string_view name) {
  return std::any_of(query.begin(), query.end(), [&](const auto& p) { return p.first == name; });
}

std::string_view StripPort(std::string_view host) {
  if (!host.empty() && host.front() == '[') {  // [::1]:9000
    const size_t close = host.find(']');
    return close == std::string_view::npos ? host : host.substr(0, close + 1);
  }
  const size_t colon = host.rfind(':');
  return colon == std::string_view::npos ? host : host.substr(0, colon);
}

}  // namespace

Route RouteRequest(const RouteInput& in, std::string_view virtual_host_domain) {
  static const std::vector<std::pair<std::string, std::string>> kNoQuery;
  const auto& query = in.query != nullptr ? *in.query : kNoQuery;
  Route route;
  std::string_view path = in.path;
  if (path.empty() || path.front() != '/') {
    return route;  // kBadRequest
  }
  path.remove_prefix(1);

  // Virtual-host style: "<bucket>.<domain>".
  bool virtual_host = false;
  if (!virtual_host_domain.empty()) {
    const std::string_view host = StripPort(in.host);
    if (host.size() > virtual_host_domain.size() + 1 && host.ends_with(virtual_host_domain) &&
        host[host.size() - virtual_host_domain.size() - 1] == '.') {
      route.bucket = host.substr(0, host.size() - virtual_host_domain.size() - 1);
      route.key = path;
      virtual_host = true;
    }
  }
  if (!virtual_host) {
    if (in.method == "GET" && !in.has_credentials) {
      constexpr std::pair<std::string_view, S3Op> kOpsEndpoints[] = {{"healthz", S3Op::kHealthz},
                                                                     {"readyz", S3Op::kReadyz},
                                                                     {"stats", S3Op::kStats},
                                                                     {"metrics", S3Op::kMetrics}};
      for (const auto& [name, op] : kOpsEndpoints) {
        if (path == name) {
          route.op = op;
          return route;
        }
      }
    }
    const size_t slash = path.find('/');
    route.bucket = path.substr(0, slash);
    if (slash != std::string_view::npos) {
      route.key = path.substr(slash + 1);
    }
  }

  Level level = Level::kObject;
  if (route.bucket.empty()) {
    level = Level::kService;
  } else if (route.key.empty()) {
    level = Level::kBucket;
  }

  bool method_known = false;
  for (const Row& row : kRoutes) {
    if (row.level != level || row.method != in.method) {
      continue;
    }
    method_known = true;
    if (!row.subresource.empty() && !HasParam(query, row.subresource)) {
      continue;
    }
    if (row.copy_source && !in.has_copy_source) {
      continue;
    }
    // A plain row does not serve a request that names some other sub-resource.
    bool foreign = false;
    for (const auto& [name, value] : query) {
      if (name != row.subresource &&
          std::find(kSubresources.begin(), kSubresources.end(), name) != kSubresources.end()) {
        foreign = true;
        break;
      }
    }
    if (foreign) {
      route.op = S3Op::kNotImplemented;
      return route;
    }
    route.op = row.op;
    route.body = row.body;
    return route;
  }
  route.op = method_known ? S3Op::kNotImplemented : S3Op::kMethodNotAllowed;
  return route;
}

}  // namespace oc::gateway
