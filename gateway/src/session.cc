// The connection (session_impl.h): the session's lifetime, the TLS handshake, the keep-alive
// loop, reading the request head with its deadlines, routing and authenticating it, and the
// last-resort 500; StartSession (session.h) starts one per accepted socket.
#include "session.h"

#include <array>
#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "oc/common/log.h"
#include "oc/common/text.h"
#include "request_parser.h"
#include "s3/s3_headers.h"
#include "s3/s3_xml.h"
#include "session_impl.h"

namespace oc::gateway {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

const Logger kLog{"gateway"};

// Bytes read for the first byte of a request when the buffer has no room reserved yet (a
// connection that has not been served): small, so idle connections hold little memory.
constexpr size_t kFirstReadBytes = 4096;

// A request the HTTP parser rejected (as opposed to a closed, reset or idle connection).
bool IsMalformed(const beast::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_method).category() &&
         ec != http::error::end_of_stream && ec != http::error::partial_message;
}

}  // namespace

template <class Stream>
Session<Stream>::Session(SessionShared& shared, Stream stream, asio::io_context& ioc, uint64_t id)
    : shared_(shared),
      opts_(*shared.options),
      stream_(std::move(stream)),
      buffer_(opts_.max_header_bytes + (64 << 10)),
      id_(id) {
  // The piece and the buffer's reserve are allocated when the first request header has
  // arrived (EnsureBuffers): a connection that sends nothing costs a few KiB, not ~340.
  // The acceptor counted the connection open (StartSession's contract); closed below.
  shared_.registry->Add(id_, this, &ioc);
}

template <class Stream>
Session<Stream>::~Session() {
  shared_.registry->Remove(id_);
  shared_.metrics->ConnectionClosed();
}

template <class Stream>
bool Session<Stream>::CloseIfIdle() {
  if (!idle_) {
    return false;
  }
  beast::error_code ec;
  beast::get_lowest_layer(stream_).socket().close(ec);
  return true;
}

template <class Stream>
asio::awaitable<void> Session<Stream>::Run() {
  std::string failure;
  try {
    co_await Connection();
  } catch (const std::exception& e) {
    failure = e.what();
  } catch (...) {
    failure = "unknown exception";
  }
  if (!failure.empty()) {
    co_await AnswerFailure(failure);
  }
  Close();
}

template <class Stream>
asio::awaitable<void> Session<Stream>::Connection() {
  beast::error_code ec;
  Lowest().socket().set_option(tcp::no_delay(true), ec);
  // A new connection has header_timeout from accept for its handshake and first header.
  first_deadline_ = std::chrono::steady_clock::now() + opts_.header_timeout;
  idle_ = true;
  if constexpr (kIsTls<Stream>) {
    Lowest().expires_at(first_deadline_);
    co_await stream_.async_handshake(asio::ssl::stream_base::server,
                                     asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      co_return;
    }
  }
  for (;;) {
    const bool keep_alive = co_await Serve();
    if (!keep_alive) {
      break;
    }
  }
}

template <class Stream>
asio::awaitable<void> Session<Stream>::AnswerFailure(const std::string& what) {
  const std::string request_id = ex_ ? ex_->req.request_id : std::string("-");
  kLog.Error("req={} connection ended by an exception: {}", request_id, what);
  if (!ex_ || response_started_) {
    co_return;
  }
  try {
    ErrorDetails details;
    details.request_id = request_id;
    const std::string body = RenderErrorXml(S3Error::kInternalError, details);
    const std::string head = fmt::format(
        "HTTP/1.1 500 Internal Server Error\r\nServer: ObjectCache\r\nConnection: close\r\n"
        "x-amz-request-id: {}\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\r\n",
        request_id, body.size());
    const std::array<asio::const_buffer, 2> out = {asio::buffer(head), asio::buffer(body)};
    beast::error_code ec;
    Lowest().expires_after(opts_.read_timeout);
    co_await asio::async_write(stream_, out, asio::redirect_error(asio::use_awaitable, ec));
  } catch (...) {
    // Nothing more can be said on this connection; Run closes it.
  }
}

