#include "oc/gateway/options.h"

#include <algorithm>
#include <charconv>

#include <fmt/core.h>

#include "oc/common/cores.h"

namespace oc::gateway {
namespace {

std::string JsonString(std::string_view s) {
  std::string out = "\"";
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
  out.push_back('"');
  return out;
}

std::string JsonList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) {
      out.push_back(',');
    }
    out += JsonString(items[i]);
  }
  out.push_back(']');
  return out;
}

Status Range(std::string_view key, uint64_t value, uint64_t min, uint64_t max) {
  if (value < min || value > max) {
    return Status::InvalidArgument(std::string(key),
                                   fmt::format("must be in {}..{}, got {}", min, max, value));
  }
  return Status::Ok();
}

}  // namespace

Status SplitHostPort(std::string_view text, std::string_view field, std::string* host,
                     uint16_t* port) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return Status::InvalidArgument(std::string(field), "expected host:port");
  }
  std::string_view h = text.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') {
    h = h.substr(1, h.size() - 2);
  }
  const std::string_view p = text.substr(colon + 1);
  unsigned value = 0;
  auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), value);
  if (p.empty() || ec != std::errc() || end != p.data() + p.size() || value > 65535) {
    return Status::InvalidArgument(std::string(field), "bad port in host:port");
  }
  *host = std::string(h);
  *port = static_cast<uint16_t>(value);
  return Status::Ok();
}

Status GatewayOptions::Validate() const {
  std::string host;
  uint16_t port = 0;
  OC_RETURN_IF_ERROR(SplitHostPort(listen, "gateway.listen", &host, &port));
  OC_RETURN_IF_ERROR(Range("gateway.io_threads", io_threads, 0, kMaxIoThreads));
  OC_RETURN_IF_ERROR(Range("gateway.store_threads", store_threads, 0, kMaxStoreThreads));
  OC_RETURN_IF_ERROR(Range("gateway.max_connections", max_connections, 1, 1u << 20));
  OC_RETURN_IF_ERROR(Range("gateway.max_header_bytes", max_header_bytes, 1 << 10, 1 << 20));
  OC_RETURN_IF_ERROR(Range("gateway.max_object_bytes", max_object_bytes, 1, 5ull << 40));
  OC_RETURN_IF_ERROR(Range("gateway.max_xml_body_bytes", max_xml_body_bytes, 4 << 10, 64 << 20));
  OC_RETURN_IF_ERROR(Range("gateway.stream_piece_bytes", stream_piece_bytes, 4 << 10, 16 << 20));
  OC_RETURN_IF_ERROR(Range("gateway.max_drain_bytes", max_drain_bytes, 0, 1ull << 30));
  if (idle_timeout.count() <= 0) {
    return Status::InvalidArgument("gateway.idle_timeout", "must be positive");
  }
  if (header_timeout.count() <= 0) {
    return Status::InvalidArgument("gateway.header_timeout", "must be positive");
  }
  if (read_timeout.count() <= 0) {
    return Status::InvalidArgument("gateway.read_timeout", "must be positive");
  }
  for (const std::string& grant : grants) {
    const size_t eq = grant.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == grant.size()) {
      return Status::InvalidArgument("gateway.grants", "each grant is \"user=bucket\"");
    }
  }
  OC_RETURN_IF_ERROR(Range("lifecycle.day_seconds", lifecycle.day_seconds, 1, 1ull << 32));
  if (lifecycle.interval.count() < 0) {
    return Status::InvalidArgument("lifecycle.interval", "must not be negative");
  }
  OC_RETURN_IF_ERROR(
      Range("lifecycle.max_objects_per_pass", lifecycle.max_objects_per_pass, 1, 1ull << 40));
  if (tls_cert_file.empty() != tls_key_file.empty()) {
    return Status::InvalidArgument("gateway.tls_cert_file",
                                   "tls_cert_file and tls_key_file go together");
  }
  return Status::Ok();
}

uint32_t IoThreadsFor(uint32_t configured) {
  return configured != 0 ? configured : ThreadsPerCore(1, 1, kMaxIoThreads);
}

uint32_t StoreThreadsFor(uint32_t configured) {
  return configured != 0 ? configured
                         : ThreadsPerCore(kStoreThreadsPerCore, kMinStoreThreads, kMaxStoreThreads);
}

std::chrono::milliseconds LifecycleIntervalFor(const LifecycleOptions& options) {
  if (options.interval.count() > 0) {
    return options.interval;
  }
  const auto eighth = std::chrono::milliseconds(options.day_seconds * 1000 / 8);
  return std::clamp<std::chrono::milliseconds>(eighth, std::chrono::milliseconds(100),
                                               std::chrono::hours(1));
}

