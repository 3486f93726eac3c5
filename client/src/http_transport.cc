#include "http_transport.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>

#include "fmt/format.h"
#include "oc/common/text.h"

namespace oc::client {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

// Largest response header block accepted from the gateway.
constexpr uint32_t kMaxResponseHeaderBytes = 64 << 10;
// Capacity of the socket read buffer. Beast sizes each recv by the buffer's free capacity
// (at most 64 KiB), and body bytes leave the buffer as soon as they arrive, so a buffer left
// to grow on demand stays at its first few hundred bytes: one recv per ~500 body bytes
// (measured: 7.3 million recv calls for 1.9 GB).
constexpr size_t kReadBufferBytes = 256 << 10;

Status FromAsio(const beast::error_code& ec, std::string_view what) {
  if (ec == asio::error::eof || ec == asio::error::connection_reset ||
      ec == asio::error::broken_pipe || ec == http::error::end_of_stream ||
      ec == asio::error::connection_refused) {
    return Status::Unavailable(fmt::format("{}: {}", what, ec.message()));
  }
  if (ec == asio::error::would_block || ec == asio::error::try_again ||
      ec == asio::error::timed_out) {
    // Ends the request (kIOError, no ErrorInfo): unlike a wait's own bound (errors.h), there is
    // nothing left to wait for.
    return Status::IOError(fmt::format("{}: the gateway was silent past the client timeout", what));
  }
  return Status::IOError(fmt::format("{}: {}", what, ec.message()));
}

// The socket as Beast's synchronous stream, each read and write bounded by `timeout` of
// silence. SO_RCVTIMEO alone does not bound them: Asio's blocking read_some meets the timeout's
// EAGAIN, then waits in poll() with no limit and reads again, so a gateway that accepts and
// never answers held a call forever (measured: get_layers and probe not done after 20 s with a
// 1 s timeout). Here poll() with the timeout comes first; silence past it is timed_out.
class DeadlineStream {
 public:
  DeadlineStream(tcp::socket& socket, std::chrono::milliseconds timeout)
      : socket_(socket),
        timeout_ms_(static_cast<int>(
            std::clamp<int64_t>(timeout.count(), 1, std::numeric_limits<int>::max()))) {}

  template <typename Buffers>
  size_t read_some(const Buffers& buffers, beast::error_code& ec) {
    if (!Ready(POLLIN, ec)) {
      return 0;
    }
    return socket_.read_some(buffers, ec);
  }
  template <typename Buffers>
  size_t read_some(const Buffers& buffers) {
    beast::error_code ec;
    const size_t n = read_some(buffers, ec);
    if (ec) {
      throw beast::system_error(ec);
    }
    return n;
  }
  template <typename Buffers>
  size_t write_some(const Buffers& buffers, beast::error_code& ec) {
    if (!Ready(POLLOUT, ec)) {
      return 0;
    }
    return socket_.write_some(buffers, ec);
  }
  template <typename Buffers>
  size_t write_some(const Buffers& buffers) {
    beast::error_code ec;
    const size_t n = write_some(buffers, ec);
    if (ec) {
      throw beast::system_error(ec);
    }
    return n;
  }

 private:
  // Waits until the socket is readable (or writable); false with ec = timed_out after the
  // timeout, or the poll error. Data already in the kernel makes it ready at once.
  bool Ready(short events, beast::error_code& ec) {
    pollfd p{socket_.native_handle(), events, 0};
    for (;;) {
      const int r = ::poll(&p, 1, timeout_ms_);
      if (r > 0) {
        return true;  // readable, writable, or an error or hang-up the next call reports
      }
      if (r == 0) {
        ec = asio::error::timed_out;
        return false;
      }
      if (errno != EINTR) {
        ec = beast::error_code(errno, boost::system::system_category());
        return false;
      }
    }
  }

