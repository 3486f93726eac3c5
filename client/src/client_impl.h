#pragma once
// Client::Impl: what every call of the client shares: the endpoint, the keep-alive connection
// pool, SigV4 signing (through oc_sigv4, the code the gateway verifies with), request
// execution with the stale-connection retry, the descriptor request shape (GET headers or
// POST body), and the per-bucket route to the data plane. Private to liboc_client
// (client_impl.cc; the calls in client.cc and descriptor_calls.cc).
// Thread safety: every method may be called concurrently; the pool, the data plane and the
// routes are guarded by their mutexes.

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http_transport.h"
#include "oc/client/client.h"
#include "oc/common/bytes.h"
#include "oc/common/executor.h"
#include "oc/common/result.h"
#include "oc/common/status.h"
#include "oc/descriptor/descriptor.h"

namespace oc::client {

// A ListObjectsV2 answer (<ListBucketResult>) as a page (s3_answer.cc). kCorruption if it is
// not one or a size does not parse.
Result<ListPage> ParseListObjectsV2(std::string_view xml);

// A probe answer (x-oc-matched-chunks, `matched`, nullptr when absent, and a body of one line
// per chunk: its size or "-") for a descriptor of `num_chunks` chunks (descriptor_calls.cc).
// kCorruption if it is not one.
Result<ProbeResult> ParseProbeAnswer(const std::string* matched, std::string_view body,
                                     uint64_t num_chunks);

// Reads what is left of a body (a few bytes at most for the answers it is used on).
Status Drain(HttpConnection& conn);

// The wait before SlowDown retry number `attempt` (0 first): uniform in
// [0, min(cap, 25 ms x 2^attempt)] ("full jitter").
std::chrono::steady_clock::duration SlowDownBackoff(uint32_t attempt,
                                                    std::chrono::milliseconds cap);

// Byte count of the whole payload, N·L·S, assuming Validate() passed.
inline uint64_t PayloadBytes(const descriptor::Descriptor& d, uint64_t chunks) {
  return chunks * d.num_layers * d.layer_bytes;
}

struct Client::Impl {
  ClientOptions options;
  std::string host;  // "127.0.0.1"
  std::string port;  // "9000"
  std::string host_header;

  std::mutex pool_mu;
  std::vector<std::unique_ptr<HttpConnection>> idle;  // guarded by pool_mu

  std::mutex plane_mu;
  std::unique_ptr<DataPlane> plane;  // guarded by plane_mu; opened on first use

  // A response whose body is still to be read; gives its connection back when destroyed
  // if the body was read to the end.
  struct Exchange {
    Impl* impl = nullptr;
    std::unique_ptr<HttpConnection> conn;
    HttpResponseHead head;
    Exchange() = default;
    Exchange(Exchange&&) = default;
    Exchange& operator=(Exchange&&) = default;
    ~Exchange() {
      if (impl != nullptr && conn != nullptr && conn->reusable()) {
        impl->Release(std::move(conn));
      }
    }
    // The error body when Execute already read it (a SlowDown it stopped retrying).
    std::optional<std::string> error_body;
    bool ok() const { return head.status >= 200 && head.status < 300; }
    // The error answer as a Status with its ErrorInfo (reads the error body).
    Status Error() {
      const std::string* id = head.Find("x-amz-request-id");
      const std::string_view request_id = id != nullptr ? std::string_view(*id) : "";
      if (error_body.has_value()) {
        return StatusFromS3Response(head.status, *error_body, request_id);
      }
      Result<std::string> body = conn->ReadBodyString(1 << 20);
      return StatusFromS3Response(head.status, body.has_value() ? *body : std::string(),
                                  request_id);
    }
  };

  Result<std::unique_ptr<HttpConnection>> Acquire(bool* reused);
  void Release(std::unique_ptr<HttpConnection> conn);

  // Adds host, x-amz-date, x-amz-content-sha256 and (with credentials) Authorization,
  // signing every header in `headers`. `target` is the raw request-target.
  Status Sign(std::string_view method, std::string_view target, HttpHeaders& headers,
              ByteSpan body) const;

  // Signs and sends one request; returns the exchange with the response header read. A
  // request on a reused connection that the server had closed is retried on the next one:
  // idle connections age together, so several in the pool may be stale (each failed one is
  // dropped; a failure on a fresh connection is returned). A 503 SlowDown answer is sent
  // again after a jittered exponential backoff while options.slowdown_retry_budget allows
  // (counted in slowdown_retries); the last one is returned otherwise.
  Result<Exchange> Execute(std::string_view method, std::string_view raw_path,
                           std::string_view raw_query, HttpHeaders headers, ByteSpan body);

  // One send of a signed request (with the stale-connection retry).
  Result<Exchange> SendOnce(const HttpRequest& req);

  // Path of a bucket or object, SigV4-encoded.
  static std::string Path(std::string_view bucket, std::string_view key = {});

  // The descriptor request: headers for a GET, or a POST body when they are too large.
  struct DescriptorRequest {
    std::string method;
    HttpHeaders headers;
    std::string body;
  };
  DescriptorRequest BuildDescriptorRequest(const descriptor::Descriptor& d) const;

  Result<DataPlane*> Plane();

  // Where a bucket's data plane listens (the discovery answer), and our connection to it.
  struct Route {
    std::string address;
    descriptor::ConnectionId connection{};
  };

  // The connection to the data plane serving `bucket`: discovered once per bucket (GET
  // /{bucket}?objectcache&data-plane, docs/protocol.md "Data plane: connecting"), connected
  // once per address by the DataPlane.
  Result<Route> RouteFor(std::string_view bucket, DataPlane& data_plane);

  // True if the gateway answered that the data plane does not know our connection (it
  // restarted, or closed or evicted it): the route is then forgotten and closed, so the
  // next request discovers and connects again.
  bool ForgetIfStale(const Status& answer, std::string_view bucket, const Route& route);

  static constexpr size_t kMaxRoutes = 4096;
  std::mutex routes_mu;
  // bucket -> (address, the server's x-oc-data-plane-shm); guarded by routes_mu
  std::map<std::string, std::pair<std::string, bool>, std::less<>> routes;

  std::atomic<uint64_t> slowdown_retries{0};  // SlowDown answers retried by Execute

  // Runs the HTTP exchanges of GetLayers and GetLayersHttp (ClientOptions::
  // requests_in_flight workers). Last member: destroyed first, it drains its tasks while the
  // pool and the data plane they use still exist.
  std::unique_ptr<BoundedExecutor> requests;
};

}  // namespace oc::client
