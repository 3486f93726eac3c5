#pragma once
// HttpConnection: one keep-alive HTTP/1.1 connection to the gateway, synchronous (the client
// library's only transport for the S3 and descriptor requests; the bytes of a descriptor GET
// with a target travel over UCX instead). Boost.Beast stays inside http_transport.cc.
//
// A request is sent whole (headers, then the body from one span); the response header is
// read first, then the body in pieces into caller memory, so a large payload never needs a
// second copy. A server that answers before it has read the whole body and then closes (an
// early error: NoSuchBucket, AccessDenied) gets its answer read and returned, not the write's
// broken pipe. Every socket read and write is bounded by the connection's timeout
// (SO_RCVTIMEO/SO_SNDTIMEO: Beast's own timeouts apply to async operations only).
// Thread safety: a connection is used by one thread at a time.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oc/common/bytes.h"
#include "oc/common/headers.h"
#include "oc/common/result.h"
#include "oc/common/status.h"

namespace oc::client {

// Headers to send or as received, owned (the one owned list type, oc/common/headers.h).
using HttpHeaders = HeaderList;

struct HttpRequest {
  std::string method;   // "GET"
  std::string target;   // raw request-target: encoded path ["?" query]
  HttpHeaders headers;  // sent as given (Host and Content-Length included by the caller)
  ByteSpan body;
};

struct HttpResponseHead {
  unsigned status = 0;
  HttpHeaders headers;  // names lowercased
  std::optional<uint64_t> content_length;
  bool keep_alive = false;

  // The first header named `name` (lowercase), or nullptr.
  const std::string* Find(std::string_view name) const;
};

// Largest error or probe body read whole into memory; larger is kResourceExhausted.
inline constexpr uint64_t kMaxSmallBodyBytes = 64ull << 20;

class HttpConnection {
 public:
  // Connects to host:port. kUnavailable if the connection cannot be made.
  static Result<std::unique_ptr<HttpConnection>> Connect(const std::string& host,
                                                         const std::string& port,
                                                         std::chrono::milliseconds timeout);
  virtual ~HttpConnection() = default;

  // Writes the request and reads the response header: also the header of an answer the peer
  // sent before it stopped reading the body (the connection is then not reused).
  // kUnavailable when the peer closed or reset the connection without an answer (a stale
  // keep-alive connection: the caller may retry on a new one), kIOError for other socket
  // errors or a timeout.
  virtual Result<HttpResponseHead> Send(const HttpRequest& request) = 0;
  // Reads the next body bytes into `out`; returns how many, 0 at the end of the body.
  // REQUIRES: Send() succeeded; out non-empty.
  virtual Result<uint64_t> ReadBody(MutableByteSpan out) = 0;
  // Reads the rest of the body into a string, at most `limit` bytes (kResourceExhausted
  // beyond it).
  Result<std::string> ReadBodyString(uint64_t limit = kMaxSmallBodyBytes);
  // True once the whole body of the last response was read and it allows keep-alive.
  virtual bool reusable() const = 0;
};

}  // namespace oc::client
