#include "session.h"

#include <array>
#include <chrono>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "auth/aws_chunked.h"
#include "deferred_response.h"
#include "oc/common/log.h"
#include "oc/common/text.h"
#include "request_parser.h"
#include "s3/s3_headers.h"
#include "s3/s3_xml.h"

namespace oc::gateway {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

const Logger kLog{"gateway"};
const Logger kAccessLog{"access"};

// Bytes of aws-chunked framing allowed on top of the decoded length: each chunk of at
// least 8 KiB (clients' minimum) carries ~90 bytes of header, so 1/64 plus one header.
uint64_t RawBodyLimit(uint64_t decoded_limit) { return decoded_limit + decoded_limit / 64 + 4096; }

// Bytes read for the first byte of a request when the buffer has no room reserved yet (a
// connection that has not been served): small, so idle connections hold little memory.
constexpr size_t kFirstReadBytes = 4096;

// Runs `f` on the Store pool and resumes the calling coroutine on its own io_context, so
// the I/O thread never blocks on the Store (STYLE 3.6 step 5). An exception from `f` is
// rethrown in the coroutine (the connection's last-resort catch), never on a pool thread,
// where it would end the process.
template <typename F>
asio::awaitable<void> OnPool(asio::thread_pool& pool, F& f) {
  co_await asio::async_initiate<decltype(asio::use_awaitable), void(std::exception_ptr)>(
      [&pool, &f](auto handler) {
        asio::post(pool, [&f, handler = std::move(handler)]() mutable {
          std::exception_ptr failure;
          try {
            f();
          } catch (...) {
            failure = std::current_exception();
          }
          auto ex = asio::get_associated_executor(handler);
          asio::post(ex, [handler = std::move(handler), failure]() mutable { handler(failure); });
        });
      },
      asio::use_awaitable);
}

// A request the HTTP parser rejected (as opposed to a closed, reset or idle connection).
bool IsMalformed(const beast::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_method).category() &&
         ec != http::error::end_of_stream && ec != http::error::partial_message;
}

template <class Stream>
constexpr bool kIsTls = !std::is_same_v<Stream, beast::tcp_stream>;

template <class Stream>
class Session : public SessionBase {
 public:
  Session(SessionShared& shared, Stream stream, asio::io_context& ioc, uint64_t id)
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
  ~Session() override {
    shared_.registry->Remove(id_);
    shared_.metrics->ConnectionClosed();
  }

  bool CloseIfIdle() override {
    if (!idle_) {
      return false;
    }
    beast::error_code ec;
    beast::get_lowest_layer(stream_).socket().close(ec);
    return true;
  }

