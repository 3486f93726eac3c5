// Operations endpoints (/healthz, which never touches the Store and runs on the I/O thread;
// /readyz, /stats, /metrics) and the router's refusals (NotImplemented, MethodNotAllowed,
// BadRequest), answered on the I/O thread too (s3_ops.def).
#include <fmt/core.h>

#include "handlers/handlers.h"
#include "lifecycle/lifecycle_worker.h"

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

Response HandleHealthz(HandlerEnv& /*env*/, Request& /*req*/) { return Text("ok\n", "text/plain"); }

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
  if (env.lifecycle_worker != nullptr) {
    const LifecycleWorker& w = *env.lifecycle_worker;
    json += fmt::format(
        ",\"lifecycle\":{{\"day_seconds\":{},\"passes\":{},\"expired_objects\":{},"
        "\"aborted_uploads\":{},\"failures\":{}}}",
        w.day_ms() / 1000, w.passes(), w.expired_objects(), w.aborted_uploads(), w.failures());
  }
  json += ",\"config\":";
  json += env.effective_config_json;
  json += "}\n";
  return Text(std::move(json), "application/json");
}

Response HandleMetrics(HandlerEnv& env, Request& /*req*/) {
  std::string text = env.metrics->Prometheus();
  if (env.lifecycle_worker != nullptr) {
    const LifecycleWorker& w = *env.lifecycle_worker;
    text += fmt::format(
        "# HELP oc_lifecycle_expired_objects_total Objects the lifecycle worker deleted.\n"
        "# TYPE oc_lifecycle_expired_objects_total counter\n"
        "oc_lifecycle_expired_objects_total {}\n"
        "# HELP oc_lifecycle_aborted_uploads_total Multipart uploads the lifecycle worker "
        "aborted.\n"
        "# TYPE oc_lifecycle_aborted_uploads_total counter\n"
        "oc_lifecycle_aborted_uploads_total {}\n"
        "# HELP oc_lifecycle_passes_total Lifecycle worker passes.\n"
        "# TYPE oc_lifecycle_passes_total counter\n"
        "oc_lifecycle_passes_total {}\n",
        w.expired_objects(), w.aborted_uploads(), w.passes());
  }
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

Response HandleNotImplemented(HandlerEnv& /*env*/, Request& /*req*/) {
  return Response::Error(S3Error::kNotImplemented);
}

Response HandleMethodNotAllowed(HandlerEnv& /*env*/, Request& /*req*/) {
  return Response::Error(S3Error::kMethodNotAllowed);
}

Response HandleBadRequest(HandlerEnv& /*env*/, Request& /*req*/) {
  return Response::Error(S3Error::kInvalidRequest);
}

}  // namespace oc::gateway
