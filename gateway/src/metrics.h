#pragma once
// Metrics: per-operation request, byte and error counters and latency histograms, error
// counts by S3 code, open connections. Lock-free (relaxed atomics): recorded on every request
// from every I/O thread, read by /stats and /metrics.
// Thread safety: every method may be called concurrently.

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "router.h"
#include "s3/s3_errors.h"

namespace oc::gateway {

// Latency bucket upper bounds in microseconds (Prometheus "le"); the last bucket is +Inf.
inline constexpr std::array<uint64_t, 20> kLatencyBucketsUs = {
    50,    100,   200,   300,    500,    750,    1000,    2000,    3000,    5000,
    10000, 20000, 50000, 100000, 200000, 500000, 1000000, 2000000, 5000000, 10000000};

class Metrics {
 public:
  void Record(S3Op op, unsigned status, uint64_t bytes_in, uint64_t bytes_out, uint64_t latency_us,
              std::optional<S3Error> error);
  void ConnectionOpened() { open_connections_.fetch_add(1, std::memory_order_relaxed); }
  void ConnectionClosed() { open_connections_.fetch_sub(1, std::memory_order_relaxed); }
  int64_t open_connections() const { return open_connections_.load(std::memory_order_relaxed); }
  void ConnectionRefused() { refused_connections_.fetch_add(1, std::memory_order_relaxed); }
  void ConnectionShed() { shed_connections_.fetch_add(1, std::memory_order_relaxed); }
  // A GET or HEAD tried on the I/O thread (GatewayOptions::inline_cached_reads): answered
  // there, or `missed` memory and rerun on the Store pool.
  void InlineRead(bool missed) {
    (missed ? inline_misses_ : inline_reads_).fetch_add(1, std::memory_order_relaxed);
  }

  // Bytes of a PutObject, UploadPart or descriptor PUT body that the HTTP parser wrote
  // straight into memory its store writer lent (ObjectWriter::AppendSpace), or into the
  // session's own piece, from which the writer copies them (the first piece, read before the
  // writer opens, and aws-chunked bodies; docs/decisions/put-copies-lent-buffers.md).
  void BodyBytes(uint64_t lent, uint64_t piece) {
    body_lent_bytes_.fetch_add(lent, std::memory_order_relaxed);
    body_piece_bytes_.fetch_add(piece, std::memory_order_relaxed);
  }

  // JSON object members (without braces) for /stats: "operations": {...}, "errors": {...},
  // "connections": {...}, "inline_reads": {...}, "upload_body_bytes": {"lent", "piece"}.
  std::string StatsJson() const;
  // Prometheus text exposition of every counter and histogram.
  std::string Prometheus() const;

 private:
  struct OpStats {
    std::atomic<uint64_t> requests{0};
    std::atomic<uint64_t> errors{0};  // responses with status >= 400
    std::atomic<uint64_t> bytes_in{0};
    std::atomic<uint64_t> bytes_out{0};
    std::atomic<uint64_t> latency_sum_us{0};
    std::array<std::atomic<uint64_t>, kLatencyBucketsUs.size() + 1> buckets{};
  };
  // Percentile estimate (upper bound of the bucket holding it), microseconds.
  static uint64_t Percentile(const OpStats& s, double q);

  std::array<OpStats, kS3OpCount> ops_{};
  std::array<std::atomic<uint64_t>, std::size(kS3ErrorRows)> errors_{};
  std::atomic<int64_t> open_connections_{0};
  std::atomic<uint64_t> refused_connections_{0};
  std::atomic<uint64_t> shed_connections_{0};
  std::atomic<uint64_t> inline_reads_{0};
  std::atomic<uint64_t> inline_misses_{0};
  std::atomic<uint64_t> body_lent_bytes_{0};
  std::atomic<uint64_t> body_piece_bytes_{0};
};

}  // namespace oc::gateway
