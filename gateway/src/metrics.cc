#include "metrics.h"

#include <algorithm>

#include <fmt/core.h>

namespace oc::gateway {

void Metrics::Record(S3Op op, unsigned status, uint64_t bytes_in, uint64_t bytes_out,
                     uint64_t latency_us, std::optional<S3Error> error) {
  OpStats& s = ops_[static_cast<size_t>(op)];
  s.requests.fetch_add(1, std::memory_order_relaxed);
  if (status >= 400) {
    s.errors.fetch_add(1, std::memory_order_relaxed);
  }
  s.bytes_in.fetch_add(bytes_in, std::memory_order_relaxed);
  s.bytes_out.fetch_add(bytes_out, std::memory_order_relaxed);
  s.latency_sum_us.fetch_add(latency_us, std::memory_order_relaxed);
  const auto it = std::lower_bound(kLatencyBucketsUs.begin(), kLatencyBucketsUs.end(), latency_us);
  s.buckets[static_cast<size_t>(it - kLatencyBucketsUs.begin())].fetch_add(
      1, std::memory_order_relaxed);
  if (error) {
    errors_[static_cast<size_t>(*error)].fetch_add(1, std::memory_order_relaxed);
  }
}

uint64_t Metrics::Percentile(const OpStats& s, double q) {
  uint64_t total = 0;
  for (const auto& b : s.buckets) {
    total += b.load(std::memory_order_relaxed);
  }
  if (total == 0) {
    return 0;
  }
  const auto rank = static_cast<uint64_t>(q * static_cast<double>(total - 1)) + 1;
  uint64_t seen = 0;
  for (size_t i = 0; i < s.buckets.size(); ++i) {
    seen += s.buckets[i].load(std::memory_order_relaxed);
    if (seen >= rank) {
      return i < kLatencyBucketsUs.size() ? kLatencyBucketsUs[i] : kLatencyBucketsUs.back();
    }
  }
  return kLatencyBucketsUs.back();
}

std::string Metrics::StatsJson() const {
  std::string out = "\"operations\":{";
  bool first = true;
  for (size_t i = 0; i < kS3OpCount; ++i) {
    const OpStats& s = ops_[i];
    const uint64_t n = s.requests.load(std::memory_order_relaxed);
    if (n == 0) {
      continue;
    }
    out += fmt::format(
        "{}\"{}\":{{\"requests\":{},\"errors\":{},\"bytes_in\":{},\"bytes_out\":{},"
        "\"latency_us\":{{\"mean\":{},\"p50\":{},\"p90\":{},\"p99\":{}}}}}",
        first ? "" : ",", kOpRows[i].name, n, s.errors.load(std::memory_order_relaxed),
        s.bytes_in.load(std::memory_order_relaxed), s.bytes_out.load(std::memory_order_relaxed),
        s.latency_sum_us.load(std::memory_order_relaxed) / n, Percentile(s, 0.5),
        Percentile(s, 0.9), Percentile(s, 0.99));
    first = false;
  }
  out += "},\"errors\":{";
  first = true;
  for (size_t i = 0; i < errors_.size(); ++i) {
    const uint64_t n = errors_[i].load(std::memory_order_relaxed);
    if (n == 0) {
      continue;
    }
    out += fmt::format("{}\"{}\":{}", first ? "" : ",", kS3ErrorRows[i].code, n);
    first = false;
  }
  out += fmt::format("}},\"connections\":{{\"open\":{},\"refused\":{},\"shed\":{}}}",
                     open_connections(), refused_connections_.load(std::memory_order_relaxed),
                     shed_connections_.load(std::memory_order_relaxed));
  out += fmt::format(",\"inline_reads\":{{\"served\":{},\"missed\":{}}}",
                     inline_reads_.load(std::memory_order_relaxed),
                     inline_misses_.load(std::memory_order_relaxed));
  out += fmt::format(",\"upload_body_bytes\":{{\"lent\":{},\"piece\":{}}}",
                     body_lent_bytes_.load(std::memory_order_relaxed),
                     body_piece_bytes_.load(std::memory_order_relaxed));
  return out;
}

std::string Metrics::Prometheus() const {
  std::string out;
  out +=
      "# HELP oc_gateway_requests_total S3 requests by operation.\n"
      "# TYPE oc_gateway_requests_total counter\n";
  for (size_t i = 0; i < kS3OpCount; ++i) {
    out += fmt::format("oc_gateway_requests_total{{op=\"{}\"}} {}\n", kOpRows[i].name,
                       ops_[i].requests.load(std::memory_order_relaxed));
  }
  out +=
      "# HELP oc_gateway_request_errors_total Responses with status >= 400 by operation.\n"
      "# TYPE oc_gateway_request_errors_total counter\n";
  for (size_t i = 0; i < kS3OpCount; ++i) {
    out += fmt::format("oc_gateway_request_errors_total{{op=\"{}\"}} {}\n", kOpRows[i].name,
                       ops_[i].errors.load(std::memory_order_relaxed));
  }
  out +=
      "# HELP oc_gateway_bytes_in_total Request body bytes by operation.\n"
      "# TYPE oc_gateway_bytes_in_total counter\n";
  for (size_t i = 0; i < kS3OpCount; ++i) {
    out += fmt::format("oc_gateway_bytes_in_total{{op=\"{}\"}} {}\n", kOpRows[i].name,
                       ops_[i].bytes_in.load(std::memory_order_relaxed));
  }
  out +=
      "# HELP oc_gateway_bytes_out_total Response body bytes by operation.\n"
      "# TYPE oc_gateway_bytes_out_total counter\n";
  for (size_t i = 0; i < kS3OpCount; ++i) {
    out += fmt::format("oc_gateway_bytes_out_total{{op=\"{}\"}} {}\n", kOpRows[i].name,
                       ops_[i].bytes_out.load(std::memory_order_relaxed));
  }
  out +=
      "# HELP oc_gateway_request_duration_seconds Request latency by operation.\n"
      "# TYPE oc_gateway_request_duration_seconds histogram\n";
  for (size_t i = 0; i < kS3OpCount; ++i) {
    const OpStats& s = ops_[i];
    uint64_t cumulative = 0;
    for (size_t b = 0; b < s.buckets.size(); ++b) {
      cumulative += s.buckets[b].load(std::memory_order_relaxed);
      if (b < kLatencyBucketsUs.size()) {
        out += fmt::format("oc_gateway_request_duration_seconds_bucket{{op=\"{}\",le=\"{}\"}} {}\n",
                           kOpRows[i].name, static_cast<double>(kLatencyBucketsUs[b]) / 1e6,
                           cumulative);
      } else {
        out +=
            fmt::format("oc_gateway_request_duration_seconds_bucket{{op=\"{}\",le=\"+Inf\"}} {}\n",
                        kOpRows[i].name, cumulative);
      }
    }
    out += fmt::format("oc_gateway_request_duration_seconds_sum{{op=\"{}\"}} {}\n", kOpRows[i].name,
                       static_cast<double>(s.latency_sum_us.load(std::memory_order_relaxed)) / 1e6);
    out += fmt::format("oc_gateway_request_duration_seconds_count{{op=\"{}\"}} {}\n",
                       kOpRows[i].name, cumulative);
  }
  out +=
      "# HELP oc_gateway_errors_total Error responses by S3 code.\n"
      "# TYPE oc_gateway_errors_total counter\n";
  for (size_t i = 0; i < errors_.size(); ++i) {
    out += fmt::format("oc_gateway_errors_total{{code=\"{}\"}} {}\n", kS3ErrorRows[i].code,
                       errors_[i].load(std::memory_order_relaxed));
  }
  out += fmt::format(
      "# HELP oc_gateway_open_connections Open client connections.\n"
      "# TYPE oc_gateway_open_connections gauge\n"
      "oc_gateway_open_connections {}\n"
      "# HELP oc_gateway_refused_connections_total Connections closed at the limit.\n"
      "# TYPE oc_gateway_refused_connections_total counter\n"
      "oc_gateway_refused_connections_total {}\n"
      "# HELP oc_gateway_shed_connections_total Connections waiting for a request, closed at "
      "the limit to admit a new one.\n"
      "# TYPE oc_gateway_shed_connections_total counter\n"
      "oc_gateway_shed_connections_total {}\n"
      "# HELP oc_gateway_inline_reads_total GETs and HEADs answered from memory on the I/O "
      "thread.\n"
      "# TYPE oc_gateway_inline_reads_total counter\n"
      "oc_gateway_inline_reads_total {}\n"
      "# HELP oc_gateway_inline_misses_total GETs and HEADs tried on the I/O thread that "
      "needed the disk and ran on the store pool.\n"
      "# TYPE oc_gateway_inline_misses_total counter\n"
      "oc_gateway_inline_misses_total {}\n"
      "# HELP oc_gateway_upload_body_lent_bytes_total Upload body bytes the parser wrote into "
      "memory the store writer lent.\n"
      "# TYPE oc_gateway_upload_body_lent_bytes_total counter\n"
      "oc_gateway_upload_body_lent_bytes_total {}\n"
      "# HELP oc_gateway_upload_body_piece_bytes_total Upload body bytes the parser wrote into "
      "the session's piece, copied from there into the store writer.\n"
      "# TYPE oc_gateway_upload_body_piece_bytes_total counter\n"
      "oc_gateway_upload_body_piece_bytes_total {}\n",
      open_connections(), refused_connections_.load(std::memory_order_relaxed),
      shed_connections_.load(std::memory_order_relaxed),
      inline_reads_.load(std::memory_order_relaxed), inline_misses_.load(std::memory_order_relaxed),
      body_lent_bytes_.load(std::memory_order_relaxed),
      body_piece_bytes_.load(std::memory_order_relaxed));
  return out;
}

}  // namespace oc::gateway