  // The connection's coroutine. Its catch is the last resort (STYLE 3.4): nothing a client
  // sends should throw, but if anything does, the connection is logged with its request id,
  // answered 500 when no response has begun, and closed; the server keeps serving.
  asio::awaitable<void> Run() {
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

 private:
  asio::awaitable<void> Connection() {
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

  // After an exception escaped a request: the log line, and a 500 if nothing was sent yet.
  asio::awaitable<void> AnswerFailure(const std::string& what) {
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

  // The piece and the buffer's full reserve, once the connection has a request to serve.
  void EnsureBuffers() {
    if (piece_.empty()) {
      piece_.resize(opts_.stream_piece_bytes);
      // Beast reads at most capacity - size (never less than 512) bytes per call and the
      // buffer grows only as far as the headers need, so without this a 64 KiB body arrives
      // in ~130 reads of 512 bytes, each with its own timer update (read_size.hpp).
      buffer_.reserve(buffer_.max_size());
    }
  }

  // State of one request; reset at its start.
  struct Exchange {
    Request req;
    auth::AuthResult auth;
    std::chrono::steady_clock::time_point start;
    uint64_t bytes_in = 0;
    uint64_t bytes_out = 0;
    bool expect_continue = false;
    bool continue_sent = false;
    bool must_close = false;  // the body state forbids keep-alive
  };

  auto& Lowest() { return beast::get_lowest_layer(stream_); }

  void Close() {
    beast::error_code ec;
    Lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
    Lowest().socket().close(ec);
  }

  // Reads and serves one request. Returns whether to keep the connection.
  asio::awaitable<bool> Serve() {
    parser_.emplace(opts_.max_header_bytes, RawBodyLimit(opts_.max_object_bytes));
    ex_.reset();
    response_started_ = false;
    idle_ = true;
    if (shared_.stopping->load()) {
      co_return false;
    }
    beast::error_code ec;
    // Deadlines (docs/decisions.md, "Gateway: hostile HTTP input"): a new connection has
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
        co_await Finish(
            Response::Error(S3Error::kInvalidRequest, "", "", "Malformed HTTP request."), true);
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

    switch (req.route.op) {
      case S3Op::kHealthz: {
        Response res;
        res.content_type = "text/plain";
        res.body = "ok\n";
        co_return co_await Finish(std::move(res));
      }
      case S3Op::kReadyz:
      case S3Op::kStats:
      case S3Op::kMetrics:
        co_return co_await RunHandler();
      case S3Op::kBadRequest:
        co_return co_await Finish(Response::Error(S3Error::kInvalidRequest));
      default:
        break;
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
    req.body_signed = ex.auth.payload == auth::PayloadMode::kSigned ||
                      ex.auth.payload == auth::PayloadMode::kStreamingSigned;

    if (req.route.op == S3Op::kMethodNotAllowed) {
      co_return co_await Finish(Response::Error(S3Error::kMethodNotAllowed));
    }
    if (req.route.op == S3Op::kNotImplemented || req.route.op == S3Op::kUploadPartCopy) {
      co_return co_await Finish(Response::Error(S3Error::kNotImplemented));
    }
    switch (req.route.body) {
      case BodyPolicy::kStream:
        co_return co_await ServeUpload();
      case BodyPolicy::kXml:
        if (has_body) {
          std::optional<Response> bad = co_await ReadXmlBody();
          if (bad) {
            co_return co_await Finish(std::move(*bad));
          }
        }
        co_return co_await RunHandler();
      case BodyPolicy::kNone:
        break;
    }
    co_return co_await RunHandler();
  }

  // Runs Dispatch on the pool, reads the first piece of a streamed body there too, and
  // writes the response.
  asio::awaitable<bool> RunHandler() {
    Exchange& ex = *ex_;
    Response res;
    uint64_t first = 0;
    Status read_status;
    auto job = [&] {
      res = Dispatch(*shared_.env, ex.req);
      if (res.reader && !res.error) {
        Result<uint64_t> n =
            FillPiece(*res.reader, std::min<uint64_t>(res.stream_length, piece_.size()));
        if (n.has_value()) {
          first = *n;
        } else {
          read_status = n.error();
        }
      }
    };
    co_await OnPool(*shared_.pool, job);
    if (res.deferred) {  // a descriptor task answers when its transfer ends: wait off the pool
      const std::shared_ptr<DeferredResponse> pending = std::move(res.deferred);
      co_await WhenReady(pending);
      res = pending->Take();
    }
    if (!read_status.ok()) {
      kLog.Error("req={} read failed before the response: {}", ex.req.request_id,
                 read_status.ToString());
      co_return co_await Finish(Response::FromStatus(read_status, &ex.req));
    }
    co_return co_await Finish(std::move(res), false, first);
  }

  // Reads up to `want` bytes of the range into piece_ (several Read calls if needed).
  Result<uint64_t> FillPiece(storage::ObjectReader& reader, uint64_t want) {
    uint64_t got = 0;
    while (got < want) {
      OC_ASSIGN_OR_RETURN(
          uint64_t n, reader.Read(MutableByteSpan(reinterpret_cast<std::byte*>(piece_.data()) + got,
                                                  want - got)));
      if (n == 0) {
        break;
      }
      got += n;
    }
    return got;
  }

  // 100 Continue, once, when the client asked for it (after auth and size checks).
  asio::awaitable<bool> SendContinue() {
    Exchange& ex = *ex_;
    if (!ex.expect_continue || ex.continue_sent) {
      co_return true;
    }
    ex.continue_sent = true;
    http::response<http::empty_body> cont{http::status::continue_, 11};
    beast::error_code ec;
    Lowest().expires_after(opts_.read_timeout);
    co_await http::async_write(stream_, cont, asio::redirect_error(asio::use_awaitable, ec));
    co_return !ec;
  }

  // Reads the next piece of the request body into piece_. Returns the byte count (0 at the
  // end); an error code for timeouts, resets and limit breaches.
  asio::awaitable<std::pair<size_t, beast::error_code>> ReadPiece() {
    auto& body = parser_->get().body();
    body.data = piece_.data();
    body.size = piece_.size();
    beast::error_code ec;
    if (!parser_->is_done()) {
      Lowest().expires_after(opts_.read_timeout);
      co_await http::async_read(stream_, buffer_, *parser_,
                                asio::redirect_error(asio::use_awaitable, ec));
      if (ec == http::error::need_buffer) {
        ec = {};
      }
    }
    const size_t n = piece_.size() - body.size;
    ex_->bytes_in += n;
    co_return std::make_pair(n, ec);
  }

  Response BodyReadError(const beast::error_code& ec) {
    ex_->must_close = true;
    if (ec == http::error::body_limit) {
      return Response::Error(S3Error::kEntityTooLarge);
    }
    if (ec == beast::error::timeout) {
      return Response::Error(S3Error::kRequestTimeout);
    }
    return Response::Error(S3Error::kIncompleteBody);
  }

  // Reads a small XML body whole, bounded by max_xml_body_bytes, checking the payload hash.
  asio::awaitable<std::optional<Response>> ReadXmlBody() {
    Exchange& ex = *ex_;
    Request& req = ex.req;
    if (req.content_length && *req.content_length > opts_.max_xml_body_bytes) {
      co_return Response::Error(S3Error::kMaxMessageLengthExceeded);
    }
    if (!co_await SendContinue()) {
      ex.must_close = true;
      co_return Response::Error(S3Error::kRequestTimeout);
    }
    std::string raw;
    for (;;) {
      auto [n, ec] = co_await ReadPiece();
      if (ec) {
        co_return BodyReadError(ec);
      }
      if (raw.size() + n > RawBodyLimit(opts_.max_xml_body_bytes)) {
        ex.must_close = true;
        co_return Response::Error(S3Error::kMaxMessageLengthExceeded);
      }
      raw.append(piece_.data(), n);
      if (parser_->is_done()) {
        break;
      }
    }
    if (auth::IsAwsChunked(ex.auth.payload)) {
      auth::AwsChunkedDecoder decoder(ex.auth);
      ByteSpan input = AsBytes(raw);
      while (!input.empty()) {
        Result<auth::AwsChunkedDecoder::Step> step = decoder.Next(input);
        if (!step.has_value()) {
          co_return Response::FromStatus(step.error(), &req);
        }
        req.body.append(AsText(step->payload));
        input = input.subspan(step->consumed);
      }
      if (Status s = decoder.Finish(); !s.ok()) {
        co_return Response::FromStatus(s, &req);
      }
    } else {
      req.body = std::move(raw);
      if (Status s = auth::CheckPayloadSha256(ex.auth, sigv4::Sha256Of(req.body)); !s.ok()) {
        co_return Response::FromStatus(s, &req);
      }
    }
    if (req.body.size() > opts_.max_xml_body_bytes) {
      co_return Response::Error(S3Error::kMaxMessageLengthExceeded);
    }
    co_return std::nullopt;
  }

  // PutObject / UploadPart: open the writer (access, headers), 100 Continue, stream the body
  // through the payload checks into the writer, commit only when every check passed.
  asio::awaitable<bool> ServeUpload() {
    Exchange& ex = *ex_;
    Request& req = ex.req;
    const bool streaming = auth::IsAwsChunked(ex.auth.payload);
    const bool chunked_transfer = !req.content_length.has_value();
    if (chunked_transfer && !parser_->chunked()) {
      co_return co_await Finish(Response::Error(S3Error::kMissingContentLength));
    }
    const uint64_t body_bytes =
        streaming ? ex.auth.decoded_content_length : req.content_length.value_or(0);
    if (body_bytes > opts_.max_object_bytes) {
      co_return co_await Finish(Response::Error(S3Error::kEntityTooLarge));
    }
    if (!streaming) {
      parser_->body_limit(opts_.max_object_bytes);
    }

    std::optional<auth::AwsChunkedDecoder> decoder;
    if (streaming) {
      decoder.emplace(ex.auth);
    }
    const bool hash = ex.auth.payload == auth::PayloadMode::kSigned;
    sigv4::Sha256 sha;
    UploadStart start;
    auto open = [&] { start = OpenUpload(*shared_.env, req, body_bytes); };
    co_await OnPool(*shared_.pool, open);
    if (!start.writer) {
      co_return co_await Finish(std::move(start.error));
    }
    if (!co_await SendContinue()) {
      co_return false;
    }

    Status body_status;
    Response res;
    bool done = false;
    while (!done) {
      auto [n, ec] = co_await ReadPiece();
      if (ec) {
        start.writer.reset();  // discards everything appended: nothing half-written is visible
        co_return co_await Finish(BodyReadError(ec));
      }
      const bool last = parser_->is_done();
      // Decode, hash and append on the pool; on the last piece also check and commit.
      auto step = [&] {
        ByteSpan input(reinterpret_cast<const std::byte*>(piece_.data()), n);
        if (decoder) {
          while (!input.empty() && body_status.ok()) {
            Result<auth::AwsChunkedDecoder::Step> s = decoder->Next(input);
            if (!s.has_value()) {
              body_status = s.error();
              break;
            }
            if (!s->payload.empty()) {
              body_status = start.writer->Append(s->payload);
            }
            input = input.subspan(s->consumed);
          }
        } else {
          if (hash) {
            sha.Update(input);
          }
          if (!input.empty()) {
            body_status = start.writer->Append(input);
          }
        }
        if (!last || !body_status.ok()) {
          return;
        }
        body_status = decoder ? decoder->Finish() : auth::CheckPayloadSha256(ex.auth, sha.Finish());
        if (!body_status.ok()) {
          return;
        }
        res = FinishUpload(*shared_.env, req, start.writer->Commit());
      };
      co_await OnPool(*shared_.pool, step);
      if (!body_status.ok()) {
        start.writer.reset();
        co_return co_await Finish(Response::FromStatus(body_status, &req));
      }
      done = last;
    }
    start.writer.reset();
    co_return co_await Finish(std::move(res));
  }

  // After an early error: read and discard what is left of the body, up to max_drain_bytes.
  // True when the body was consumed and the connection can be kept.
  asio::awaitable<bool> DrainBody() {
    Exchange& ex = *ex_;
    if (parser_->is_done()) {
      co_return true;
    }
    if (ex.must_close || (ex.expect_continue && !ex.continue_sent)) {
      co_return false;  // the client waits for 100 Continue that will not come
    }
    uint64_t drained = 0;
    while (!parser_->is_done()) {
      auto [n, ec] = co_await ReadPiece();
      drained += n;
      if (ec || drained > opts_.max_drain_bytes) {
        co_return false;
      }
    }
    co_return true;
  }

  // Writes `res` (its XML error, small body, or streamed reader), logs and counts the request.
  // `first` bytes of a streamed body are already in piece_. Returns keep-alive.
  asio::awaitable<bool> Finish(Response res, bool force_close = false, uint64_t first = 0) {
    EnsureBuffers();
    Exchange& ex = *ex_;
    Request& req = ex.req;
    const bool head = req.method == "HEAD";
    bool keep_alive = !force_close && parser_->is_header_done() && parser_->keep_alive() &&
                      !shared_.stopping->load();
    if (res.error) {
      res.reader.reset();
      res.stream_length = 0;
      res.headers.emplace_back("x-amz-request-id", req.request_id);
      if (res.status != 304 && !head) {
        res.content_type = "application/xml";
        const std::string resource = req.Resource();
        ErrorDetails details;
        details.resource = resource;
        details.request_id = req.request_id;
        details.message = res.error_message;
        details.argument_name = res.error_field;
        details.argument_value = res.error_value;
        res.body = RenderErrorXml(*res.error, details);
      }
      if (ErrorRow(*res.error).http_status >= 500) {
        kLog.Warn("req={} op={} error={}", req.request_id, OpName(req.route.op),
                  ErrorRow(*res.error).code);
      }
    } else {
      res.headers.emplace_back("x-amz-request-id", req.request_id);
    }
    if (keep_alive && parser_->is_header_done() && !parser_->is_done()) {
      // Body bytes unread (an early error, or a body nobody asked for). piece_ may hold the
      // first piece of a streamed response, so such a connection is closed instead.
      const bool small =
          !res.reader && req.content_length && *req.content_length <= opts_.max_drain_bytes;
      keep_alive = small && co_await DrainBody();
    }

    beast::error_code ec;
    http::response<http::buffer_body> msg{static_cast<http::status>(res.status), 11};
    msg.set(http::field::date, CurrentHttpDate());
    msg.set(http::field::server, "ObjectCache");
    for (const auto& [name, value] : res.headers) {
      msg.set(name, value);
    }
    if (!res.content_type.empty()) {
      msg.set(http::field::content_type, res.content_type);
    }
    const bool no_body_status = res.status == 204 || res.status == 304 || res.status < 200;
    const uint64_t total =
        res.reader ? res.stream_length : (head && !res.error ? res.stream_length : res.body.size());
    if (!no_body_status) {
      msg.content_length(total);
    }
    msg.keep_alive(keep_alive);
    Lowest().expires_after(opts_.read_timeout);
    response_started_ = true;
    if (head || no_body_status) {
      http::response<http::empty_body> h{std::move(msg.base())};
      if (!no_body_status) {
        h.content_length(total);
      }
      http::response_serializer<http::empty_body> sr{h};
      co_await http::async_write(stream_, sr, asio::redirect_error(asio::use_awaitable, ec));
    } else if (res.reader) {
      http::response_serializer<http::buffer_body> sr{msg};
      uint64_t sent = 0;
      uint64_t in_piece = first;
      for (;;) {
        msg.body().data = piece_.data();
        msg.body().size = in_piece;
        msg.body().more = sent + in_piece < total;
        Lowest().expires_after(opts_.read_timeout);
        co_await http::async_write(stream_, sr, asio::redirect_error(asio::use_awaitable, ec));
        if (ec == http::error::need_buffer) {
          ec = {};
        }
        if (ec) {
          break;
        }
        sent += in_piece;
        ex.bytes_out = sent;
        if (sent >= total || sr.is_done()) {
          break;
        }
        Result<uint64_t> n = Status::Internal("unset");
        auto job = [&] {
          n = FillPiece(*res.reader, std::min<uint64_t>(total - sent, piece_.size()));
        };
        co_await OnPool(*shared_.pool, job);
        if (!n.has_value() || *n == 0) {
          // Headers are out: the only honest signal left is closing short of Content-Length.
          kLog.Error("req={} object read failed mid-response: {}", req.request_id,
                     n.has_value() ? std::string("short read") : n.error().ToString());
          ec = beast::error::timeout;
          keep_alive = false;
          break;
        }
        in_piece = *n;
      }
    } else {
      msg.body().data = res.body.data();
      msg.body().size = res.body.size();
      msg.body().more = false;
      http::response_serializer<http::buffer_body> sr{msg};
      co_await http::async_write(stream_, sr, asio::redirect_error(asio::use_awaitable, ec));
      if (!ec) {
        ex.bytes_out = res.body.size();
      }
    }
    res.reader.reset();

    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                        std::chrono::steady_clock::now() - ex.start)
                        .count();
    shared_.metrics->Record(req.route.op, res.status, ex.bytes_in, ex.bytes_out,
                            static_cast<uint64_t>(us), res.error);
    if (opts_.access_log) {
      kAccessLog.Info("req={} op={} status={} bucket={} bytes_in={} bytes_out={} us={}{}",
                      req.request_id, OpName(req.route.op), res.status, LogField(req.route.bucket),
                      ex.bytes_in, ex.bytes_out, us, ec ? " aborted=1" : "");
    }
    if (ec) {
      co_return false;
    }
    if (!keep_alive) {
      co_await LingeringClose();
      co_return false;
    }
    co_return true;
  }

  // Closing with unread request bytes makes the kernel send RST, which can destroy the
  // response before the client reads it. Stop sending, read (and drop) a bounded amount for a
  // short while, then close (Apache's lingering close).
  asio::awaitable<void> LingeringClose() {
    if constexpr (!kIsTls<Stream>) {
      if (parser_ && parser_->is_header_done() && !parser_->is_done()) {
        beast::error_code ec;
        Lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
        uint64_t drained = 0;
        Lowest().expires_after(std::chrono::seconds(2));
        while (!ec && drained < opts_.max_drain_bytes) {
          size_t n = co_await Lowest().async_read_some(
              asio::buffer(piece_), asio::redirect_error(asio::use_awaitable, ec));
          drained += n;
        }
      }
    }
    co_return;
  }

  SessionShared& shared_;
  const GatewayOptions& opts_;
  Stream stream_;
  beast::flat_buffer buffer_;
  std::vector<char> piece_;  // one bounded piece of body, either direction
  std::optional<RequestParser> parser_;
  std::optional<Exchange> ex_;
  uint64_t id_;
  std::chrono::steady_clock::time_point first_deadline_;  // header_timeout after accept
  uint64_t served_ = 0;                                   // request headers read on this connection
  bool idle_ = false;              // waiting for a request header (CloseIfIdle may close)
  bool response_started_ = false;  // this request's response headers were (being) written
};

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
    using TlsStream = beast::ssl_stream<beast::tcp_stream>;
    auto session = std::make_unique<Session<TlsStream>>(
        shared, TlsStream(beast::tcp_stream(std::move(socket)), *shared.tls), ioc, id);
    asio::co_spawn(ioc, RunSession<TlsStream>(std::move(session)), on_done);
  } else {
    auto session = std::make_unique<Session<beast::tcp_stream>>(
        shared, beast::tcp_stream(std::move(socket)), ioc, id);
    asio::co_spawn(ioc, RunSession<beast::tcp_stream>(std::move(session)), on_done);
  }
}

}  // namespace oc::gateway