  tcp::socket& socket_;
  int timeout_ms_;
};

// True when a write failed because the peer stopped reading and closed (EPIPE, or the reset
// its close sent because body bytes were left unread), as opposed to a timeout.
bool PeerStoppedReading(const beast::error_code& ec) {
  return ec == asio::error::broken_pipe || ec == asio::error::connection_reset;
}

class BeastConnection final : public HttpConnection {
 public:
  explicit BeastConnection(asio::io_context& io) : socket_(io) {
    buffer_.reserve(kReadBufferBytes);
  }

  Status Open(const std::string& host, const std::string& port, std::chrono::milliseconds timeout) {
    beast::error_code ec;
    tcp::resolver resolver(socket_.get_executor());
    const auto endpoints = resolver.resolve(host, port, ec);
    if (ec) {
      return Status::Unavailable(fmt::format("resolve {}:{}: {}", host, port, ec.message()));
    }
    asio::connect(socket_, endpoints, ec);
    if (ec) {
      return Status::Unavailable(fmt::format("connect {}:{}: {}", host, port, ec.message()));
    }
    socket_.set_option(tcp::no_delay(true), ec);
    timeout_ = timeout;
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
    const int fd = socket_.native_handle();
    if (::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
        ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0) {
      return Status::IOError("setsockopt timeouts failed");
    }
    return Status::Ok();
  }

  Result<HttpResponseHead> Send(const HttpRequest& request) override {
    reusable_ = false;
    direct_left_.reset();
    beast::error_code ec;
    http::request<http::buffer_body> req;
    req.method_string(boost::beast::string_view(request.method.data(), request.method.size()));
    req.target(boost::beast::string_view(request.target.data(), request.target.size()));
    req.version(11);
    for (const auto& [name, value] : request.headers) {
      req.insert(boost::beast::string_view(name.data(), name.size()),
                 boost::beast::string_view(value.data(), value.size()));
    }
    req.body().data = const_cast<std::byte*>(request.body.data());  // Beast's type is void*
    req.body().size = request.body.size();
    req.body().more = false;
    DeadlineStream stream(socket_, timeout_);
    http::write(stream, req, ec);
    if (ec) {
      if (!PeerStoppedReading(ec)) {
        return FromAsio(ec, "send request");
      }
      // The gateway may answer before it has read the whole body (NoSuchBucket,
      // AccessDenied, a refused descriptor) and close once it has drained what it allows
      // (docs/design.md, "Gateway request path"): our write fails, but the answer sits in our
      // receive queue ahead of the close. That answer is the request's outcome; only when
      // there is none (a stale keep-alive connection) is the write's error.
      Result<HttpResponseHead> early = ReadHead(request.method);
      if (!early.has_value()) {
        return FromAsio(ec, "send request");
      }
      early->keep_alive = false;  // the body was not all sent: this connection is done
      keep_alive_ = false;
      reusable_ = false;
      return early;
    }
    return ReadHead(request.method);
  }

  Result<uint64_t> ReadBody(MutableByteSpan out) override {
    if (direct_left_) {
      return ReadDirect(out);
    }
    if (!parser_ || parser_->is_done()) {
      reusable_ = parser_ && keep_alive_;
      return uint64_t{0};
    }
    auto& body = parser_->get().body();
    body.data = out.data();
    body.size = out.size();
    beast::error_code ec;
    DeadlineStream stream(socket_, timeout_);
    http::read(stream, buffer_, *parser_, ec);
    if (ec == http::error::need_buffer) {
      ec = {};
    }
    if (ec) {
      return FromAsio(ec, "read response body");
    }
    const uint64_t n = out.size() - body.size;
    if (parser_->is_done()) {
      reusable_ = keep_alive_;
    }
    return n;
  }

  bool reusable() const override { return reusable_; }