Status ApplyConfig(const Config& config, GatewayOptions* o) {
  OC_RETURN_IF_ERROR(config.Read("gateway.listen", &o->listen));
  OC_RETURN_IF_ERROR(config.Read("gateway.io_threads", &o->io_threads));
  OC_RETURN_IF_ERROR(config.Read("gateway.store_threads", &o->store_threads));
  OC_RETURN_IF_ERROR(config.Read("gateway.max_connections", &o->max_connections));
  OC_RETURN_IF_ERROR(config.ReadSize("gateway.max_header_bytes", &o->max_header_bytes));
  OC_RETURN_IF_ERROR(config.ReadSize("gateway.max_object_bytes", &o->max_object_bytes));
  OC_RETURN_IF_ERROR(config.ReadSize("gateway.max_xml_body_bytes", &o->max_xml_body_bytes));
  OC_RETURN_IF_ERROR(config.ReadSize("gateway.stream_piece_bytes", &o->stream_piece_bytes));
  OC_RETURN_IF_ERROR(config.ReadSize("gateway.max_drain_bytes", &o->max_drain_bytes));
  OC_RETURN_IF_ERROR(config.ReadDuration("gateway.idle_timeout", &o->idle_timeout));
  OC_RETURN_IF_ERROR(config.ReadDuration("gateway.header_timeout", &o->header_timeout));
  OC_RETURN_IF_ERROR(config.ReadDuration("gateway.read_timeout", &o->read_timeout));
  OC_RETURN_IF_ERROR(config.Read("gateway.region", &o->region));
  OC_RETURN_IF_ERROR(config.Read("gateway.virtual_host_domain", &o->virtual_host_domain));
  OC_RETURN_IF_ERROR(config.Read("gateway.credentials_file", &o->credentials_file));
  OC_RETURN_IF_ERROR(config.Read("gateway.public_read_buckets", &o->public_read_buckets));
  OC_RETURN_IF_ERROR(config.Read("gateway.grants", &o->grants));
  OC_RETURN_IF_ERROR(config.Read("gateway.tls_cert_file", &o->tls_cert_file));
  OC_RETURN_IF_ERROR(config.Read("gateway.tls_key_file", &o->tls_key_file));
  OC_RETURN_IF_ERROR(config.Read("gateway.access_log", &o->access_log));
  OC_RETURN_IF_ERROR(config.Read("gateway.inline_cached_reads", &o->inline_cached_reads));
  OC_RETURN_IF_ERROR(config.Read("lifecycle.day_seconds", &o->lifecycle.day_seconds));
  OC_RETURN_IF_ERROR(config.ReadDuration("lifecycle.interval", &o->lifecycle.interval));
  OC_RETURN_IF_ERROR(
      config.Read("lifecycle.max_objects_per_pass", &o->lifecycle.max_objects_per_pass));
  return Status::Ok();
}

std::string ToJson(const GatewayOptions& o) {
  return fmt::format(
      "{{\"listen\":{},\"io_threads\":{},\"store_threads\":{},\"max_connections\":{},"
      "\"max_header_bytes\":{},\"max_object_bytes\":{},\"max_xml_body_bytes\":{},"
      "\"stream_piece_bytes\":{},\"max_drain_bytes\":{},\"idle_timeout_ms\":{},"
      "\"header_timeout_ms\":{},\"read_timeout_ms\":{},\"region\":{},\"virtual_host_domain\":{},"
      "\"credentials_file\":{},\"public_read_buckets\":{},\"grants\":{},\"tls\":{},"
      "\"access_log\":{},\"inline_cached_reads\":{}}}",
      JsonString(o.listen), IoThreadsFor(o.io_threads), StoreThreadsFor(o.store_threads),
      o.max_connections, o.max_header_bytes, o.max_object_bytes, o.max_xml_body_bytes,
      o.stream_piece_bytes, o.max_drain_bytes, o.idle_timeout.count(), o.header_timeout.count(),
      o.read_timeout.count(), JsonString(o.region), JsonString(o.virtual_host_domain),
      JsonString(o.credentials_file), JsonList(o.public_read_buckets), JsonList(o.grants),
      o.tls_cert_file.empty() ? "false" : "true", o.access_log ? "true" : "false",
      o.inline_cached_reads ? "true" : "false");
}

}  // namespace oc::gateway
