#include "oc/gateway/options.h"

#include <algorithm>
#include <charconv>

#include <fmt/core.h>

#include "oc/common/config_table.h"
#include "oc/common/cores.h"
#include "oc/gateway/config_table.h"

namespace oc::gateway {

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
  OC_RETURN_IF_ERROR(GatewayConfigTable().Check(*this));
  for (const std::string& grant : grants) {
    const size_t eq = grant.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == grant.size()) {
      return Status::InvalidArgument("gateway.grants", "each grant is \"user=bucket\"");
    }
  }
  OC_RETURN_IF_ERROR(LifecycleConfigTable().Check(lifecycle));
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

namespace {

// A thread-count resolver (0 = from the cores) as the table's effective-value function.
template <uint32_t (*F)(uint32_t)>
uint64_t Wide(uint64_t configured) {
  return F(static_cast<uint32_t>(configured));
}

}  // namespace

const ConfigTable<GatewayOptions>& GatewayConfigTable() {
  static const ConfigTable<GatewayOptions>* const table = [] {
    constexpr std::chrono::milliseconds kOneMs{1};
    auto* t = new ConfigTable<GatewayOptions>(
        "gateway", "[gateway]: the S3 gateway (gateway/include/oc/gateway/options.h).");
    (*t).Str("listen", &GatewayOptions::listen,
             "Address and port to listen on; port 0 picks a free one.")
        .Int("io_threads", &GatewayOptions::io_threads,
             "Threads running network I/O (one io_context each). 0: one per core this process "
             "may use (its CPU affinity, and its cgroup's CPU quota rounded up, when there is "
             "one).",
             0, kMaxIoThreads, &Wide<IoThreadsFor>)
        .Int("store_threads", &GatewayOptions::store_threads,
             "Threads running Store calls, so I/O threads never block; durable PUTs wait in "
             "fsync here. 0: 8 per usable core, at least 16.",
             0, kMaxStoreThreads, &Wide<StoreThreadsFor>)
        .Int("max_connections", &GatewayOptions::max_connections,
             "Open connections at most. At the limit a new one is admitted by closing the "
             "oldest connection still waiting for a request (sent nothing first, then part-way "
             "through a header, then kept alive between requests); if all are busy, the new "
             "one is closed.",
             1, 1u << 20)
        .Size("max_header_bytes", &GatewayOptions::max_header_bytes,
              "Largest request header block; larger gets 400 and a close.", 1 << 10, 1 << 20)
        .Size("max_object_bytes", &GatewayOptions::max_object_bytes,
              "Largest object or part body (S3's single-PUT limit).", 1, 5ull << 40)
        .Size("max_xml_body_bytes", &GatewayOptions::max_xml_body_bytes,
              "Largest XML request body (DeleteObjects, CompleteMultipartUpload, CreateBucket).",
              4 << 10, 64 << 20)
        .Size("stream_piece_bytes", &GatewayOptions::stream_piece_bytes,
              "Bytes moved per step between the socket and the store, each way.", 4 << 10, 16 << 20)
        .Size("max_drain_bytes", &GatewayOptions::max_drain_bytes,
              "After an early error, at most this much unread body is discarded to keep the "
              "connection.",
              0, 1ull << 30)
        .Duration("idle_timeout", &GatewayOptions::idle_timeout,
                  "Longest wait for the first byte of the next request on a kept-alive connection.",
                  kOneMs)
        .Duration(
            "header_timeout", &GatewayOptions::header_timeout,
            "Longest time a request line and header may take: from accept on a new connection "
            "(TLS handshake included), from the first byte on a kept-alive one (idle or "
            "slowloris clients).",
            kOneMs)
        .Duration("read_timeout", &GatewayOptions::read_timeout,
                  "Limit for each body read or response write step (a body must arrive at "
                  "stream_piece_bytes per read_timeout at least).",
                  kOneMs)
        .Str("region", &GatewayOptions::region,
             "Region of GetBucketLocation and of signatures (\"\" accepts any region).")
        .Str("virtual_host_domain", &GatewayOptions::virtual_host_domain,
             "Virtual-host-style addressing \"<bucket>.<domain>\" (also "
             "--virtual-host-domain); path style keeps working. \"\" means path style only. "
             "LMCache's S3 tier needs it (README).")
        .Str("credentials_file", &GatewayOptions::credentials_file,
             "Users and keys (created on first start by `objectcache serve`); \"\" means "
             "<storage.data_dir>/credentials.toml for objectcache, ./credentials.toml for "
             "oc-gateway.")
        .Strings("public_read_buckets", &GatewayOptions::public_read_buckets,
                 "Buckets anonymous requests may read.")
        .Strings("grants", &GatewayOptions::grants,
                 "Extra access, \"user=bucket\" (by user name); admins may touch every bucket.")
        .Str("tls_cert_file", &GatewayOptions::tls_cert_file,
             "TLS: both set serves HTTPS (PEM files).")
        .Str("tls_key_file", &GatewayOptions::tls_key_file,
             "The private key of tls_cert_file (a PEM file).")
        .Bool("access_log", &GatewayOptions::access_log,
              "One access-log line per request on stderr.")
        .Bool("inline_cached_reads", &GatewayOptions::inline_cached_reads,
              "GET and HEAD answered from memory run on the I/O thread (no hand-off to the "
              "store pool); a read that would wait for the disk is rerun on the pool.");
    return t;
  }();
  return *table;
}

const ConfigTable<LifecycleOptions>& LifecycleConfigTable() {
  static const ConfigTable<LifecycleOptions>* const table = [] {
    auto* t = new ConfigTable<LifecycleOptions>(
        "lifecycle",
        "[lifecycle]: the bucket lifecycle worker of every gateway "
        "(docs/decisions/lifecycle.md).");
    (*t).Int("day_seconds", &LifecycleOptions::day_seconds,
             "Length of a lifecycle day in seconds: an Expiration Days=N rule is due N such days "
             "after the object's mtime, rounded up to a whole day since the epoch (86400: S3's "
             "next midnight UTC). Tests shorten it (RGW's rgw_lc_debug_interval); a Date is not "
             "scaled.",
             1, 1ull << 32)
        .Duration("interval", &LifecycleOptions::interval,
                  "How often the worker passes over the buckets with a configuration; \"0s\" "
                  "picks day_seconds / 8, between 100ms and 1h.")
        .Int("max_objects_per_pass", &LifecycleOptions::max_objects_per_pass,
             "Objects and uploads one pass looks at, at most; a pass that stops part-way "
             "continues on the next.",
             1, 1ull << 40);
    return t;
  }();
  return *table;
}

Status ApplyConfig(const Config& config, GatewayOptions* o) {
  OC_RETURN_IF_ERROR(GatewayConfigTable().Apply(config, o));
  return LifecycleConfigTable().Apply(config, &o->lifecycle);
}

std::string ToJson(const GatewayOptions& o) { return GatewayConfigTable().Json(o); }

}  // namespace oc::gateway