 private:
  // Reads the response header of a `method` request into a fresh parser.
  Result<HttpResponseHead> ReadHead(std::string_view method) {
    beast::error_code ec;
    parser_.emplace();
    parser_->header_limit(kMaxResponseHeaderBytes);
    parser_->body_limit(
        std::numeric_limits<std::uint64_t>::max());  // bodies are read into caller memory in pieces
    if (method == "HEAD") {
      parser_->skip(true);
    }
    DeadlineStream stream(socket_, timeout_);
    http::read_header(stream, buffer_, *parser_, ec);
    if (ec) {
      return FromAsio(ec, "read response header");
    }
    HttpResponseHead head;
    const auto& msg = parser_->get();
    head.status = msg.result_int();
    for (const auto& field : msg) {
      const auto name = field.name_string();
      const auto value = field.value();
      head.headers.emplace_back(AsciiLower(std::string_view(name.data(), name.size())),
                                std::string(value.data(), value.size()));
    }
    if (parser_->content_length()) {
      head.content_length = *parser_->content_length();
    }
    head.keep_alive = msg.keep_alive();
    keep_alive_ = head.keep_alive;
    direct_left_.reset();
    if (parser_->is_done()) {
      reusable_ = keep_alive_;
    } else if (parser_->content_length() && !parser_->chunked()) {
      // A body of known length: read it straight into the caller's memory (ReadBody), not
      // through buffer_ and the parser's copy out of it.
      direct_left_ = *parser_->content_length_remaining();
    }
    return head;
  }

  // ReadBody for a body of known length: first the bytes read_header left in buffer_, then
  // recv() into `out` itself (each bounded by the timeout, as every read), until `out` is full
  // or the body ends (as the parser's read).
  Result<uint64_t> ReadDirect(MutableByteSpan out) {
    const uint64_t want = std::min<uint64_t>(out.size(), *direct_left_);
    uint64_t n = std::min<uint64_t>(want, buffer_.size());
    if (n > 0) {
      std::memcpy(out.data(), buffer_.data().data(), n);
      buffer_.consume(n);
    }
    if (n < want) {
      beast::error_code ec;
      DeadlineStream stream(socket_, timeout_);
      n += asio::read(stream, asio::buffer(out.data() + n, want - n), ec);
      if (ec) {
        return FromAsio(ec, "read response body");
      }
    }
    *direct_left_ -= n;
    if (*direct_left_ == 0) {
      reusable_ = keep_alive_;
    }
    return n;
  }

  tcp::socket socket_;
  std::chrono::milliseconds timeout_{0};  // of silence, per read or write (DeadlineStream)
  beast::flat_buffer buffer_;
  std::optional<http::response_parser<http::buffer_body>> parser_;
  bool keep_alive_ = false;
  bool reusable_ = false;
  std::optional<uint64_t> direct_left_;  // body bytes still to come, when read directly
};

// Each connection owns its io_context: synchronous use needs no running loop.
class OwningConnection final : public HttpConnection {
 public:
  OwningConnection() : conn_(io_) {}
  Status Open(const std::string& host, const std::string& port, std::chrono::milliseconds timeout) {
    return conn_.Open(host, port, timeout);
  }
  Result<HttpResponseHead> Send(const HttpRequest& request) override { return conn_.Send(request); }
  Result<uint64_t> ReadBody(MutableByteSpan out) override { return conn_.ReadBody(out); }
  bool reusable() const override { return conn_.reusable(); }

 private:
  asio::io_context io_{1};
  BeastConnection conn_;
};

}  // namespace

const std::string* HttpResponseHead::Find(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (n == name) {
      return &v;
    }
  }
  return nullptr;
}

Result<std::string> HttpConnection::ReadBodyString(uint64_t limit) {
  std::string out;
  char piece[64 << 10];
  for (;;) {
    OC_ASSIGN_OR_RETURN(
        uint64_t n, ReadBody(MutableByteSpan(reinterpret_cast<std::byte*>(piece), sizeof(piece))));
    if (n == 0) {
      return out;
    }
    if (out.size() + n > limit) {
      return Status::ResourceExhausted("body", fmt::format("response body over {} bytes", limit));
    }
    out.append(piece, n);
  }
}

Result<std::unique_ptr<HttpConnection>> HttpConnection::Connect(const std::string& host,
                                                                const std::string& port,
                                                                std::chrono::milliseconds timeout) {
  auto conn = std::make_unique<OwningConnection>();
  OC_RETURN_IF_ERROR(conn->Open(host, port, timeout));
  return std::unique_ptr<HttpConnection>(std::move(conn));
}

}  // namespace oc::client
