// The connection's frame I/O (server_connection.h): the watchdog, reading and writing
// frames under deadlines, error frames, the handshake and the loop that serves calls one
// after another.
#include <algorithm>
#include <array>

#include <fmt/core.h>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "oc/common/log.h"
#include "rpc/server_connection.h"

namespace oc::storage::rpc {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

const Logger kLog{"rpc"};

// A handshake body is the secret and its length prefix; nothing larger is read from a
// client that has not authenticated.
constexpr uint64_t kMaxHelloBytes = kMaxSecretBytes + 4;
// Buffers above this are released when a connection goes idle, so idle connections cost
// little whatever they carried before.
constexpr size_t kIdleKeepBytes = 64 << 10;

}  // namespace

Connection::Connection(RpcServer::Impl& server, tcp::socket socket, uint64_t id)
    : server_(server),
      socket_(std::move(socket)),
      timer_(socket_.get_executor()),
      wake_(socket_.get_executor()),
      id_(id) {
  error_code ec;
  const tcp::endpoint peer = socket_.remote_endpoint(ec);
  peer_ = ec ? "?" : fmt::format("{}:{}", peer.address().to_string(), peer.port());
  socket_.set_option(tcp::no_delay(true), ec);
  Arm(server_.options.handshake_timeout);
}

void Connection::CloseIfIdle() {
  if (idle_) {
    error_code ec;
    socket_.close(ec);
  }
}

asio::awaitable<void> Connection::RefuseAndClose(const Status& status) {
  co_await Reject(0, status);
  Finish();
}

void Connection::Arm(std::chrono::steady_clock::duration timeout) {
  deadline_ = std::chrono::steady_clock::now() + timeout;
  timer_.expires_at(deadline_);  // wakes the watchdog, which waits again until deadline_
}

void Connection::Finish() {
  done_ = true;
  error_code ec;
  timer_.cancel();
  socket_.close(ec);
}

void Connection::NoteMemory() {
  server_.NotePeak(body_.capacity() + out_.capacity() + chunk_.capacity());
}

void Connection::ReleaseIdleBuffers() {
  for (std::vector<std::byte>* b : {&body_, &out_, &chunk_}) {
    if (b->capacity() > kIdleKeepBytes) {
      std::vector<std::byte>().swap(*b);
    }
  }
}

asio::awaitable<void> Connection::Watchdog() {
  auto self = shared_from_this();
  while (!done_) {
    error_code ec;
    co_await timer_.async_wait(Awaitable(ec));
    if (done_) {
      co_return;
    }
    if (std::chrono::steady_clock::now() >= deadline_) {
      timed_out_ = true;
      kLog.Info("connection timed out conn={} peer={} idle={}", id_, peer_, idle_);
      socket_.close(ec);
      co_return;
    }
  }
}

asio::awaitable<Connection::ReadKind> Connection::ReadFrame(std::chrono::milliseconds timeout,
                                                            uint64_t max_body, FrameHeader* h,
                                                            Status* error, bool allow_kv_request) {
  std::array<std::byte, kHeaderBytes> header;
  error_code ec;
  Arm(timeout);
  const size_t got = co_await asio::async_read(socket_, asio::buffer(header), Awaitable(ec));
  if (ec) {
    if (got > 0 && ec == asio::error::eof) {
      *error = Status::InvalidArgument("frame", fmt::format("truncated header ({} bytes)", got));
      co_return ReadKind::kBad;
    }
    co_return ReadKind::kClosed;
  }
  Status st = DecodeHeader(
      header, allow_kv_request ? std::max(max_body, kMaxKvRequestBodyBytes) : max_body, h);
  if (st.ok() && h->body_length > max_body && !IsKvRequestOp(h->op)) {
    st = Status::ResourceExhausted(
        "body_length",
        fmt::format("frame body of {} bytes exceeds the limit of {}", h->body_length, max_body));
  }
  if (st.ok() && (h->flags & kFlagReply) != 0) {
    st = Status::InvalidArgument("flags", "a client sent a reply frame");
  }
  if (!st.ok()) {
    *error = std::move(st);
    co_return ReadKind::kBad;
  }
  body_.resize(h->body_length);  // bounded by max_body, checked above
  NoteMemory();
  if (h->body_length > 0) {
    Arm(server_.options.io_timeout);
    const size_t body_got = co_await asio::async_read(socket_, asio::buffer(body_), Awaitable(ec));
    if (ec) {
      if (ec == asio::error::eof) {
        *error = Status::InvalidArgument(
            "frame", fmt::format("truncated body ({} of {} bytes)", body_got, h->body_length));
        co_return ReadKind::kBad;
      }
      co_return ReadKind::kClosed;
    }
  }
  co_return ReadKind::kOk;
}

