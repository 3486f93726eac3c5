#pragma once
// The request head: RequestParser, the Beast parser every session reads a request with, and
// PrepareRequest, which turns its parsed header into a routed Request or the error to answer.
// tests/fuzz/http_request_fuzz.cc drives both with raw bytes and the session's own limits, so
// what the fuzzer covers is what the server runs. Only gateway/src sees Beast (STYLE 3.1).
//
// Why a parser of our own: Beast's http::parser inserts every field into basic_fields, which
// keeps a field's name and value lengths in 16 bits and throws std::length_error past them
// (boost/beast/http/impl/fields.hpp, new_element). The throw happens inside the read
// operation's completion, outside any coroutine, so it escaped io_context::run() and ended the
// process whenever max_header_bytes allowed a field over 64 KiB. RequestParser checks the
// sizes first and fails the read with http::error::header_limit instead; nothing a client
// sends reaches a throwing Beast call (docs/decisions/gateway-hostile-http-input.md).
// Thread safety: a RequestParser belongs to one session; PrepareRequest is pure.

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/message.hpp>

#include "request.h"

namespace oc::gateway {

// Longest header field name or value basic_fields can hold (its 16-bit length minus the
// ": " / "\r\n" it counts); a longer field is refused as header_limit.
inline constexpr uint64_t kMaxHeaderFieldBytes = std::numeric_limits<uint16_t>::max() - 2;

class RequestParser final : public boost::beast::http::basic_parser<true> {
 public:
  using Message = boost::beast::http::request<boost::beast::http::buffer_body>;

  // A parser for one request: header block at most `header_limit` bytes (Beast counts the
  // request line and every field), body at most `body_limit` bytes.
  RequestParser(uint64_t header_limit, uint64_t body_limit);

  Message& get() { return message_; }
  const Message& get() const { return message_; }
  // After header_limit: the name of the field refused as longer than kMaxHeaderFieldBytes (its
  // first 64 bytes), or empty when the block as a whole was too large.
  const std::string& oversized_field() const { return oversized_field_; }

 private:
  using ErrorCode = boost::beast::error_code;
  using StringView = boost::beast::string_view;

  void on_request_impl(boost::beast::http::verb method, StringView method_string, StringView target,
                       int version, ErrorCode& ec) override;
  void on_response_impl(int code, StringView reason, int version, ErrorCode& ec) override;
  void on_field_impl(boost::beast::http::field name, StringView name_string, StringView value,
                     ErrorCode& ec) override;
  void on_header_impl(ErrorCode& ec) override;
  void on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                         ErrorCode& ec) override;
  std::size_t on_body_impl(StringView body, ErrorCode& ec) override;
  void on_chunk_header_impl(std::uint64_t size, StringView extensions, ErrorCode& ec) override;
  std::size_t on_chunk_body_impl(std::uint64_t remain, StringView body, ErrorCode& ec) override;
  void on_finish_impl(ErrorCode& ec) override;

  Message message_;
  boost::beast::http::buffer_body::reader reader_;
  std::string oversized_field_;
};

// Fills `req` from the parsed header of `parser` (method, target, every header as a view into
// the parser's message, Content-Length), parses the target and routes it. Returns the error to
// answer when the target is malformed (InvalidRequest) or the object key it names fails
// IsValidObjectKey (InvalidArgument, field "key", the key percent-encoded as its value: S3 keys
// are UTF-8, and such a key could neither be listed in XML nor match any stored one). nullopt
// when `req` is ready for authentication.
// REQUIRES: parser.is_header_done(); `req` outlives no part of `parser`.
std::optional<Response> PrepareRequest(const RequestParser& parser,
                                       std::string_view virtual_host_domain, Request* req);

}  // namespace oc::gateway
