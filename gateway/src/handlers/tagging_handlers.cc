// Object tagging: GetObjectTagging, PutObjectTagging, DeleteObjectTagging (S3's names). The tag
// set is stored in the object's record (Store::PutObjectTags): bytes, ETag and Last-Modified
// stay, as in S3. Limits and formats: s3/s3_tagging.h.
#include "handlers/handlers.h"
#include "s3/s3_tagging.h"

namespace oc::gateway {
namespace {

storage::ObjectKey KeyOf(const Request& req) { return {req.route.bucket, req.route.key}; }

}  // namespace

Response HandleGetObjectTagging(HandlerEnv& env, Request& req) {
  Result<storage::ObjectMeta> meta = env.store->Head(KeyOf(req));
  if (!meta.has_value()) {
    return Response::FromStatus(meta.error(), &req);
  }
  return Response::Xml(TaggingXml(meta->tags));
}

Response HandlePutObjectTagging(HandlerEnv& env, Request& req) {
  Result<TagSet> tags = ParseTaggingXml(req.body);
  if (!tags.has_value()) {
    if (tags.error().field() == kTaggingXmlField) {
      return Response::Error(S3Error::kMalformedXML, "", "", std::string(tags.error().message()));
    }
    return Response::Error(S3Error::kInvalidTag, std::string(tags.error().field()), "",
                           std::string(tags.error().message()));
  }
  Result<storage::ObjectMeta> meta = env.store->PutObjectTags(KeyOf(req), *tags);
  if (!meta.has_value()) {
    return Response::FromStatus(meta.error(), &req);
  }
  return Response();
}

Response HandleDeleteObjectTagging(HandlerEnv& env, Request& req) {
  Result<storage::ObjectMeta> meta = env.store->PutObjectTags(KeyOf(req), {});
  if (!meta.has_value()) {
    return Response::FromStatus(meta.error(), &req);
  }
  Response res;
  res.status = 204;
  return res;
}

}  // namespace oc::gateway
