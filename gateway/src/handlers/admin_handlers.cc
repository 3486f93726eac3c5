// Operations endpoints (/readyz, /stats, /metrics; /healthz is answered by the session
// without touching the Store) and Dispatch, the op -> handler switch.
#include <fmt/core.h>

#include "handlers/handlers.h"

namespace oc::gateway {
namespace {

Response Text(std::string body, std::string content_type, unsigned status = 200) {
  Response res;
  res.status = status;
  res.content_type = std::move(content_type);
  res.body = std::move(body);
  return res;
}

std::string JsonEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// Prometheus metric names allow [a-zA-Z0-9_:].
std::string MetricName(std::string_view s) {
  std::string out;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    out.push_back(ok ? c : '_');
  }
  return out;
}

}  // namespace

Response HandleReadyz(HandlerEnv& env, Request& /*req*/) {
  Result<storage::StoreStats> stats = env.store->Stats();
  if (!stats.has_value()) {
    return Text("not ready\n", "text/plain", 503);
  }
  return Text("ready\n", "text/plain");
}

Response HandleStats(HandlerEnv& env, Request& /*req*/) {
  std::string json = "{";
  json += env.metrics->StatsJson();
  json += ",\"store\":";
  Result<storage::StoreStats> stats = env.store->Stats();
  if (stats.has_value()) {
    json += "{\"ok\":true";
    for (const auto& [name, value] : stats->figures) {
      json += fmt::format(",\"{}\":{}", JsonEscape(name), value);
    }
    json += "}";
  } else {
    json += "{\"ok\":false}";
  }
  json += ",\"config\":";
  json += env.effective_config_json;
  json += "}\n";
  return Text(std::move(json), "application/json");
}

Response HandleMetrics(HandlerEnv& env, Request& /*req*/) {
  std::string text = env.metrics->Prometheus();
  Result<storage::StoreStats> stats = env.store->Stats();
  text += fmt::format(
      "# HELP oc_store_up 1 when the store answers.\n# TYPE oc_store_up gauge\noc_store_up {}\n",
      stats.has_value() ? 1 : 0);
  if (stats.has_value()) {
    for (const auto& [name, value] : stats->figures) {
      text += fmt::format("oc_store_{} {}\n", MetricName(name), value);
    }
  }
  return Text(std::move(text), "text/plain; version=0.0.4");
}

Response Dispatch(HandlerEnv& env, Request& req) {
  const S3Op op = req.route.op;
  switch (op) {
    case S3Op::kReadyz:
      return HandleReadyz(env, req);
    case S3Op::kStats:
      return HandleStats(env, req);
    case S3Op::kMetrics:
      return HandleMetrics(env, req);
    default:
      break;
  }
  if (std::optional<Response> denied = env.access->Check(req, op, req.route.bucket)) {
    return std::move(*denied);
  }
  switch (op) {
    case S3Op::kListBuckets:
      return HandleListBuckets(env, req);
    case S3Op::kCreateBucket:
      return HandleCreateBucket(env, req);
    case S3Op::kDeleteBucket:
      return HandleDeleteBucket(env, req);
    case S3Op::kHeadBucket:
      return HandleHeadBucket(env, req);
    case S3Op::kGetBucketLocation:
      return HandleGetBucketLocation(env, req);
    case S3Op::kGetBucketAcl:
      return HandleGetBucketAcl(env, req);
    case S3Op::kGetBucketVersioning:
      return HandleGetBucketVersioning(env, req);
    case S3Op::kListObjects:
      return HandleListObjects(env, req);
    case S3Op::kListObjectsV2:
      return HandleListObjectsV2(env, req);
    case S3Op::kListObjectVersions:
      return HandleListObjectVersions(env, req);
    case S3Op::kPutBucketAcl:
      return HandlePutBucketAcl(env, req);
    case S3Op::kListMultipartUploads:
      return HandleListMultipartUploads(env, req);
    case S3Op::kDeleteObjects:
      return HandleDeleteObjects(env, req);
    case S3Op::kCopyObject:
      return HandleCopyObject(env, req);
    case S3Op::kGetObject:
      return HandleGetObject(env, req);
    case S3Op::kGetObjectCache:
      return HandleGetObjectCache(env, req);
    case S3Op::kHeadObject:
      return HandleHeadObject(env, req);
    case S3Op::kDeleteObject:
      return HandleDeleteObject(env, req);
    case S3Op::kGetObjectAcl:
      return HandleGetObjectAcl(env, req);
    case S3Op::kPutObjectAcl:
      return HandlePutObjectAcl(env, req);
    case S3Op::kGetObjectAttributes:
      return HandleGetObjectAttributes(env, req);
    case S3Op::kGetObjectTagging:
      return HandleGetObjectTagging(env, req);
    case S3Op::kPutObjectTagging:
      return HandlePutObjectTagging(env, req);
    case S3Op::kDeleteObjectTagging:
      return HandleDeleteObjectTagging(env, req);
    case S3Op::kCreateMultipartUpload:
      return HandleCreateMultipartUpload(env, req);
    case S3Op::kCompleteMultipartUpload:
      return HandleCompleteMultipartUpload(env, req);
    case S3Op::kAbortMultipartUpload:
      return HandleAbortMultipartUpload(env, req);
    case S3Op::kListParts:
      return HandleListParts(env, req);
    case S3Op::kUploadPartCopy:
      return HandleUploadPartCopy(env, req);
    default:
      // Anything the router did not map to a handler.
      return Response::Error(S3Error::kNotImplemented);
  }
}

}  // namespace oc::gateway
