#include "request_parser.h"

#include <utility>

#include <boost/beast/http/error.hpp>

#include "oc/sigv4/uri.h"

namespace oc::gateway {
namespace {

namespace http = boost::beast::http;

// Enough of an oversized field's name to say which it was.
constexpr size_t kReportedNameBytes = 64;

std::string_view Sv(boost::beast::string_view s) { return {s.data(), s.size()}; }

}  // namespace

RequestParser::RequestParser(uint64_t header_limit, uint64_t body_limit)
    : reader_(message_.base(), message_.body()) {
  this->header_limit(static_cast<std::uint32_t>(
      std::min<uint64_t>(header_limit, std::numeric_limits<std::uint32_t>::max())));
  this->body_limit(body_limit);
}

void RequestParser::on_request_impl(http::verb method, StringView method_string, StringView target,
                                    int version, ErrorCode& ec) {
  // The request line is bounded by header_limit; basic_fields stores the method and target
  // without a length limit of its own.
  message_.target(target);
  if (method != http::verb::unknown) {
    message_.method(method);
  } else {
    message_.method_string(method_string);
  }
  message_.version(version);
  ec = {};
}

void RequestParser::on_response_impl(int /*code*/, StringView /*reason*/, int /*version*/,
                                     ErrorCode& ec) {
  ec = http::error::bad_version;  // unreachable: a request parser never sees a status line
}

void RequestParser::on_field_impl(http::field name, StringView name_string, StringView value,
                                  ErrorCode& ec) {
  if (name_string.size() > kMaxHeaderFieldBytes || value.size() > kMaxHeaderFieldBytes) {
    oversized_field_.assign(name_string.data(),
                            std::min<size_t>(name_string.size(), kReportedNameBytes));
    ec = http::error::header_limit;
    return;
  }
  message_.insert(name, name_string, value);
}

void RequestParser::on_header_impl(ErrorCode& ec) { ec = {}; }

void RequestParser::on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                                      ErrorCode& ec) {
  reader_.init(content_length, ec);
}

std::size_t RequestParser::on_body_impl(StringView body, ErrorCode& ec) {
  return reader_.put(boost::asio::buffer(body.data(), body.size()), ec);
}

void RequestParser::on_chunk_header_impl(std::uint64_t /*size*/, StringView /*extensions*/,
                                         ErrorCode& ec) {
  ec = {};
}

std::size_t RequestParser::on_chunk_body_impl(std::uint64_t /*remain*/, StringView body,
                                              ErrorCode& ec) {
  return reader_.put(boost::asio::buffer(body.data(), body.size()), ec);
}

void RequestParser::on_finish_impl(ErrorCode& ec) { reader_.finish(ec); }

std::optional<Response> PrepareRequest(const RequestParser& parser,
                                       std::string_view virtual_host_domain, Request* req) {
  const RequestParser::Message& msg = parser.get();
  req->method = Sv(msg.method_string());
  req->target = Sv(msg.target());
  for (const auto& field : msg) {
    req->headers.emplace_back(Sv(field.name_string()), Sv(field.value()));
  }
  if (parser.content_length()) {
    req->content_length = *parser.content_length();
  }
  Result<sigv4::ParsedTarget> target = sigv4::ParseTarget(req->target);
  if (!target.has_value()) {
    return Response::Error(S3Error::kInvalidRequest, "", "", "The request target is malformed.");
  }
  req->parsed = std::move(*target);
  RouteInput in;
  in.method = req->method;
  in.host = req->Header("host").value_or("");
  in.path = req->parsed.path;
  in.query = &req->parsed.query;
  in.has_copy_source = req->Header("x-amz-copy-source").has_value();
  in.has_credentials =
      req->Header("authorization").has_value() || req->Query("X-Amz-Credential").has_value();
  req->route = RouteRequest(in, virtual_host_domain);
  // S3 answers 400 for a path that is not UTF-8 whatever the operation (InvalidURI); we answer
  // every operation that names a key alike, before anything is looked up or stored.
  if (!IsValidObjectKey(req->route.key)) {
    return InvalidKeyEncoding("key", req->route.key);
  }
  return std::nullopt;
}

}  // namespace oc::gateway
