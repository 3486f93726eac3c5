// Bucket lifecycle: PutBucketLifecycleConfiguration, GetBucketLifecycleConfiguration,
// DeleteBucketLifecycle (S3's names), and the x-amz-expiration header of GetObject, HeadObject
// and PutObject answers. The XML, S3's validation and the due times are s3/s3_lifecycle.h; the
// store keeps the canonical form (Store::SetBucketLifecycle); the worker that deletes what is
// due is lifecycle/lifecycle_worker.h (docs/decisions/lifecycle.md).
#include <random>

#include "handlers/handlers.h"
#include "lifecycle/lifecycle_configs.h"
#include "oc/common/bytes.h"
#include "oc/common/log.h"
#include "s3/s3_headers.h"
#include "s3/s3_lifecycle.h"

namespace oc::gateway {
namespace {

const Logger kLog{"lifecycle"};

// The ID S3 gives a rule put without one: random, 32 characters of [a-z0-9].
std::string RandomRuleId() {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng(std::random_device{}());
  std::string id(32, ' ');
  for (char& c : id) {
    c = kAlphabet[rng() % (sizeof(kAlphabet) - 1)];
  }
  return id;
}

// S3 requires an integrity header on this call (requestChecksumRequired in its service
// model): Content-MD5 or an x-amz-checksum-* header (or trailer, which the aws-chunked decoder
// already verified). Each is checked against the body. nullopt when the request passes.
std::optional<Response> CheckRequiredDigest(const Request& req) {
  bool present = false;
  if (std::optional<std::string_view> md5 = req.Header("content-md5")) {
    std::optional<std::string> raw = Base64Decode(*md5);
    if (!raw || raw->size() != 16) {
      return Response::Error(S3Error::kInvalidDigest, "Content-MD5", std::string(*md5));
    }
    if (*raw != Md5Of(req.body)) {
      return Response::Error(S3Error::kBadDigest, "Content-MD5", std::string(*md5));
    }
    present = true;
  }
  UploadStart declared;
  if (std::optional<Response> bad = ParseUploadChecksum(req, &declared)) {
    return bad;
  }
  if (declared.checksum) {
    present = true;
    if (!declared.checksum_expected.empty()) {
      declared.checksum->Update(AsBytes(req.body));
      if (declared.checksum->FinishBase64() != declared.checksum_expected) {
        const std::string header(auth::ChecksumHeaderName(declared.checksum->algorithm()));
        return Response::Error(S3Error::kBadDigest, header, declared.checksum_expected,
                               "The " + header +
                                   " you specified did not match the calculated "
                                   "checksum.");
      }
    }
  }
  if (!present) {
    return Response::Error(S3Error::kInvalidRequest, "Content-MD5", "",
                           "Missing required header for this request: Content-MD5 (or an "
                           "x-amz-checksum-* header).");
  }
  return std::nullopt;
}

Response LifecycleRefusal(const Status& status) {
  const std::string message(status.message());
  switch (ClassifyLifecycleError(status)) {
    case LifecycleErrorKind::kMalformedXML:
      return Response::Error(S3Error::kMalformedXML, "", "", message);
    case LifecycleErrorKind::kInvalidRequest:
      return Response::Error(S3Error::kInvalidRequest, "", "", message);
    case LifecycleErrorKind::kInvalidArgument:
      break;
  }
  return Response::Error(S3Error::kInvalidArgument, std::string(status.field()), "", message);
}

}  // namespace

Response HandlePutBucketLifecycleConfiguration(HandlerEnv& env, Request& req) {
  if (std::optional<Response> bad = CheckRequiredDigest(req)) {
    return std::move(*bad);
  }
  Result<LifecycleConfiguration> parsed = ParseLifecycleXml(req.body);
  if (!parsed.has_value()) {
    return LifecycleRefusal(parsed.error());
  }
  FillMissingRuleIds(&*parsed, RandomRuleId);
  const Status s = env.lifecycle->Set(
      req.route.bucket, std::make_shared<const LifecycleConfiguration>(std::move(*parsed)));
  if (!s.ok()) {
    return Response::FromStatus(s, &req);
  }
  return Response();
}

Response HandleGetBucketLifecycleConfiguration(HandlerEnv& env, Request& req) {
  // From the store, not the header's cache: an answer reflects every gateway's last Put.
  Result<std::string> stored = env.store->GetBucketLifecycle(req.route.bucket);
  if (!stored.has_value()) {
    return Response::FromStatus(stored.error(), &req);
  }
  if (stored->empty()) {
    return Response::Error(S3Error::kNoSuchLifecycleConfiguration, "BucketName", req.route.bucket);
  }
  return Response::Xml(std::move(*stored));
}

Response HandleDeleteBucketLifecycle(HandlerEnv& env, Request& req) {
  const Status s = env.lifecycle->Set(req.route.bucket, nullptr);
  if (!s.ok()) {
    return Response::FromStatus(s, &req);
  }
  Response res;
  res.status = 204;
  return res;
}

void AddExpirationHeader(HandlerEnv& env, const Request& req, const storage::ObjectMeta& meta,
                         Response* res) {
  if (env.lifecycle == nullptr) {
    return;
  }
  Result<LifecycleConfigPtr> config = env.lifecycle->Get(req.route.bucket);
  if (!config.has_value()) {
    // In a CachedReadsOnly scope the miss reruns the handler on the pool; otherwise the
    // object is served without the header (it is advisory) and the reason logged.
    if (config.error().code() != Code::kUnavailable) {
      kLog.Warn("req={} bucket {}: lifecycle configuration unreadable: {}", req.request_id,
                req.route.bucket, config.error().ToString());
    }
    return;
  }
  if (*config == nullptr) {
    return;
  }
  const std::optional<LifecycleExpiry> expiry =
      ObjectExpiry(**config, req.route.key, meta.size, meta.tags, meta.mtime_unix_ms,
                   static_cast<int64_t>(env.options->lifecycle.day_seconds) * 1000);
  if (expiry) {
    res->AddHeader("x-amz-expiration", ExpirationHeader(*expiry));
  }
}

}  // namespace oc::gateway
