// Client::Impl (client_impl.h): the connection pool, SigV4 signing through oc_sigv4, request
// execution, the descriptor request shape and the route to a bucket's data plane.
#include "client_impl.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <random>
#include <thread>

#include "fmt/format.h"
#include "oc/common/headers.h"
#include "oc/descriptor/codec.h"
#include "oc/sigv4/crypto.h"
#include "oc/sigv4/signing.h"
#include "oc/sigv4/uri.h"

namespace oc::client {
namespace {

using Clock = std::chrono::steady_clock;

constexpr unsigned kSlowDownStatus = 503;
// The first backoff's upper bound; each retry doubles it up to the cap.
constexpr std::chrono::milliseconds kFirstBackoff{25};

bool IsSlowDown(std::string_view error_body) {
  return error_body.find("<Code>SlowDown</Code>") != std::string_view::npos;
}

}  // namespace

Clock::duration SlowDownBackoff(uint32_t attempt, std::chrono::milliseconds cap) {
  // "Full jitter": uniform in [0, min(cap, first * 2^attempt)], so clients refused together
  // do not come back together.
  const uint32_t shift = std::min<uint32_t>(attempt, 20);
  const auto ceiling = std::min<std::chrono::milliseconds>(cap, kFirstBackoff * (1u << shift));
  thread_local std::minstd_rand rng(std::random_device{}());
  std::uniform_int_distribution<int64_t> pick(0, std::chrono::microseconds(ceiling).count());
  return std::chrono::microseconds(pick(rng));
}

Status Drain(HttpConnection& conn) {
  Result<std::string> rest = conn.ReadBodyString(1 << 20);
  return rest.has_value() ? Status::Ok() : rest.error();
}

Result<std::unique_ptr<HttpConnection>> Client::Impl::Acquire(bool* reused) {
  {
    std::lock_guard lock(pool_mu);
    if (!idle.empty()) {
      auto conn = std::move(idle.back());
      idle.pop_back();
      *reused = true;
      return conn;
    }
  }
  *reused = false;
  return HttpConnection::Connect(host, port, options.timeout);
}

void Client::Impl::Release(std::unique_ptr<HttpConnection> conn) {
  std::lock_guard lock(pool_mu);
  if (idle.size() < options.max_idle_connections) {
    idle.push_back(std::move(conn));
  }
}

Status Client::Impl::Sign(std::string_view method, std::string_view target, HttpHeaders& headers,
                          ByteSpan body) const {
  // A POST carries a descriptor, which the gateway requires to be signed (docs/protocol.md,
  // "Signing"); other bodies are hashed only with sign_payload.
  const bool hash = options.sign_payload || method == "POST";
  const std::string payload_hash =
      hash ? sigv4::DigestHex(sigv4::Sha256Of(body)) : std::string(sigv4::kUnsignedPayload);
  const std::string amz_date = sigv4::FormatAmzDate(std::chrono::system_clock::now());
  headers.emplace_back("host", host_header);
  headers.emplace_back("x-amz-date", amz_date);
  headers.emplace_back("x-amz-content-sha256", payload_hash);
  if (options.access_key.empty()) {
    return Status::Ok();
  }
  const sigv4::RequestView view{method, target, HeaderViews(headers)};
  OC_ASSIGN_OR_RETURN(std::string authorization,
                      sigv4::SignRequest(view, amz_date, payload_hash,
                                         {options.access_key, options.secret_key, options.region}));
  headers.emplace_back("authorization", std::move(authorization));
  return Status::Ok();
}

Result<Client::Impl::Exchange> Client::Impl::Execute(std::string_view method,
                                                     std::string_view raw_path,
                                                     std::string_view raw_query,
                                                     HttpHeaders headers, ByteSpan body) {
  HttpRequest req;
  req.method = std::string(method);
  req.target =
      raw_query.empty() ? std::string(raw_path) : fmt::format("{}?{}", raw_path, raw_query);
  headers.emplace_back("content-length", std::to_string(body.size()));
  OC_RETURN_IF_ERROR(Sign(method, req.target, headers, body));
  req.headers = std::move(headers);
  req.body = body;
  const Clock::time_point give_up = Clock::now() + options.slowdown_retry_budget;
  for (uint32_t slowdowns = 0;; ++slowdowns) {
    Clock::duration wait{};
    {
      OC_ASSIGN_OR_RETURN(Exchange ex, SendOnce(req));
      if (ex.head.status != kSlowDownStatus) {
        return ex;
      }
      Result<std::string> body = ex.conn->ReadBodyString(1 << 20);
      ex.error_body = body.has_value() ? *body : std::string();
      if (!IsSlowDown(*ex.error_body)) {
        return ex;  // another 503 (ServiceUnavailable): something may have been done
      }
      wait = SlowDownBackoff(slowdowns, options.slowdown_backoff_cap);
      if (Clock::now() + wait > give_up) {
        return ex;
      }
      slowdown_retries.fetch_add(1, std::memory_order_relaxed);
    }  // the connection goes back to the pool while we wait
    std::this_thread::sleep_for(wait);
  }
}

Result<Client::Impl::Exchange> Client::Impl::SendOnce(const HttpRequest& req) {
  for (int attempt = 0;; ++attempt) {
    bool reused = false;
    OC_ASSIGN_OR_RETURN(std::unique_ptr<HttpConnection> conn, Acquire(&reused));
    Result<HttpResponseHead> head = conn->Send(req);
    if (!head.has_value()) {
      if (reused && head.error().code() == Code::kUnavailable &&
          static_cast<uint64_t>(attempt) <= options.max_idle_connections) {
        continue;  // stale keep-alive connection
      }
      return head.error();
    }
    Exchange ex;
    ex.impl = this;
    ex.conn = std::move(conn);
    ex.head = std::move(*head);
    return ex;
  }
}

std::string Client::Impl::Path(std::string_view bucket, std::string_view key) {
  std::string path = "/" + sigv4::UriEncode(bucket, true);
  if (!key.empty()) {
    path += "/" + sigv4::UriEncode(key, false);
  }
  return path;
}

Client::Impl::DescriptorRequest Client::Impl::BuildDescriptorRequest(
    const descriptor::Descriptor& d) const {
  DescriptorRequest r;
  descriptor::HeaderList h = descriptor::EncodeHeaders(d);
  if (descriptor::HeaderBytes(h) <= options.max_descriptor_header_bytes) {
    r.method = "GET";
    r.headers.assign(h.begin(), h.end());
  } else {
    r.method = "POST";
    r.body = descriptor::EncodeBody(d);
    r.headers.emplace_back("content-type", "text/plain");
  }
  return r;
}

Result<DataPlane*> Client::Impl::Plane() {
  std::lock_guard lock(plane_mu);
  if (plane == nullptr) {
    OC_ASSIGN_OR_RETURN(plane, DataPlane::Open(options.data_plane));
  }
  return plane.get();
}

Result<Client::Impl::Route> Client::Impl::RouteFor(std::string_view bucket, DataPlane& data_plane) {
  std::optional<std::pair<std::string, bool>> known;
  {
    std::lock_guard lock(routes_mu);
    auto it = routes.find(bucket);
    if (it != routes.end()) {
      known = it->second;
    }
  }
  if (!known.has_value()) {
    OC_ASSIGN_OR_RETURN(Exchange ex, Execute("GET", Path(bucket), "objectcache&data-plane",
                                             HttpHeaders{}, ByteSpan()));
    if (!ex.ok()) {
      return ex.Error();
    }
    const std::string* address = ex.head.Find("x-oc-data-plane-address");
    const std::string* shm = ex.head.Find("x-oc-data-plane-shm");
    if (address == nullptr || address->empty() || shm == nullptr) {
      return Status::Corruption("data-plane discovery answer without its address");
    }
    known.emplace(*address, *shm == "1");
    OC_RETURN_IF_ERROR(Drain(*ex.conn));
    std::lock_guard lock(routes_mu);
    if (routes.size() >= kMaxRoutes) {
      routes.clear();  // bounded; rediscovered on use
    }
    routes[std::string(bucket)] = *known;
  }
  Route r;
  r.address = known->first;
  OC_ASSIGN_OR_RETURN(r.connection, data_plane.Connect(known->first, known->second));
  return r;
}

bool Client::Impl::ForgetIfStale(const Status& answer, std::string_view bucket,
                                 const Route& route) {
  if (answer.code() != Code::kInvalidArgument || answer.field() != "x-oc-target-connection") {
    return false;
  }
  {
    std::lock_guard lock(routes_mu);
    auto it = routes.find(bucket);
    if (it != routes.end()) {
      routes.erase(it);
    }
  }
  Result<DataPlane*> p = Plane();
  if (p.has_value()) {
    (*p)->Disconnect(route.address, route.connection);
  }
  return true;
}

}  // namespace oc::client
