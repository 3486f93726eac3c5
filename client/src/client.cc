// The Client object: options, opening, and the plain S3 calls (CreateBucket, PutObject,
// GetObject, GetObjectBytes, DeleteObject, ListObjects). Signing and request execution are
// Client::Impl's (client_impl.cc); the descriptor requests are in descriptor_calls.cc.
#include "oc/client/client.h"

#include <cstdlib>
#include <string>
#include <utility>

#include "client_impl.h"
#include "fmt/format.h"
#include "oc/sigv4/uri.h"

namespace oc::client {
namespace {

// Descriptor GETs started beyond requests_in_flight wait their turn; more than this many
// waiting is a caller that never waits for its handles: GetLayers then fails with
// kResourceExhausted instead of growing a queue without end.
constexpr uint32_t kMaxQueuedRequests = 4096;

}  // namespace

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
  if (slowdown_retry_budget.count() < 0) {
    return Status::InvalidArgument("slowdown_retry_budget", "must not be negative");
  }
  if (slowdown_backoff_cap.count() <= 0) {
    return Status::InvalidArgument("slowdown_backoff_cap", "must be positive");
  }
  if (requests_in_flight == 0) {
    return Status::InvalidArgument("requests_in_flight", "must be positive");
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
  BoundedExecutor::Options requests;
  requests.threads = options.requests_in_flight;
  requests.max_queued = kMaxQueuedRequests;
  requests.field = "requests_in_flight";
  impl->requests = std::make_unique<BoundedExecutor>(std::move(requests));
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

const ClientOptions& Client::options() const { return impl_->options; }

uint64_t Client::slowdown_retries() const {
  return impl_->slowdown_retries.load(std::memory_order_relaxed);
}

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

Result<std::string> Client::GetObjectBytes(std::string_view bucket, std::string_view key,
                                           uint64_t offset, uint64_t length, uint64_t limit) {
  HttpHeaders headers;
  if (length > 0) {
    headers.emplace_back("range", fmt::format("bytes={}-{}", offset, offset + length - 1));
  }
  OC_ASSIGN_OR_RETURN(Impl::Exchange ex, impl_->Execute("GET", Impl::Path(bucket, key), "",
                                                        std::move(headers), ByteSpan()));
  if (!ex.ok()) {
    return ex.Error();
  }
  if (ex.head.content_length && *ex.head.content_length > limit) {
    return Status::ResourceExhausted(
        "body",
        fmt::format("object of {} bytes over the {}-byte limit", *ex.head.content_length, limit));
  }
  return ex.conn->ReadBodyString(limit);
}

Status Client::DeleteObject(std::string_view bucket, std::string_view key) {
  OC_ASSIGN_OR_RETURN(Impl::Exchange ex,
                      impl_->Execute("DELETE", Impl::Path(bucket, key), "", {}, ByteSpan()));
  if (!ex.ok()) {
    return ex.Error();
  }
  return Drain(*ex.conn);
}

Result<ListPage> Client::ListObjects(std::string_view bucket, std::string_view prefix,
                                     std::string_view continuation_token, uint32_t max_keys,
                                     std::string_view delimiter) {
  if (max_keys == 0 || max_keys > 1000) {
    return Status::InvalidArgument("max_keys", "must be 1..1000");
  }
  // Parameters in SigV4's canonical order (sorted by name), values encoded as it encodes them.
  std::string query;
  auto add = [&query](std::string_view name, std::string_view value) {
    query += fmt::format("{}{}={}", query.empty() ? "" : "&", name, sigv4::UriEncode(value, true));
  };
  if (!continuation_token.empty()) {
    add("continuation-token", continuation_token);
  }
  if (!delimiter.empty()) {
    add("delimiter", delimiter);
  }
  add("list-type", "2");
  add("max-keys", std::to_string(max_keys));
  if (!prefix.empty()) {
    add("prefix", prefix);
  }
  OC_ASSIGN_OR_RETURN(Impl::Exchange ex,
                      impl_->Execute("GET", Impl::Path(bucket), query, {}, ByteSpan()));
  if (!ex.ok()) {
    return ex.Error();
  }
  OC_ASSIGN_OR_RETURN(std::string body, ex.conn->ReadBodyString());
  return ParseListObjectsV2(body);
}

}  // namespace oc::client