asio::awaitable<bool> Connection::WriteOut() {
  error_code ec;
  Arm(server_.options.io_timeout);
  NoteMemory();
  co_await asio::async_write(socket_, asio::buffer(out_), Awaitable(ec));
  co_return !ec;
}

asio::awaitable<bool> Connection::WriteData(Op op, uint64_t rid, ByteSpan prefix, ByteSpan data) {
  std::array<std::byte, kHeaderBytes> header;
  EncodeHeader(FrameHeader{kVersion, op, kFlagReply, rid, prefix.size() + data.size()}, header);
  const std::array<asio::const_buffer, 3> buffers{asio::buffer(header),
                                                  asio::buffer(prefix.data(), prefix.size()),
                                                  asio::buffer(data.data(), data.size())};
  error_code ec;
  Arm(server_.options.io_timeout);
  co_await asio::async_write(socket_, buffers, Awaitable(ec));
  co_return !ec;
}

asio::awaitable<bool> Connection::SendError(uint64_t rid, const Status& status) {
  kLog.Debug("call failed req={:016x} conn={} status={}", rid, id_, status.ToString());
  out_.clear();
  EncodeFrame(&out_, Op::kError, kFlagReply, rid, status);
  co_return co_await WriteOut();
}

asio::awaitable<bool> Connection::Reject(uint64_t rid, const Status& status) {
  server_.protocol_errors.fetch_add(1, std::memory_order_relaxed);
  kLog.Warn("protocol error, closing req={:016x} conn={} peer={} status={}", rid, id_, peer_,
            status.ToString());
  co_await SendError(rid, status);
  co_return false;
}

asio::awaitable<bool> Connection::Handshake() {
  FrameHeader h;
  Status error;
  idle_ = true;
  const ReadKind kind =
      co_await ReadFrame(server_.options.handshake_timeout, kMaxHelloBytes, &h, &error);
  idle_ = false;
  if (kind == ReadKind::kClosed) {
    co_return false;
  }
  if (kind == ReadKind::kBad) {
    co_return co_await Reject(h.request_id, error);
  }
  const Status unauthenticated(Code::kUnauthenticated, Subject::kNone, "secret",
                               "the first frame must be Hello with the shared secret");
  if (h.op != Op::kHello) {
    co_return co_await Reject(h.request_id, unauthenticated);
  }
  std::string secret;
  if (!DecodeBody(body_, &secret).ok() || !ConstantTimeEquals(secret, server_.secret)) {
    co_return co_await Reject(h.request_id, unauthenticated);
  }
  co_return co_await Reply(Op::kHello, h.request_id);
}

asio::awaitable<void> Connection::Run() {
  auto self = shared_from_this();
  bool open = co_await Handshake();
  while (open && !server_.stopping()) {
    ReleaseIdleBuffers();
    FrameHeader h;
    Status error;
    idle_ = true;
    const ReadKind kind = co_await ReadFrame(server_.options.idle_timeout,
                                             server_.options.max_frame_bytes, &h, &error, true);
    idle_ = false;
    if (kind == ReadKind::kClosed) {
      break;
    }
    if (kind == ReadKind::kBad) {
      co_await Reject(h.request_id, error);
      break;
    }
    kLog.Debug("call req={:016x} conn={} op={} body={}", h.request_id, id_, OpName(h.op),
               h.body_length);
    open = co_await Dispatch(h);
  }
  Finish();
  server_.Unregister(self);
}

}  // namespace oc::storage::rpc