template <class Stream>
asio::awaitable<bool> Session<Stream>::Serve() {
  parser_.emplace(opts_.max_header_bytes, RawBodyLimit(opts_.max_object_bytes));
  ex_.reset();
  response_started_ = false;
  idle_ = true;
  if (shared_.stopping->load()) {
    co_return false;
  }
  beast::error_code ec;
  // Deadlines (docs/decisions/gateway-hostile-http-input.md): a new connection has
  // header_timeout from accept until its header is complete; a kept-alive one waits up to
  // idle_timeout for the first byte of its next request, then has header_timeout.
  const bool first = served_ == 0;
  auto header_deadline =
      first ? first_deadline_ : std::chrono::steady_clock::now() + opts_.header_timeout;
  if (buffer_.size() == 0) {
    if (first) {
      Lowest().expires_at(first_deadline_);
    } else {
      set_state(ConnectionState::kWaiting);
      Lowest().expires_after(opts_.idle_timeout);
    }
    const size_t room = std::min<size_t>(
        buffer_.capacity() > 0 ? buffer_.capacity() : kFirstReadBytes, buffer_.max_size());
    const size_t n = co_await stream_.async_read_some(
        buffer_.prepare(room), asio::redirect_error(asio::use_awaitable, ec));
    buffer_.commit(n);
    if (ec) {
      co_return false;  // closed, reset or idle: nothing to answer
    }
    if (!first) {
      header_deadline = std::chrono::steady_clock::now() + opts_.header_timeout;
    }
  }
  set_state(ConnectionState::kHeader);
  Lowest().expires_at(header_deadline);
  co_await http::async_read_header(stream_, buffer_, *parser_,
                                   asio::redirect_error(asio::use_awaitable, ec));
  idle_ = false;
  set_state(ConnectionState::kBusy);
  ++served_;
  ex_.emplace();
  Exchange& ex = *ex_;
  ex.start = std::chrono::steady_clock::now();
  ex.req.request_id = NextRequestId();
  if (ec) {
    if (ec == http::error::header_limit) {
      std::string message;
      if (!parser_->oversized_field().empty()) {
        message = fmt::format("The header field {} is longer than {} bytes.",
                              parser_->oversized_field(), kMaxHeaderFieldBytes);
      }
      co_await Finish(
          Response::Error(S3Error::kRequestHeaderSectionTooLarge, "", "", std::move(message)),
          true);
    } else if (ec == http::error::body_limit) {
      // A Content-Length past every limit we accept: refused before any body byte is read.
      co_await Finish(Response::Error(S3Error::kEntityTooLarge), true);
    } else if (IsMalformed(ec)) {
      co_await Finish(Response::Error(S3Error::kInvalidRequest, "", "", "Malformed HTTP request."),
                      true);
    }
    co_return false;  // closed, reset, idle or malformed
  }

  EnsureBuffers();
  Request& req = ex.req;
  std::optional<Response> bad = PrepareRequest(*parser_, opts_.virtual_host_domain, &req);
  if (std::optional<std::string_view> e = req.Header("expect")) {
    ex.expect_continue = EqualsIgnoreCase(*e, "100-continue");
  }
  const bool has_body = !parser_->is_done();
  if (bad) {
    co_return co_await Finish(std::move(*bad));
  }

  const OpRow& row = RowOf(req.route.op);
  if (row.access == AccessClass::kUnsigned) {
    co_return co_await RunHandler();  // the operations endpoints and a bad target: no body
  }

  // Authenticate before anything else about the request is believed (STYLE 3.6 step 3).
  sigv4::RequestView view;
  view.method = req.method;
  view.target = req.target;
  view.headers = req.headers;
  Result<auth::AuthResult> authed =
      shared_.authenticator->Authenticate(view, std::chrono::system_clock::now());
  if (!authed.has_value()) {
    co_return co_await Finish(Response::FromStatus(authed.error(), &req));
  }
  ex.auth = std::move(*authed);
  req.user = ex.auth.user;
  req.body_signed =
      ex.auth.payload == auth::PayloadMode::kSigned || auth::IsSignedStreaming(ex.auth.payload);
  req.checksum_trailer = ex.auth.trailer;

  switch (row.body) {
    case BodyPolicy::kUpload:
    case BodyPolicy::kDescriptorUpload:
      co_return co_await ServeUpload();
    case BodyPolicy::kXml:
    case BodyPolicy::kDescriptor:
      // A descriptor GET carries its descriptor in headers: only a POST's body is read.
      if (has_body && (row.body == BodyPolicy::kXml || req.method == "POST")) {
        std::optional<Response> bad = co_await ReadXmlBody();
        if (bad) {
          co_return co_await Finish(std::move(*bad));
        }
      }
      break;
    case BodyPolicy::kNoBody:
      break;
  }
  co_return co_await RunHandler();
}

namespace {

template <class Stream>
asio::awaitable<void> RunSession(std::unique_ptr<Session<Stream>> session) {
  co_await session->Run();
}

std::atomic<uint64_t> g_next_session_id{1};

}  // namespace

void StartSession(SessionShared& shared, asio::io_context& ioc, tcp::socket socket) {
  const uint64_t id = g_next_session_id.fetch_add(1);
  auto on_done = [](std::exception_ptr e) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        kLog.Error("connection ended by an exception: {}", ex.what());
      } catch (...) {
        kLog.Error("connection ended by an unknown exception");
      }
    }
  };
  if (shared.tls != nullptr) {
    auto session = std::make_unique<Session<TlsStream>>(
        shared, TlsStream(beast::tcp_stream(std::move(socket)), *shared.tls), ioc, id);
    asio::co_spawn(ioc, RunSession<TlsStream>(std::move(session)), on_done);
  } else {
    auto session =
        std::make_unique<Session<PlainStream>>(shared, PlainStream(std::move(socket)), ioc, id);
    asio::co_spawn(ioc, RunSession<PlainStream>(std::move(session)), on_done);
  }
}

}  // namespace oc::gateway
