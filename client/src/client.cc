#include "oc/client/client.h"

#include <time.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "auth/crypto.h"
#include "auth/sigv4.h"
#include "auth/uri.h"
#include "fmt/format.h"
#include "http_transport.h"
#include "oc/common/units.h"
#include "oc/descriptor/limits.h"

namespace oc::client {
namespace {

namespace auth = oc::gateway::auth;
using DeliveryOrder = descriptor::Delivery;
using descriptor::Descriptor;

constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";
// Body bytes read per ReadBody call on the HTTP fallback (lands directly in caller memory).
constexpr uint64_t kBodyPieceBytes = 4ull << 20;
// Slice of a WaitLayer on the data plane between checks of the HTTP answer (an HTTP error
// means no notification will come).
constexpr std::chrono::milliseconds kWaitSlice{20};

std::string AmzDate(std::chrono::system_clock::time_point now) {
  const time_t t = std::chrono::system_clock::to_time_t(now);
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[32];
  const size_t n = strftime(buf, sizeof(buf), "%Y%m%dT%H%M%SZ", &tm);
  return std::string(buf, n);
}

std::string XmlElement(std::string_view xml, std::string_view name) {
  const std::string open = fmt::format("<{}>", name);
  const std::string close = fmt::format("</{}>", name);
  const size_t b = xml.find(open);
  if (b == std::string_view::npos) {
    return {};
  }
  const size_t start = b + open.size();
  const size_t e = xml.find(close, start);
  if (e == std::string_view::npos) {
    return {};
  }
  std::string out;
  std::string_view v = xml.substr(start, e - start);
  constexpr std::pair<std::string_view, char> kEntities[] = {
      {"&lt;", '<'}, {"&gt;", '>'}, {"&amp;", '&'}, {"&quot;", '"'}, {"&apos;", '\''}};
  while (!v.empty()) {
    bool replaced = false;
    if (v.front() == '&') {
      for (const auto& [entity, c] : kEntities) {
        if (v.starts_with(entity)) {
          out.push_back(c);
          v.remove_prefix(entity.size());
          replaced = true;
          break;
        }
      }
    }
    if (!replaced) {
      out.push_back(v.front());
      v.remove_prefix(1);
    }
  }
  return out;
}

// Reads what is left of a body (a few bytes at most for the answers it is used on).
Status Drain(HttpConnection& conn) {
  Result<std::string> rest = conn.ReadBodyString(1 << 20);
  return rest.has_value() ? Status::Ok() : rest.error();
}

// Byte count of the whole payload, N·L·S, assuming Validate() passed.
uint64_t PayloadBytes(const Descriptor& d, uint64_t chunks) {
  return chunks * d.num_layers * d.layer_bytes;
}

}  // namespace

Status StatusFromS3Response(unsigned http_status, std::string_view body) {
  std::string code = XmlElement(body, "Code");
  std::string message = XmlElement(body, "Message");
  std::string field = XmlElement(body, "ArgumentName");
  if (code.empty()) {
    code = fmt::format("HTTP{}", http_status);
  }
  Code c = Code::kInternal;
  Subject subject = Subject::kNone;
  switch (http_status) {
    case 400:
      c = Code::kInvalidArgument;
      if (field.starts_with("x-oc-") || field == "body") {
        subject = Subject::kDescriptor;
      }
      break;
    case 401:
      c = Code::kUnauthenticated;
      break;
    case 403:
      c = (code == "AccessDenied") ? Code::kPermissionDenied : Code::kUnauthenticated;
      if (code == "SignatureDoesNotMatch") {
        subject = Subject::kSignature;
      } else if (code == "InvalidAccessKeyId") {
        subject = Subject::kAccessKey;
      }
      break;
    case 404:
      c = Code::kNotFound;
      subject = code == "NoSuchBucket"   ? Subject::kBucket
                : code == "NoSuchUpload" ? Subject::kUpload
                                         : Subject::kKey;
      break;
    case 409:
      c = code.find("AlreadyOwned") != std::string::npos ||
                  code.find("AlreadyExists") != std::string::npos
              ? Code::kAlreadyExists
              : Code::kFailedPrecondition;
      if (code.starts_with("Bucket")) {
        subject = Subject::kBucket;
      }
      break;
    case 412:
      c = Code::kFailedPrecondition;
      break;
    case 416:
      c = Code::kOutOfRange;
      subject = Subject::kRange;
      break;
    case 501:
      c = Code::kUnimplemented;
      break;
    case 503:
      c = Code::kUnavailable;
      break;
    default:
      c = http_status >= 500 ? Code::kInternal : Code::kInvalidArgument;
      break;
  }
  return Status(c, subject, std::move(field),
                fmt::format("{} (HTTP {}): {}", code, http_status, message));
}

// ---------------------------------------------------------------------------------------
// Options

Status ClientOptions::Validate() const {
  if (!endpoint.starts_with("http://") || endpoint.size() <= 7) {
    return Status::InvalidArgument("endpoint", "must be http://host[:port]");
  }
  if (access_key.empty() != secret_key.empty()) {
    return Status::InvalidArgument("access_key", "give both keys or neither");
  }
  if (timeout.count() <= 0) {
    return Status::InvalidArgument("timeout", "must be positive");
  }
  return Status::Ok();
}

void ApplyEnvironment(ClientOptions* options) {
  auto env = [](const char* name) -> const char* {
    const char* v = std::getenv(name);
    return (v != nullptr && *v != '\0') ? v : nullptr;
  };
  if (const char* v = env("OC_ENDPOINT")) {
    options->endpoint = v;
  }
  if (env("AWS_ACCESS_KEY_ID") != nullptr && env("AWS_SECRET_ACCESS_KEY") != nullptr) {
    options->access_key = env("AWS_ACCESS_KEY_ID");
    options->secret_key = env("AWS_SECRET_ACCESS_KEY");
  } else if (env("OC_ACCESS_KEY") != nullptr && env("OC_SECRET_KEY") != nullptr) {
    options->access_key = env("OC_ACCESS_KEY");
    options->secret_key = env("OC_SECRET_KEY");
  }
  if (const char* v = env("AWS_REGION")) {
    options->region = v;
  }
}

// ---------------------------------------------------------------------------------------
// Client::Impl: connection pool, signing, request execution.

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
    bool ok() const { return head.status >= 200 && head.status < 300; }
    // The error answer as a Status (reads the error body).
    Status Error() {
      Result<std::string> body = conn->ReadBodyString(1 << 20);
      return StatusFromS3Response(head.status, body.has_value() ? *body : std::string());
    }
  };

  Result<std::unique_ptr<HttpConnection>> Acquire(bool* reused) {
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

  void Release(std::unique_ptr<HttpConnection> conn) {
    std::lock_guard lock(pool_mu);
    if (idle.size() < options.max_idle_connections) {
      idle.push_back(std::move(conn));
    }
  }

  // Adds host, x-amz-date, x-amz-content-sha256 and (with credentials) Authorization,
  // signing every header in `headers`.
  Status Sign(std::string_view method, std::string_view raw_path, std::string_view raw_query,
              HttpHeaders& headers, ByteSpan body) const {
    // A POST carries a descriptor, which the gateway requires to be signed (docs/protocol.md,
    // "Signing"); other bodies are hashed only with sign_payload.
    const bool hash = options.sign_payload || method == "POST";
    const std::string payload_hash =
        hash ? auth::DigestHex(auth::Sha256Of(body)) : std::string(kUnsignedPayload);
    const std::string amz_date = AmzDate(std::chrono::system_clock::now());
    headers.emplace_back("host", host_header);
    headers.emplace_back("x-amz-date", amz_date);
    headers.emplace_back("x-amz-content-sha256", payload_hash);
    if (options.access_key.empty()) {
      return Status::Ok();
    }
    auth::RequestView view;
    view.method = method;
    std::vector<std::string> signed_headers;
    for (const auto& [name, value] : headers) {
      view.headers.emplace_back(name, value);
      signed_headers.push_back(name);
    }
    std::sort(signed_headers.begin(), signed_headers.end());
    signed_headers.erase(std::unique(signed_headers.begin(), signed_headers.end()),
                         signed_headers.end());
    OC_ASSIGN_OR_RETURN(std::string uri, auth::CanonicalUri(raw_path));
    OC_ASSIGN_OR_RETURN(std::string query, auth::CanonicalQuery(raw_query, false));
    OC_ASSIGN_OR_RETURN(std::string canonical_headers,
                        auth::CanonicalHeaders(view, signed_headers, "signed headers"));
    const std::string canonical =
        auth::CanonicalRequest(method, uri, query, canonical_headers, signed_headers, payload_hash);
    const std::string date = amz_date.substr(0, 8);
    const std::string scope = fmt::format("{}/{}/s3/aws4_request", date, options.region);
    const std::string sts = auth::StringToSign(amz_date, scope, canonical);
    const auth::Sha256Digest key =
        auth::DeriveSigningKey(options.secret_key, date, options.region, "s3");
    std::string joined;
    for (const std::string& h : signed_headers) {
      if (!joined.empty()) {
        joined.push_back(';');
      }
      joined.append(h);
    }
    headers.emplace_back(
        "authorization",
        fmt::format("AWS4-HMAC-SHA256 Credential={}/{}, SignedHeaders={}, "
                    "Signature={}",
                    options.access_key, scope, joined, auth::SignatureHex(key, sts)));
    return Status::Ok();
  }

  // Signs and sends one request; returns the exchange with the response header read. A
  // request on a reused connection that the server had closed is retried on the next one:
  // idle connections age together, so several in the pool may be stale (each failed one is
  // dropped; a failure on a fresh connection is returned).
  Result<Exchange> Execute(std::string_view method, std::string_view raw_path,
                           std::string_view raw_query, HttpHeaders headers, ByteSpan body) {
    headers.emplace_back("content-length", std::to_string(body.size()));
    OC_RETURN_IF_ERROR(Sign(method, raw_path, raw_query, headers, body));
    HttpRequest req;
    req.method = std::string(method);
    req.target =
        raw_query.empty() ? std::string(raw_path) : fmt::format("{}?{}", raw_path, raw_query);
    req.headers = std::move(headers);
    req.body = body;
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

  // Path of a bucket or object, SigV4-encoded.
  static std::string Path(std::string_view bucket, std::string_view key = {}) {
    std::string path = "/" + auth::UriEncode(bucket, true);
    if (!key.empty()) {
      path += "/" + auth::UriEncode(key, false);
    }
    return path;
  }

  // The descriptor request: headers for a GET, or a POST body when they are too large.
  struct DescriptorRequest {
    std::string method;
    HttpHeaders headers;
    std::string body;
  };
  DescriptorRequest BuildDescriptorRequest(const Descriptor& d) const {
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

  Result<DataPlane*> Plane() {
    std::lock_guard lock(plane_mu);
    if (plane == nullptr) {
      OC_ASSIGN_OR_RETURN(plane, DataPlane::Open(options.data_plane));
    }
    return plane.get();
  }

  // Where a bucket's data plane listens (the discovery answer), and our connection to it.
  struct Route {
    std::string address;
    descriptor::ConnectionId connection{};
  };

  // The connection to the data plane serving `bucket`: discovered once per bucket (GET
  // /{bucket}?objectcache&data-plane, docs/protocol.md "Data plane: connecting"), connected
  // once per address by the DataPlane.
  Result<Route> RouteFor(std::string_view bucket, DataPlane& data_plane) {
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

  // True if the gateway answered that the data plane does not know our connection (it
  // restarted, or closed or evicted it): the route is then forgotten and closed, so the
  // next request discovers and connects again.
  bool ForgetIfStale(const Status& answer, std::string_view bucket, const Route& route) {
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

  static constexpr size_t kMaxRoutes = 4096;
  std::mutex routes_mu;
  // bucket -> (address, the server's x-oc-data-plane-shm); guarded by routes_mu
  std::map<std::string, std::pair<std::string, bool>, std::less<>> routes;
};

// ---------------------------------------------------------------------------------------
// LayerHandle

struct LayerHandle::State {
  Client::Impl* impl = nullptr;
  uint32_t num_layers = 0;
  std::chrono::milliseconds timeout{0};
  std::unique_ptr<Delivery> delivery;  // UCX path; null on the HTTP path
  LayerCallback on_layer;              // HTTP path

  std::mutex mu;
  std::condition_variable cv;
  uint32_t ready = 0;     // HTTP path: layers landed; guarded by mu
  bool finished = false;  // the HTTP exchange ended; guarded by mu
  Status status;          // its outcome; guarded by mu
  LayersResult result;    // guarded by mu
  std::thread thread;     // runs the HTTP exchange

  void Finish(Status s, LayersResult r) {
    std::lock_guard lock(mu);
    status = std::move(s);
    result = std::move(r);
    finished = true;
    cv.notify_all();
  }
  void LayerLanded(uint32_t layer) {
    {
      std::lock_guard lock(mu);
      ready = layer + 1;
      cv.notify_all();
    }
    if (on_layer) {
      on_layer(layer);
    }
  }
};

LayerHandle::LayerHandle(std::unique_ptr<State> state) : state_(std::move(state)) {}
LayerHandle::LayerHandle(LayerHandle&&) noexcept = default;
LayerHandle& LayerHandle::operator=(LayerHandle&& other) noexcept {
  if (this != &other) {
    if (state_ && state_->thread.joinable()) {
      state_->thread.join();
    }
    state_ = std::move(other.state_);
  }
  return *this;
}
LayerHandle::~LayerHandle() {
  if (state_ && state_->thread.joinable()) {
    state_->thread.join();
  }
}

Status LayerHandle::WaitLayer(uint32_t layer) { return WaitLayer(layer, state_->timeout); }

Status LayerHandle::WaitLayer(uint32_t layer, std::chrono::milliseconds timeout) {
  State& s = *state_;
  if (layer >= s.num_layers) {
    return Status::OutOfRange(fmt::format("layer {} of a {}-layer request", layer, s.num_layers));
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  if (s.delivery == nullptr) {  // HTTP: the exchange thread counts layers
    std::unique_lock lock(s.mu);
    if (!s.cv.wait_until(lock, deadline, [&] { return s.ready > layer || s.finished; })) {
      return Status::Unavailable(fmt::format("timed out waiting for layer {}", layer));
    }
    if (s.ready > layer) {
      return Status::Ok();
    }
    if (!s.status.ok()) {
      return s.status;
    }
    return Status::OutOfRange(
        fmt::format("the request ended without layer {} ({} of {} chunks "
                    "matched)",
                    layer, s.result.summary.matched_chunks, s.result.summary.matched_chunks));
  }
  // UCX: wait on the delivery in slices, giving up early when the HTTP answer is an error
  // (then no notification will come).
  Status last;
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      return last.ok() ? Status::Unavailable("timed out") : last;
    }
    const auto slice = std::min<std::chrono::milliseconds>(
        kWaitSlice, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now) +
                        std::chrono::milliseconds(1));
    last = s.delivery->WaitLayer(layer, slice);
    if (last.ok() || last.code() != Code::kUnavailable) {
      return last;
    }
    std::lock_guard lock(s.mu);
    if (s.finished && !s.status.ok()) {
      return s.status;
    }
  }
}

Result<LayersResult> LayerHandle::Wait() {
  State& s = *state_;
  {
    std::unique_lock lock(s.mu);
    if (!s.cv.wait_for(lock, s.timeout, [&] { return s.finished; })) {
      return Status::Unavailable("timed out waiting for the gateway's answer");
    }
    if (!s.status.ok()) {
      return s.status;
    }
  }
  if (s.delivery != nullptr) {
    OC_RETURN_IF_ERROR(s.delivery->Wait(s.timeout));
  }
  std::lock_guard lock(s.mu);
  return s.result;
}

uint32_t LayerHandle::layers_ready() const {
  if (state_->delivery != nullptr) {
    return state_->delivery->layers_ready();
  }
  std::lock_guard lock(state_->mu);
  return state_->ready;
}

// ---------------------------------------------------------------------------------------
// Client

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::Open(const ClientOptions& options) {
  OC_RETURN_IF_ERROR(options.Validate());
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  std::string_view rest = std::string_view(options.endpoint).substr(7);
  if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
    rest = rest.substr(0, slash);
  }
  impl->host_header = std::string(rest);
  const size_t colon = rest.rfind(':');
  if (colon != std::string_view::npos && rest.find(']', colon) == std::string_view::npos) {
    impl->host = std::string(rest.substr(0, colon));
    impl->port = std::string(rest.substr(colon + 1));
  } else {
    impl->host = std::string(rest);
    impl->port = "80";
  }
  if (impl->host.size() > 2 && impl->host.front() == '[') {
    impl->host = impl->host.substr(1, impl->host.size() - 2);
  }
  if (impl->host.empty() || impl->port.empty()) {
    return Status::InvalidArgument("endpoint", "must be http://host[:port]");
  }
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

const ClientOptions& Client::options() const { return impl_->options; }

Result<DataPlane*> Client::data_plane() { return impl_->Plane(); }

Status Client::CreateBucket(std::string_view bucket) {
  OC_ASSIGN_OR_RETURN(Impl::Exchange ex,
                      impl_->Execute("PUT", Impl::Path(bucket), "", {}, ByteSpan()));
  if (!ex.ok()) {
    return ex.Error();
  }
  return Drain(*ex.conn);
}

Status Client::PutObject(std::string_view bucket, std::string_view key, ByteSpan data) {
  OC_ASSIGN_OR_RETURN(Impl::Exchange ex,
                      impl_->Execute("PUT", Impl::Path(bucket, key), "", {}, data));
  if (!ex.ok()) {
    return ex.Error();
  }
  return Drain(*ex.conn);
}

Result<uint64_t> Client::GetObject(std::string_view bucket, std::string_view key,
                                   MutableByteSpan out, uint64_t offset, uint64_t length) {
  HttpHeaders headers;
  if (length > 0) {
    headers.emplace_back("range", fmt::format("bytes={}-{}", offset, offset + length - 1));
  }
  OC_ASSIGN_OR_RETURN(Impl::Exchange ex, impl_->Execute("GET", Impl::Path(bucket, key), "",
                                                        std::move(headers), ByteSpan()));
  if (!ex.ok()) {
    return ex.Error();
  }
  if (ex.head.content_length && *ex.head.content_length > out.size()) {
    return Status::OutOfRange(fmt::format("object of {} bytes does not fit {} bytes",
                                          *ex.head.content_length, out.size()));
  }
  uint64_t got = 0;
  for (;;) {
    if (got == out.size()) {
      std::byte probe[1];
      OC_ASSIGN_OR_RETURN(uint64_t extra, ex.conn->ReadBody(MutableByteSpan(probe, 1)));
      if (extra != 0) {
        return Status::OutOfRange("object larger than the buffer");
      }
      return got;
    }
    OC_ASSIGN_OR_RETURN(uint64_t n, ex.conn->ReadBody(out.subspan(got)));
    if (n == 0) {
      return got;
    }
    got += n;
  }
}

namespace {

// Chunks [first, first + count) of `d` as a descriptor of their own.
Descriptor SubDescriptor(const Descriptor& d, uint64_t first, uint64_t count) {
  Descriptor sub = d;
  if (const auto* compact = std::get_if<descriptor::CompactKeys>(&d.keys)) {
    sub.keys = descriptor::CompactKeys{
        compact->prefix, std::vector<descriptor::ChunkHash>(
                             compact->hashes.begin() + static_cast<std::ptrdiff_t>(first),
                             compact->hashes.begin() + static_cast<std::ptrdiff_t>(first + count))};
  } else {
    const auto& names = std::get<descriptor::ExplicitKeys>(d.keys).names;
    sub.keys = descriptor::ExplicitKeys{
        std::vector<std::string>(names.begin() + static_cast<std::ptrdiff_t>(first),
                                 names.begin() + static_cast<std::ptrdiff_t>(first + count))};
  }
  return sub;
}

HttpHeaders PutHeaders(const Descriptor& d) {
  HttpHeaders headers;
  for (auto& [name, value] : descriptor::EncodeHeaders(d)) {
    if (name != "x-oc-delivery") {
      headers.emplace_back(std::move(name), std::move(value));
    }
  }
  return headers;
}

}  // namespace

Result<PutChunksResult> Client::PutChunks(std::string_view bucket, const Descriptor& d,
                                          ByteSpan chunks) {
  Descriptor put = d;
  put.target.reset();
  put.delivery = DeliveryOrder::kLayerMajor;
  OC_RETURN_IF_ERROR(descriptor::Validate(put, descriptor::Limits{}));
  const uint64_t n = put.num_chunks();
  const uint64_t object = uint64_t{put.num_layers} * put.layer_bytes;
  if (chunks.size() != n * object) {
    return Status(Code::kInvalidArgument, Subject::kDescriptor, "body",
                  fmt::format("{} bytes given for {} chunks of {} layers x {} bytes", chunks.size(),
                              n, put.num_layers, put.layer_bytes));
  }
  // The PUT's descriptor travels in headers only: split a key list too long for the
  // gateway's header limit into several PUTs (docs/protocol.md, descriptor PUT).
  uint64_t batch = n;
  while (batch > 1 && descriptor::HeaderBytes(descriptor::EncodeHeaders(SubDescriptor(
                          put, 0, batch))) > impl_->options.max_descriptor_header_bytes) {
    batch = (batch + 1) / 2;
  }
  PutChunksResult r;
  for (uint64_t first = 0; first < n; first += batch) {
    const uint64_t count = std::min(batch, n - first);
    const Descriptor sub = batch == n ? put : SubDescriptor(put, first, count);
    OC_ASSIGN_OR_RETURN(Impl::Exchange ex,
                        impl_->Execute("PUT", Impl::Path(bucket), "objectcache", PutHeaders(sub),
                                       chunks.subspan(first * object, count * object)));
    if (!ex.ok()) {
      return ex.Error();
    }
    OC_RETURN_IF_ERROR(Drain(*ex.conn));
    r.chunks += count;
    r.bytes += count * object;
    if (const std::string* id = ex.head.Find("x-oc-request-id")) {
      r.request_id = *id;
    }
  }
  return r;
}

Result<PutChunksResult> Client::PutChunks(std::string_view bucket, Descriptor d,
                                          const TargetBuffer& source, uint64_t offset) {
  d.target.reset();
  OC_RETURN_IF_ERROR(descriptor::Validate(d, descriptor::Limits{}));
  const uint64_t total = PayloadBytes(d, d.num_chunks());
  OC_ASSIGN_OR_RETURN(DataPlane * plane, impl_->Plane());
  Impl::Exchange ex;
  for (int attempt = 0;; ++attempt) {
    OC_ASSIGN_OR_RETURN(Impl::Route route, impl_->RouteFor(bucket, *plane));
    OC_ASSIGN_OR_RETURN(d.target, source.Target(route.connection, offset, total));
    OC_ASSIGN_OR_RETURN(
        ex, impl_->Execute("PUT", Impl::Path(bucket), "objectcache", PutHeaders(d), ByteSpan()));
    if (ex.ok()) {
      break;
    }
    Status answer = ex.Error();
    // Refused before any byte moved: connect again once.
    if (attempt > 0 || !impl_->ForgetIfStale(answer, bucket, route)) {
      return answer;
    }
  }
  OC_RETURN_IF_ERROR(Drain(*ex.conn));
  PutChunksResult r;
  r.chunks = d.num_chunks();
  r.bytes = total;
  if (const std::string* id = ex.head.Find("x-oc-request-id")) {
    r.request_id = *id;
  }
  return r;
}

Result<ProbeResult> Client::ProbeChunks(std::string_view bucket, const Descriptor& d) {
  Descriptor probe = d;
  probe.target.reset();
  OC_RETURN_IF_ERROR(descriptor::Validate(probe, descriptor::Limits{}));
  Impl::DescriptorRequest req = impl_->BuildDescriptorRequest(probe);
  OC_ASSIGN_OR_RETURN(Impl::Exchange ex,
                      impl_->Execute(req.method, Impl::Path(bucket), "objectcache&probe",
                                     std::move(req.headers), AsBytes(req.body)));
  if (!ex.ok()) {
    return ex.Error();
  }
  OC_ASSIGN_OR_RETURN(std::string body, ex.conn->ReadBodyString());
  ProbeResult r;
  const std::string* matched = ex.head.Find("x-oc-matched-chunks");
  if (matched == nullptr) {
    return Status::Corruption("probe answer without x-oc-matched-chunks");
  }
  OC_ASSIGN_OR_RETURN(r.matched, ParseUint64(*matched, "x-oc-matched-chunks"));
  std::string_view rest = body;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    if (line.empty()) {
      continue;
    }
    if (line == "-") {
      r.sizes.emplace_back(std::nullopt);
    } else {
      OC_ASSIGN_OR_RETURN(uint64_t size, ParseUint64(line, "probe body"));
      r.sizes.emplace_back(size);
    }
  }
  if (r.sizes.size() != probe.num_chunks() || r.matched > r.sizes.size()) {
    return Status::Corruption(
        fmt::format("probe answer has {} sizes for {} chunks", r.sizes.size(), probe.num_chunks()));
  }
  return r;
}

namespace {

Result<LayersResult> ParseLayersAnswer(const HttpResponseHead& head) {
  std::vector<descriptor::HeaderField> fields;
  fields.reserve(head.headers.size());
  for (const auto& [n, v] : head.headers) {
    fields.push_back({n, v});
  }
  LayersResult r;
  OC_ASSIGN_OR_RETURN(r.summary, descriptor::DecodeResponse(fields));
  if (const std::string* rate = head.Find("x-oc-assigned-rate-gbps")) {
    r.assigned_rate_gbps = std::strtod(rate->c_str(), nullptr);
  }
  return r;
}

// Sends a descriptor GET (or POST) and parses the answer's x-oc-* headers. On success the
// response body (layer bytes, or nothing for a data-plane target) is left unread in *ex;
// an error answer is read and returned as a Status.
Result<LayersResult> SendDescriptorGet(Client::Impl& impl, std::string_view bucket,
                                       Client::Impl::DescriptorRequest req,
                                       Client::Impl::Exchange* ex) {
  OC_ASSIGN_OR_RETURN(*ex, impl.Execute(req.method, Client::Impl::Path(bucket), "objectcache",
                                        std::move(req.headers), AsBytes(req.body)));
  if (!ex->ok()) {
    return ex->Error();
  }
  return ParseLayersAnswer(ex->head);
}

}  // namespace

Result<LayerHandle> Client::GetLayers(std::string_view bucket, Descriptor d,
                                      const TargetBuffer& buffer, LayerCallback on_layer,
                                      uint64_t offset) {
  d.target.reset();
  OC_RETURN_IF_ERROR(descriptor::Validate(d, descriptor::Limits{}));
  const uint64_t total = PayloadBytes(d, d.num_chunks());
  OC_ASSIGN_OR_RETURN(DataPlane * plane, impl_->Plane());
  OC_ASSIGN_OR_RETURN(Impl::Route route, impl_->RouteFor(bucket, *plane));
  OC_ASSIGN_OR_RETURN(d.target, buffer.Target(route.connection, offset, total));
  auto state = std::make_unique<LayerHandle::State>();
  state->impl = impl_.get();
  state->num_layers = d.num_layers;
  state->timeout = impl_->options.timeout;
  OC_ASSIGN_OR_RETURN(state->delivery,
                      plane->Expect(d.target->address, d.num_layers, std::move(on_layer)));
  Impl::DescriptorRequest req = impl_->BuildDescriptorRequest(d);
  LayerHandle::State* s = state.get();
  state->thread = std::thread(
      [s, req = std::move(req), bucket = std::string(bucket), route = std::move(route)]() mutable {
        Impl::Exchange ex;
        Result<LayersResult> r = SendDescriptorGet(*s->impl, bucket, std::move(req), &ex);
        if (!r.has_value()) {
          // The next request connects again if this one named a connection the server lost.
          (void)s->impl->ForgetIfStale(r.error(), bucket, route);
          s->Finish(r.error(), {});
          return;
        }
        s->Finish(Drain(*ex.conn), std::move(*r));
      });
  return LayerHandle(std::move(state));
}

Result<LayerHandle> Client::GetLayersHttp(std::string_view bucket, Descriptor d,
                                          MutableByteSpan out, LayerCallback on_layer) {
  d.target.reset();
  OC_RETURN_IF_ERROR(descriptor::Validate(d, descriptor::Limits{}));
  const uint64_t n = d.num_chunks();
  if (out.size() < PayloadBytes(d, n)) {
    return Status::OutOfRange(fmt::format("buffer of {} bytes is smaller than the {}-byte payload",
                                          out.size(), PayloadBytes(d, n)));
  }
  auto state = std::make_unique<LayerHandle::State>();
  state->impl = impl_.get();
  state->num_layers = d.num_layers;
  state->timeout = impl_->options.timeout;
  state->on_layer = std::move(on_layer);
  Impl::DescriptorRequest req = impl_->BuildDescriptorRequest(d);
  LayerHandle::State* s = state.get();
  state->thread =
      std::thread([s, req = std::move(req), bucket = std::string(bucket), d, out, n]() mutable {
        Impl::Exchange exchange;
        Result<LayersResult> r = SendDescriptorGet(*s->impl, bucket, std::move(req), &exchange);
        Impl::Exchange* ex = &exchange;
        if (!r.has_value()) {
          s->Finish(r.error(), {});
          return;
        }
        const uint64_t m = r->summary.matched_chunks;
        const uint64_t l_count = d.num_layers;
        const uint64_t slice = d.layer_bytes;
        if (m > n || !ex->head.content_length || *ex->head.content_length != m * l_count * slice) {
          s->Finish(Status::Corruption(fmt::format("answer of {} bytes for {} matched chunks",
                                                   ex->head.content_length.value_or(0), m)),
                    {});
          return;
        }
        r->payload_bytes = m * l_count * slice;
        // Body offsets are dense in M; the buffer uses the descriptor's N. Layer-major: layer l
        // is the run [l·M·S, (l+1)·M·S) of the body and lands at l·N·S. Chunk-major: the same
        // offsets either way; layer l is whole once chunk M-1's slice l has arrived.
        const bool layer_major = d.delivery == DeliveryOrder::kLayerMajor;
        const uint64_t run = layer_major ? m * slice : m * l_count * slice;
        uint64_t next_layer = 0;
        uint64_t received = 0;
        const uint64_t total = m * l_count * slice;
        while (received < total) {
          const uint64_t run_index = received / run;
          const uint64_t within = received % run;
          const uint64_t dest = (layer_major ? run_index * n * slice : 0) + within;
          const uint64_t want = std::min(run - within, kBodyPieceBytes);
          Result<uint64_t> got = ex->conn->ReadBody(out.subspan(dest, want));
          if (!got.has_value()) {
            s->Finish(got.error(), {});
            return;
          }
          if (*got == 0) {
            s->Finish(Status::Unavailable(
                          fmt::format("body ended after {} of {} bytes", received, total)),
                      {});
            return;
          }
          received += *got;
          // Announce every layer now complete.
          while (next_layer < l_count) {
            const uint64_t end = layer_major ? (next_layer + 1) * m * slice
                                             : ((m - 1) * l_count + next_layer + 1) * slice;
            if (received < end) {
              break;
            }
            s->LayerLanded(static_cast<uint32_t>(next_layer++));
          }
        }
        Status drained = Drain(*ex->conn);
        s->Finish(std::move(drained), std::move(*r));
      });
  return LayerHandle(std::move(state));
}

}  // namespace oc::client
