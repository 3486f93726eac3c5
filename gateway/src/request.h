#pragma once
// The request and response as the handlers see them: no Beast types, so handler files compile
// without Beast, and everything a handler needs from the wire is a view valid for the request.
// A handler runs on the Store pool (never on an I/O thread), gets a Request, and returns a
// Response: a status, headers, and either a small body (XML) or a Store reader streamed by
// the session in bounded pieces. Errors are Responses too (Response::Error / FromStatus).
// Thread safety: one request is handled by one thread at a time.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "auth/credentials.h"
#include "oc/common/headers.h"
#include "oc/sigv4/uri.h"
#include "oc/storage/store.h"
#include "router.h"
#include "s3/s3_errors.h"

namespace oc::gateway {

struct Request {
  std::string_view method;
  std::string_view target;  // raw request-target
  sigv4::ParsedTarget parsed;
  Route route;
  // Every header as received (views into the parser's storage): the one header view, handed
  // as is to the verifier (sigv4::RequestView) and the descriptor decoder.
  std::vector<HeaderField> headers;
  std::string request_id;
  const auth::User* user = nullptr;  // nullptr: anonymous
  // The body is covered by the signature: a hex x-amz-content-sha256 the gateway checks, or
  // signed aws-chunked. False for UNSIGNED-PAYLOAD, presigned URLs and anonymous requests.
  bool body_signed = false;
  // The x-amz-checksum-* header named by x-amz-trailer of an unsigned-trailer aws-chunked
  // upload, lowercase; "" otherwise (the decoder verifies it: AwsChunkedDecoder).
  std::string checksum_trailer;
  std::optional<uint64_t> content_length;
  std::string body;  // BodyPolicy::kXml, and kDescriptor on a POST, only

  // First header called `name` (case-insensitive), or nullopt.
  std::optional<std::string_view> Header(std::string_view name) const;
  // First query parameter called `name` (exact), or nullopt.
  std::optional<std::string_view> Query(std::string_view name) const;
  // "/bucket/key" for error bodies.
  std::string Resource() const;
};

class DeferredResponse;  // deferred_response.h

struct Response {
  unsigned status = 200;
  HeaderList headers;
  std::string content_type;  // empty: none (or the stream's)
  std::string body;
  // A streamed body: `stream_length` bytes from the reader's current position.
  std::unique_ptr<storage::ObjectReader> reader;
  uint64_t stream_length = 0;
  // Set with a `reader` whose producer may give up on a client that stopped reading (a
  // descriptor GET's body, http_layer_sink.h StallHook): the session calls it before it
  // streams, with a function that closes this connection from any thread.
  std::function<void(std::function<void()>)> on_stalled_reader;
  // Set for an error response; the session renders the XML (nothing for HEAD).
  std::optional<S3Error> error;
  std::string error_field;
  std::string error_value;
  std::string error_message;
  // A server fault's own status (never sent to the client): the log line names it.
  std::string error_cause;
  // Set instead of everything above when a descriptor task answers later (a descriptor GET
  // into a data-plane target): the session waits for it without holding a thread, then sends
  // the response it completes with (deferred_response.h).
  std::shared_ptr<DeferredResponse> deferred;

  static Response Error(S3Error error, std::string field = {}, std::string value = {},
                        std::string message = {});
  // ToS3Error(status), with its field (and the request's value of that field, if a header or
  // query parameter) as ArgumentName/ArgumentValue; 4xx messages from the status.
  static Response FromStatus(const Status& status, const Request* request = nullptr);
  static Response Xml(std::string body, unsigned status = 200);
  void AddHeader(std::string name, std::string value) {
    headers.emplace_back(std::move(name), std::move(value));
  }
};

// True when `key` may name an object: well-formed UTF-8 (S3 keys are UTF-8) without NUL (the
// store's key encoding reserves it). The empty key (a bucket-level request) passes.
bool IsValidObjectKey(std::string_view key);

// The answer to an object key that fails IsValidObjectKey (the request path, CopyObject's
// source): 400 InvalidArgument naming `field`, with the key percent-encoded as its value, since
// its raw bytes cannot be written in XML.
Response InvalidKeyEncoding(std::string_view field, std::string_view key);

}  // namespace oc::gateway
