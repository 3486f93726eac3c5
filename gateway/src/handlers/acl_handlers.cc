// ACL writes (PutBucketAcl, PutObjectAcl) and the x-amz-acl / x-amz-grant-* headers of the
// requests that create things. We have one ACL: the bucket's owner holds FULL_CONTROL and
// nobody else anything (GetBucketAcl, GetObjectAcl); who else may act is configuration
// (gateway.grants, gateway.public_read_buckets). So a canned ACL that says exactly that is
// accepted as the no-op it is, and any other is refused: a client asking for public-read must
// not be told it got it (docs/decisions/s3-acls.md).
#include "handlers/handlers.h"
#include "oc/common/text.h"

namespace oc::gateway {
namespace {

constexpr std::string_view kGrantPrefix = "x-amz-grant-";

// The canned ACLs (S3 user guide, "Access control list (ACL) overview", Canned ACL) that
// describe our one ACL: "private" (the owner FULL_CONTROL, nobody else), and for objects
// "bucket-owner-full-control" (the bucket's owner FULL_CONTROL: here the object's owner too).
bool IsOwnerOnly(std::string_view acl, bool object) {
  return acl == "private" || (object && acl == "bucket-owner-full-control");
}

// The first x-amz-grant-* header, or nullptr.
const HeaderField* GrantHeader(const Request& req) {
  for (const HeaderField& h : req.headers) {
    if (h.name.size() > kGrantPrefix.size() &&
        EqualsIgnoreCase(h.name.substr(0, kGrantPrefix.size()), kGrantPrefix)) {
      return &h;
    }
  }
  return nullptr;
}

Response PutAcl(HandlerEnv& env, Request& req, bool object) {
  // Only `x-amz-acl: private` (and bucket-owner-full-control on objects) is served: grants,
  // other canned ACLs and AccessControlPolicy bodies would need ACLs we do not keep.
  if (const HeaderField* grant = GrantHeader(req)) {
    return Response::Error(S3Error::kNotImplemented, std::string(grant->name),
                           std::string(grant->value), "Only the canned ACL private is supported.");
  }
  if (!req.body.empty()) {
    return Response::Error(S3Error::kNotImplemented, "AccessControlPolicy", "",
                           "Only the canned ACL private is supported.");
  }
  const std::optional<std::string_view> acl = req.Header("x-amz-acl");
  if (!acl || !IsOwnerOnly(Trim(*acl), object)) {
    return Response::Error(S3Error::kNotImplemented, "x-amz-acl", std::string(acl.value_or("")),
                           "Only the canned ACL private is supported.");
  }
  if (object) {
    Result<storage::ObjectMeta> meta = env.store->Head({req.route.bucket, req.route.key});
    if (!meta.has_value()) {
      return Response::FromStatus(meta.error(), &req);
    }
  } else {
    Result<storage::BucketInfo> info = env.store->HeadBucket(req.route.bucket);
    if (!info.has_value()) {
      return Response::FromStatus(info.error(), &req);
    }
  }
  return Response();
}

}  // namespace

Response HandlePutBucketAcl(HandlerEnv& env, Request& req) {
  return PutAcl(env, req, /*object=*/false);
}

Response HandlePutObjectAcl(HandlerEnv& env, Request& req) {
  return PutAcl(env, req, /*object=*/true);
}

std::optional<Response> CheckAclHeaders(const Request& req, bool bucket) {
  // S3 with ACLs disabled (Object Ownership "bucket owner enforced", the default for new
  // buckets) answers an ACL other than the owner's full control with 400
  // AccessControlListNotSupported on object writes and InvalidBucketAclWithObjectOwnership on
  // CreateBucket (S3 user guide, "Troubleshooting" of Object Ownership).
  const S3Error error = bucket ? S3Error::kInvalidBucketAclWithObjectOwnership
                               : S3Error::kAccessControlListNotSupported;
  if (const HeaderField* grant = GrantHeader(req)) {
    return Response::Error(error, std::string(grant->name), std::string(grant->value));
  }
  const std::optional<std::string_view> acl = req.Header("x-amz-acl");
  if (acl && !IsOwnerOnly(Trim(*acl), !bucket)) {
    return Response::Error(error, "x-amz-acl", std::string(*acl));
  }
  return std::nullopt;
}

}  // namespace oc::gateway
