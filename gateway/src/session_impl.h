#pragma once
// The Session class template behind StartSession (session.h): one client connection, one
// coroutine, over a plain or a TLS stream. Private to oc_gateway. Its members are defined in
// three files, one seam each (as RocksDB splits DBImpl over db_impl_*.cc):
//   session.cc           the connection: accept, TLS handshake, the keep-alive loop, reading
//                        the request head, routing and authenticating it, the last-resort 500
//   session_body.cc      request bodies: 100 Continue, bounded pieces, whole XML bodies,
//                        streamed uploads through the payload checks, draining after an error
//   session_response.cc  the handler's run on the Store pool and the response: error XML,
//                        small or streamed bodies, the access log, lingering close
// A file that defines a member other files call instantiates it for both streams at its end
// (PlainStream, TlsStream); session.cc instantiates the rest through StartSession.
// Thread safety: a session lives on one io_context (one thread); SessionShared is shared.

#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>

#include "auth/sigv4.h"
#include "connection_registry.h"
#include "handlers/handlers.h"
#include "oc/common/result.h"
#include "oc/gateway/options.h"
#include "request_parser.h"
#include "session.h"

namespace oc::gateway {

using PlainStream = boost::beast::tcp_stream;
using TlsStream = boost::beast::ssl_stream<boost::beast::tcp_stream>;

template <class Stream>
inline constexpr bool kIsTls = !std::is_same_v<Stream, PlainStream>;

// Bytes of aws-chunked framing allowed on top of the decoded length: each chunk of at
// least 8 KiB (clients' minimum) carries ~90 bytes of header, so 1/64 plus one header.
inline uint64_t RawBodyLimit(uint64_t decoded_limit) {
  return decoded_limit + decoded_limit / 64 + 4096;
}

// Runs `f` on the Store pool and resumes the calling coroutine on its own io_context, so
// the I/O thread never blocks on the Store (STYLE 3.6 step 5). An exception from `f` is
// rethrown in the coroutine (the connection's last-resort catch), never on a pool thread,
// where it would end the process.
template <typename F>
boost::asio::awaitable<void> OnPool(boost::asio::thread_pool& pool, F& f) {
  namespace asio = boost::asio;
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

template <class Stream>
class Session : public SessionBase {
 public:
  // Registers the connection; the acceptor counted it open (StartSession's contract).
  Session(SessionShared& shared, Stream stream, boost::asio::io_context& ioc, uint64_t id);
  // Unregisters it and counts it closed.
  ~Session() override;

  bool CloseIfIdle() override;
  void CloseNow() override { Close(); }

  // The connection's coroutine. Its catch is the last resort (STYLE 3.4): nothing a client
  // sends should throw, but if anything does, the connection is logged with its request id,
  // answered 500 when no response has begun, and closed; the server keeps serving.
  boost::asio::awaitable<void> Run();

 private:
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

  // --- session.cc: the connection and the request head ---
  boost::asio::awaitable<void> Connection();
  // After an exception escaped a request: the log line, and a 500 if nothing was sent yet.
  boost::asio::awaitable<void> AnswerFailure(const std::string& what);
  // Reads and serves one request. Returns whether to keep the connection.
  boost::asio::awaitable<bool> Serve();

  // --- session_body.cc: request bodies ---
  // 100 Continue, once, when the client asked for it (after auth and size checks).
  boost::asio::awaitable<bool> SendContinue();
  // Reads the next piece of the request body into `into` (a store writer's lent space), or
  // into piece_ when it is empty. Returns the byte count (0 at the end); an error code for
  // timeouts, resets and limit breaches.
  boost::asio::awaitable<std::pair<size_t, boost::beast::error_code>> ReadPiece(
      MutableByteSpan into = {});
  Response BodyReadError(const boost::beast::error_code& ec);
  // Reads a small XML body whole, bounded by max_xml_body_bytes, checking the payload hash.
  boost::asio::awaitable<std::optional<Response>> ReadXmlBody();
  // A streamed upload (BodyPolicy::kUpload, kDescriptorUpload): open the writer (OpenUpload:
  // access, headers), 100 Continue, stream the body through the payload checks into the
  // writer, commit only when every check passed.
  boost::asio::awaitable<bool> ServeUpload();
  // After an early error: read and discard what is left of the body, up to max_drain_bytes.
  // True when the body was consumed and the connection can be kept.
  boost::asio::awaitable<bool> DrainBody();

  // --- session_response.cc: the handler and the response ---
  // Runs Dispatch where the operation's row says (RunOn): on the pool, reading the first
  // piece of a streamed body there too, then writes the response. A kIoThread operation runs
  // on this I/O thread; a kCachedReads one (GET, HEAD) too while the store can answer it
  // from memory (InlineCachedReads), and goes to the pool only after a miss.
  boost::asio::awaitable<bool> RunHandler();
  bool InlineCachedReads() const;
  // The next piece of a streamed body (at most piece_'s size of the `left` bytes): lent by
  // the reader when it can (valid until its next call), else read into piece_.
  Result<ByteSpan> NextPiece(storage::ObjectReader& reader, uint64_t left);
  // Reads up to `want` bytes of the range into piece_ (several Read calls if needed).
  Result<uint64_t> FillPiece(storage::ObjectReader& reader, uint64_t want);
  // Writes `res` (its XML error, small body, or streamed reader), logs and counts the request.
  // `first` is the first piece of a streamed body (NextPiece). Returns keep-alive.
  boost::asio::awaitable<bool> Finish(Response res, bool force_close = false, ByteSpan first = {});
  // Closing with unread request bytes makes the kernel send RST, which can destroy the
  // response before the client reads it. Stop sending, read (and drop) a bounded amount for a
  // short while, then close (Apache's lingering close).
  boost::asio::awaitable<void> LingeringClose();

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

  auto& Lowest() { return boost::beast::get_lowest_layer(stream_); }

  void Close() {
    boost::beast::error_code ec;
    Lowest().socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    Lowest().socket().close(ec);
  }

  SessionShared& shared_;
  const GatewayOptions& opts_;
  Stream stream_;
  boost::beast::flat_buffer buffer_;
  std::vector<char> piece_;  // one bounded piece of body, either direction
  std::optional<RequestParser> parser_;
  std::optional<Exchange> ex_;
  uint64_t id_;
  std::chrono::steady_clock::time_point first_deadline_;  // header_timeout after accept
  uint64_t served_ = 0;                                   // request headers read on this connection
  bool idle_ = false;              // waiting for a request header (CloseIfIdle may close)
  bool response_started_ = false;  // this request's response headers were (being) written
};

}  // namespace oc::gateway
