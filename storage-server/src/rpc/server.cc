#include "oc/storage/rpc_server.h"

// g++ 12 at -O2 reports Asio's coroutine frame allocator (awaitable_frame_base's sized
// operator new/delete pair) as mismatched: a known false positive (GCC bug 109224).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <type_traits>

#include <fmt/core.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "oc/common/log.h"
#include "oc/common/thread_annotations.h"
#include "oc/common/units.h"
#include "rpc/wire.h"

namespace oc::storage::rpc {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using Strand = asio::strand<asio::io_context::executor_type>;

namespace {

const Logger kLog{"rpc"};

// The largest data frame or request body a client sends, plus room for framing.
constexpr uint64_t kMinFrameBytes =
    std::max(kStreamChunkBytes, kMaxRequestBodyBytes) + (64ull << 10);
// A handshake body is the secret and its length prefix; nothing larger is read from a
// client that has not authenticated.
constexpr uint64_t kMaxHelloBytes = kMaxSecretBytes + 4;
// Buffers above this are released when a connection goes idle, so idle connections cost
// little whatever they carried before.
constexpr size_t kIdleKeepBytes = 64 << 10;
// Deadline while a call waits on the store: store calls are not timed out by the network.
constexpr std::chrono::hours kNoDeadline{24 * 365};
// A descriptor GET into the body stages its payload in this many buffers of
// kStreamChunkBytes per connection: the assembler fills one while others are on the wire.
constexpr uint32_t kKvStreamBuffers = 4;
// A descriptor PUT from the body queues at most this many received bytes for the store.
constexpr uint64_t kKvPutQueueBytes = 4 * kStreamChunkBytes;

auto Awaitable(error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

std::string FormatMs(std::chrono::milliseconds ms) { return fmt::format("{}ms", ms.count()); }

}  // namespace

// --- Options ---

Status RpcServerOptions::Validate() const {
  OC_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(listen, "rpc.listen"));
  (void)hp;
  if (io_threads == 0 || io_threads > 256) {
    return Status::InvalidArgument("rpc.io_threads", "must be 1..256");
  }
  if (store_threads == 0 || store_threads > 1024) {
    return Status::InvalidArgument("rpc.store_threads", "must be 1..1024");
  }
  if (max_frame_bytes < kMinFrameBytes || max_frame_bytes > kMaxFrameBodyBytes) {
    return Status::InvalidArgument(
        "rpc.max_frame_bytes",
        fmt::format("must be {}..{}", FormatSize(kMinFrameBytes), FormatSize(kMaxFrameBodyBytes)));
  }
  for (const auto& [name, value] :
       {std::pair{"rpc.handshake_timeout", handshake_timeout},
        std::pair{"rpc.idle_timeout", idle_timeout}, std::pair{"rpc.io_timeout", io_timeout}}) {
    if (value.count() <= 0) {
      return Status::InvalidArgument(name, "must be positive");
    }
  }
  if (max_connections == 0) {
    return Status::InvalidArgument("rpc.max_connections", "must be at least 1");
  }
  return Status::Ok();
}

std::string RpcServerOptions::ToString() const {
  return fmt::format(
      "rpc.listen={} rpc.io_threads={} rpc.store_threads={} rpc.max_frame_bytes={} "
      "rpc.handshake_timeout={} rpc.idle_timeout={} rpc.io_timeout={} rpc.max_connections={}",
      listen, io_threads, store_threads, max_frame_bytes, FormatMs(handshake_timeout),
      FormatMs(idle_timeout), FormatMs(io_timeout), max_connections);
}

Status ApplyConfig(const Config& config, RpcServerOptions* options) {
  OC_RETURN_IF_ERROR(config.Read("rpc.listen", &options->listen));
  OC_RETURN_IF_ERROR(config.Read("rpc.io_threads", &options->io_threads));
  OC_RETURN_IF_ERROR(config.Read("rpc.store_threads", &options->store_threads));
  OC_RETURN_IF_ERROR(config.ReadSize("rpc.max_frame_bytes", &options->max_frame_bytes));
  OC_RETURN_IF_ERROR(config.ReadDuration("rpc.handshake_timeout", &options->handshake_timeout));
  OC_RETURN_IF_ERROR(config.ReadDuration("rpc.idle_timeout", &options->idle_timeout));
  OC_RETURN_IF_ERROR(config.ReadDuration("rpc.io_timeout", &options->io_timeout));
  OC_RETURN_IF_ERROR(config.Read("rpc.max_connections", &options->max_connections));
  return Status::Ok();
}

// --- Server state ---

class Connection;

struct RpcServer::Impl {
  Impl(Store* s, RpcServerOptions o, std::string sec)
      : store(s),
        options(std::move(o)),
        secret(std::move(sec)),
        store_pool(options.store_threads),
        control(asio::make_strand(io)),
        acceptor(control),
        signals(control) {}

  asio::awaitable<void> Accept();
  void BeginShutdown();
  bool Register(const std::shared_ptr<Connection>& c);
  void Unregister(const std::shared_ptr<Connection>& c);
  bool stopping() const { return stopping_flag.load(std::memory_order_acquire); }
  void NotePeak(uint64_t bytes) {
    uint64_t prev = peak_connection_bytes.load(std::memory_order_relaxed);
    while (bytes > prev && !peak_connection_bytes.compare_exchange_weak(prev, bytes)) {
    }
  }

  Store* store;
  const RpcServerOptions options;
  const std::string secret;
  asio::io_context io;
  asio::thread_pool store_pool;
  Strand control;  // the acceptor and the signal set live here
  tcp::acceptor acceptor;
  asio::signal_set signals;
  std::string host;
  uint16_t port = 0;
  std::vector<std::thread> io_threads;

  std::mutex mu;
  std::set<std::shared_ptr<Connection>> connections OC_GUARDED_BY(mu);
  bool stopping_locked OC_GUARDED_BY(mu) = false;
  std::once_flag joined;
  std::atomic<bool> stopping_flag{false};
  std::atomic<uint64_t> next_connection_id{1};
  std::atomic<uint64_t> connections_active{0};
  std::atomic<uint64_t> connections_total{0};
  std::atomic<uint64_t> protocol_errors{0};
  std::atomic<uint64_t> peak_connection_bytes{0};
  // Descriptor calls: how many, and the bytes this server moved itself — into data-plane
  // targets with its own UCX data plane (writes = the sink's put count), pulled from them,
  // or streamed in frames to and from the caller.
  std::atomic<uint64_t> kv_probes{0};
  std::atomic<uint64_t> kv_gets{0};
  std::atomic<uint64_t> kv_get_target_bytes{0};
  std::atomic<uint64_t> kv_get_target_writes{0};
  std::atomic<uint64_t> kv_get_stream_bytes{0};
  std::atomic<uint64_t> kv_puts{0};
  std::atomic<uint64_t> kv_put_pulled_bytes{0};
  std::atomic<uint64_t> kv_put_stream_bytes{0};

  std::vector<std::pair<std::string, uint64_t>> Figures() const {
    return {{"rpc_connections_active", connections_active.load()},
            {"rpc_connections_total", connections_total.load()},
            {"rpc_protocol_errors", protocol_errors.load()},
            {"rpc_peak_connection_bytes", peak_connection_bytes.load()},
            {"rpc_kv_probes", kv_probes.load()},
            {"rpc_kv_gets", kv_gets.load()},
            {"rpc_kv_get_target_bytes", kv_get_target_bytes.load()},
            {"rpc_kv_get_target_writes", kv_get_target_writes.load()},
            {"rpc_kv_get_stream_bytes", kv_get_stream_bytes.load()},
            {"rpc_kv_puts", kv_puts.load()},
            {"rpc_kv_put_pulled_bytes", kv_put_pulled_bytes.load()},
            {"rpc_kv_put_stream_bytes", kv_put_stream_bytes.load()}};
  }
};

namespace {

// The frames of a descriptor GET, from the store call on the pool (GetLayers' on_plan and,
// without a target, this LayerSink) to the connection's strand, which writes them in order.
// Staging buffers are a HeapBufferPool of kKvStreamBuffers: a buffer goes back when its frame
// is on the wire, so a slow caller (TCP backpressure) blocks AcquireBuffer and with it the
// assembler, and memory stays bounded whatever the payload. Once the connection fails
// (Fail), queued frames are dropped and every later call returns that error.
class KvGetStream final : public LayerSink {
 public:
  struct Frame {
    Op op = Op::kKvData;
    std::vector<std::byte> head;  // the body before the data: a plan, an offset, a layer
    StagingBuffer buffer;         // kKvData: the bytes; back to the pool once destroyed
    uint64_t length = 0;
  };

  KvGetStream(bool with_pool, std::chrono::milliseconds timeout) : timeout_(timeout) {
    if (with_pool) {
      pool_ = std::make_unique<HeapBufferPool>(kKvStreamBuffers, kStreamChunkBytes);
    }
  }

  // Runs on the store pool after each push and at the end; posts a wake-up to the strand.
  void set_wake(std::function<void()> wake) { wake_ = std::move(wake); }

  Status PushPlan(const KvPlan& plan) {
    Frame f;
    f.op = Op::kKvPlan;
    WireWriter w(&f.head);
    Encode(w, plan);
    return Push(std::move(f));
  }
  // The end of the store call.
  void Done(Result<KvGetReport> result) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      result_.emplace(std::move(result));
    }
    wake_();
  }
  // The strand's side: the next frame, or nullopt (then *done tells whether the call ended).
  std::optional<Frame> Next(bool* done) {
    std::lock_guard<std::mutex> lock(mu_);
    *done = false;
    if (!frames_.empty()) {
      Frame f = std::move(frames_.front());
      frames_.pop_front();
      return f;
    }
    *done = result_.has_value();
    return std::nullopt;
  }
  Result<KvGetReport> TakeResult() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(*result_);
  }
  void Fail(const Status& error) {
    std::deque<Frame> dropped;  // destroyed outside the lock: gives buffers back
    std::lock_guard<std::mutex> lock(mu_);
    if (failed_.ok()) {
      failed_ = error;
    }
    dropped.swap(frames_);
  }
  uint64_t streamed() const { return next_offset_; }

  // LayerSink (the store pool's side).
  uint64_t buffer_bytes() const override { return kStreamChunkBytes; }
  Result<StagingBuffer> AcquireBuffer() override {
    if (Status f = Failed(); !f.ok()) {
      return f;
    }
    return pool_->Acquire(timeout_);
  }
  Status Write(uint64_t dest_offset, StagingBuffer buffer, uint64_t length) override {
    if (!pool_->Owns(buffer) || length == 0 || length > buffer.bytes().size()) {
      return Status::InvalidArgument("buffer", "not one of this sink's buffers, or a bad length");
    }
    if (dest_offset != next_offset_) {
      return Status::OutOfRange("body offsets must increase without gaps");
    }
    next_offset_ += length;
    Frame f;
    f.head.resize(8);
    PutLittleEndian64(dest_offset, f.head.data());
    f.buffer = std::move(buffer);
    f.length = length;
    return Push(std::move(f));
  }
  Status LayerReady(uint32_t layer) override {
    Frame f;
    f.op = Op::kKvLayerReady;
    f.head.resize(4);
    PutLittleEndian32(layer, f.head.data());
    return Push(std::move(f));
  }
  Status Finish(const Status& final) override {
    // The caller learns the outcome from the call's last frame, written after every queued
    // frame; only a transport failure is known here.
    Status f = Failed();
    return f.ok() ? final : f;
  }

 private:
  Status Failed() {
    std::lock_guard<std::mutex> lock(mu_);
    return failed_;
  }
  Status Push(Frame f) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!failed_.ok()) {
        return failed_;
      }
      frames_.push_back(std::move(f));
    }
    wake_();
    return Status::Ok();
  }

  const std::chrono::milliseconds timeout_;
  std::unique_ptr<HeapBufferPool> pool_;  // first: outlives the buffers in frames_
  std::function<void()> wake_;
  uint64_t next_offset_ = 0;  // the sink's side only
  std::mutex mu_;
  std::deque<Frame> frames_ OC_GUARDED_BY(mu_);
  Status failed_ OC_GUARDED_BY(mu_);
  std::optional<Result<KvGetReport>> result_ OC_GUARDED_BY(mu_);
};

// The body of a descriptor PUT, from the connection's strand (data frames) to the store call
// on the pool (this ChunkSource), at most kKvPutQueueBytes queued between them.
class KvPutStream final : public ChunkSource {
 public:
  explicit KvPutStream(std::chrono::milliseconds timeout) : timeout_(timeout) {}

  void set_wake(std::function<void()> wake) { wake_ = std::move(wake); }

  // The strand's side. True when another piece may be queued (or the call is over and
  // pieces are discarded).
  bool HasRoom() {
    std::lock_guard<std::mutex> lock(mu_);
    return queued_ < kKvPutQueueBytes || result_.has_value();
  }
  void Push(std::vector<std::byte> piece) {
    std::lock_guard<std::mutex> lock(mu_);
    if (result_.has_value() || closed_) {
      return;  // the store call ended early: the rest of the body is drained unread
    }
    queued_ += piece.size();
    received_ += piece.size();
    pieces_.push_back(std::move(piece));
    cv_.notify_all();
  }
  // The body ended (kCommit) or was abandoned (kAbort, or the connection failed).
  void Close(bool abort) {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    aborted_ = aborted_ || abort;
    cv_.notify_all();
  }
  bool done() {
    std::lock_guard<std::mutex> lock(mu_);
    return result_.has_value();
  }
  void Done(Result<KvPutReport> result) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      result_.emplace(std::move(result));
    }
    wake_();
  }
  Result<KvPutReport> TakeResult() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(*result_);
  }
  uint64_t received() {
    std::lock_guard<std::mutex> lock(mu_);
    return received_;
  }

  // ChunkSource (the store pool's side).
  Result<uint64_t> Read(MutableByteSpan out) override {
    uint64_t n = 0;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!cv_.wait_for(lock, timeout_, [&] { return !pieces_.empty() || closed_; })) {
        return Status::Unavailable("the descriptor PUT body stalled");
      }
      if (pieces_.empty()) {
        if (aborted_) {
          return Status::Cancelled("the descriptor PUT body was abandoned");
        }
        return uint64_t{0};
      }
      std::vector<std::byte>& front = pieces_.front();
      n = std::min<uint64_t>(out.size(), front.size() - front_pos_);
      std::copy_n(front.data() + front_pos_, n, out.data());
      front_pos_ += n;
      if (front_pos_ == front.size()) {
        queued_ -= front.size();
        pieces_.pop_front();
        front_pos_ = 0;
      }
    }
    wake_();  // room for the strand's next piece
    return n;
  }

 private:
  const std::chrono::milliseconds timeout_;
  std::function<void()> wake_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::vector<std::byte>> pieces_ OC_GUARDED_BY(mu_);
  uint64_t front_pos_ OC_GUARDED_BY(mu_) = 0;
  uint64_t queued_ OC_GUARDED_BY(mu_) = 0;
  uint64_t received_ OC_GUARDED_BY(mu_) = 0;
  bool closed_ OC_GUARDED_BY(mu_) = false;
  bool aborted_ OC_GUARDED_BY(mu_) = false;
  std::optional<Result<KvPutReport>> result_ OC_GUARDED_BY(mu_);
};

}  // namespace

// One client connection: a coroutine serving calls one after another, and a watchdog
// coroutine that closes the socket when the current deadline passes. Both run on the
// connection's strand; the shared_ptr is held by both (a genuinely shared async lifetime).
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(RpcServer::Impl& server, tcp::socket socket, uint64_t id)
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

  asio::any_io_executor executor() { return socket_.get_executor(); }

  asio::awaitable<void> Run();
  asio::awaitable<void> Watchdog();

  // On the strand: closes the connection if it is waiting for its next call.
  void CloseIfIdle() {
    if (idle_) {
      error_code ec;
      socket_.close(ec);
    }
  }

  // Sends one error frame and closes: for clients the server cannot keep serving.
  asio::awaitable<void> RefuseAndClose(const Status& status) {
    co_await Reject(0, status);
    Finish();
  }

 private:
  enum class ReadKind { kOk, kClosed, kBad };

  void Arm(std::chrono::steady_clock::duration timeout) {
    deadline_ = std::chrono::steady_clock::now() + timeout;
    timer_.expires_at(deadline_);  // wakes the watchdog, which waits again until deadline_
  }
  void Finish() {
    done_ = true;
    error_code ec;
    timer_.cancel();
    socket_.close(ec);
  }
  void NoteMemory() { server_.NotePeak(body_.capacity() + out_.capacity() + chunk_.capacity()); }
  void ReleaseIdleBuffers() {
    for (std::vector<std::byte>* b : {&body_, &out_, &chunk_}) {
      if (b->capacity() > kIdleKeepBytes) {
        std::vector<std::byte>().swap(*b);
      }
    }
  }

  // `allow_kv_request`: a descriptor call's request may be up to kMaxKvRequestBodyBytes.
  asio::awaitable<ReadKind> ReadFrame(std::chrono::milliseconds timeout, uint64_t max_body,
                                      FrameHeader* h, Status* error, bool allow_kv_request = false);
  asio::awaitable<bool> WriteOut();
  asio::awaitable<bool> WriteData(Op op, uint64_t rid, ByteSpan prefix, ByteSpan data);
  asio::awaitable<bool> SendError(uint64_t rid, const Status& status);
  asio::awaitable<bool> Reject(uint64_t rid, const Status& status);
  template <typename... Fields>
  asio::awaitable<bool> Reply(Op op, uint64_t rid, const Fields&... fields) {
    out_.clear();
    EncodeFrame(&out_, op, kFlagReply, rid, fields...);
    co_return co_await WriteOut();
  }
  asio::awaitable<bool> ReplyStatus(Op op, uint64_t rid, const Status& status) {
    if (!status.ok()) {
      co_return co_await SendError(rid, status);
    }
    co_return co_await Reply(op, rid);
  }
  template <typename T>
  asio::awaitable<bool> ReplyResult(Op op, uint64_t rid, const Result<T>& result) {
    if (!result.has_value()) {
      co_return co_await SendError(rid, result.error());
    }
    co_return co_await Reply(op, rid, *result);
  }

  // Runs f() on the store pool and resumes on this connection's strand with its result.
  template <typename F>
  asio::awaitable<std::invoke_result_t<F&>> OnPool(F f) {
    using R = std::invoke_result_t<F&>;
    Arm(kNoDeadline);
    std::optional<R> result;
    co_await asio::async_initiate<const asio::use_awaitable_t<>&, void()>(
        [&](auto handler) {
          // The guard keeps io_context::run() going while only the pool has work.
          asio::post(server_.store_pool, [&result, &f, handler = std::move(handler),
                                          guard = asio::make_work_guard(server_.io)]() mutable {
            result.emplace(f());
            auto ex = asio::get_associated_executor(handler);
            asio::dispatch(ex, std::move(handler));
          });
        },
        asio::use_awaitable);
    co_return std::move(*result);
  }
  template <typename T>
  asio::awaitable<void> DestroyOnPool(std::unique_ptr<T> p) {
    // Closing a reader or discarding a writer may touch the engine: not on an I/O thread.
    co_await OnPool([&p] {
      p.reset();
      return 0;
    });
  }

  asio::awaitable<bool> Handshake();
  asio::awaitable<bool> Dispatch(const FrameHeader& h);
  asio::awaitable<bool> ServeWrite(const FrameHeader& h,
                                   Result<std::unique_ptr<ObjectWriter>> writer);
  asio::awaitable<bool> ServeGet(const FrameHeader& h);
  asio::awaitable<bool> ServeStats(const FrameHeader& h);
  asio::awaitable<bool> ServeKvProbe(const FrameHeader& h);
  asio::awaitable<bool> ServeKvGetLayers(const FrameHeader& h);
  asio::awaitable<bool> ServeKvPutChunks(const FrameHeader& h);

  // A function that wakes WaitForWake() from any thread (it posts to this strand).
  std::function<void()> Waker() {
    return [self = shared_from_this()] {
      asio::post(self->socket_.get_executor(), [self] { self->wake_.cancel(); });
    };
  }
  // Suspends until a Waker() call (or at once if one is already queued on the strand).
  // Callers re-check their condition on this strand before each wait, so no wake-up is lost.
  asio::awaitable<void> WaitForWake() {
    Arm(kNoDeadline);
    wake_.expires_at(std::chrono::steady_clock::time_point::max());
    error_code ec;
    co_await wake_.async_wait(Awaitable(ec));
  }

  RpcServer::Impl& server_;
  tcp::socket socket_;
  asio::steady_timer timer_;
  asio::steady_timer wake_;  // WaitForWake(): cancelled by Waker()
  std::chrono::steady_clock::time_point deadline_{};
  const uint64_t id_;
  std::string peer_;
  bool idle_ = false;
  bool done_ = false;
  bool timed_out_ = false;
  std::vector<std::byte> body_;   // the current frame's body
  std::vector<std::byte> out_;    // the reply being written
  std::vector<std::byte> chunk_;  // a streamed piece
};

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

asio::awaitable<bool> Connection::Dispatch(const FrameHeader& h) {
  Store& store = *server_.store;
  const uint64_t rid = h.request_id;
  const ByteSpan body(body_.data(), body_.size());
  switch (h.op) {
    case Op::kCreateBucket: {
      std::string bucket;
      std::string owner;
      if (Status d = DecodeBody(body, &bucket, &owner); !d.ok()) {
        co_return co_await Reject(rid, d);
      }
      const Status st = co_await OnPool([&] { return store.CreateBucket(bucket, owner); });
      co_return co_await ReplyStatus(h.op, rid, st);
    }
    case Op::kDeleteBucket: {
      std::string bucket;
      if (Status d = DecodeBody(body, &bucket); !d.ok()) {
        co_return co_await Reject(rid, d);
      }
      const Status st = co_await OnPool([&] { return store.DeleteBucket(bucket); });
      co_return co_await ReplyStatus(h.op, rid, st);
    }
    case Op::kHeadBucket: {
      std::string bucket;
      if (Status d = DecodeBody(body, &bucket); !d.ok()) {
        co_return co_await Reject(rid, d);
      }
      const Result<BucketInfo> r = co_await OnPool([&] { return store.HeadBucket(bucket); });
      co_return co_await ReplyResult(h.op, rid, r);
    }
    case Op::kListBuckets: {
      if (Status d = DecodeBody(body); !d.ok()) {
        co_return co_await Reject(rid, d);
      }
      const Result<std::vector<BucketInfo>> r =
          co_await OnPool([&] { return store.ListBuckets(); });
      co_return co_await ReplyResult(h.op, rid, r);
    }
    case Op::kPutBegin: {
      ObjectKey key;
      PutOptions options;
      if (Status d = DecodeBody(body, &key, &options); !d.ok()) {
        co_return co_await Reject(rid, d);
      }
      auto w = co_await OnPool([&] { return store.Put(key, options); });
      co_return co_await ServeWrite(h, std::move(w));
    }
    case Op::kUploadPartBegin: {
      ObjectKey key;
      std::string upload_id;
      uint32_t part = 0;
      PutOptions options;
      if (Status d = DecodeBody(body, &key, &upload_id, &part, &options); !d.ok()) {
        co_return co_await Reject(rid, d);
      }
      auto w = co_await OnPool([&] { return store.UploadPart(key, upload_id, part, options); });
      co_return co_await ServeWrite(h, std::move(w));
    }
    case Op::kGet:
      co_return co_await ServeGet(h);
    case Op::kHead: {
      ObjectKey key;
      if (Status d = DecodeBody(body, &key); !d.ok()) {
        co_return co_await Reject(rid, d);
      }
      const Result<ObjectMeta> r = co_await OnPool([&] { return store.Head(key); });
      co_return co_await ReplyResult(h.op, rid, r);
    }
    case Op::kDelete: {
      ObjectKey key;
      if (Status d = DecodeBody(body, &key); !d.ok()) {
        co_return co_await Reject(rid, d);
      }
      const Status st = co_await OnPool([&] { return store.Delete(key); });
      co_return co_await ReplyStatus(h.op, rid, st);
    }
    case Op::kCopy: {
      ObjectKey src;
      ObjectKey dst;
      std::optional<PutOptions> replace;
      if (Status d = DecodeBody(body, &src, &dst, &replace); !d.ok()) {
        co_return co_await Reject(rid, d);
      }
      const Result<ObjectMeta> r = co_await OnPool([&] { return store.Copy(src, dst, replace); });
      co_return co_await ReplyResult(h.op, rid, r);
    }
    case Op::kList: {
      std::string bucket;
      ListOptions options;
      if (Status d = DecodeBody(body, &bucket, &options); !d.ok()) {
        co_return co_await Reject(rid, d);
      }
      const Result<ListResult> r = co_await OnPool([&] { return store.List(bucket, options); });
      co_return co_await ReplyResult(h.op, rid, r);
    }
    case Op::kHeadMany: {
      std::string bucket;
      std::vector<std::string> names;
      if (Status d = DecodeBody(body, &bucket, &names); !d.ok()) {
        co_return co_await Reject(rid, d);
      }
      const Result<std::vector<std::optional<ObjectMeta>>> r =
          co_await OnPool([&] { return store.HeadMany(bucket, names); });
      co_return co_await ReplyResult(h.op, rid, r);
    }
    case Op::kCreateUpload: {
      ObjectKey key;
      PutOptions options;
      if (Status d = DecodeBody(body, &key, &options); !d.ok()) {
        co_return co_await Reject(rid, d);
      }
      const Result<std::string> r =
          co_await OnPool([&] { return store.CreateMultipartUpload(key, options); });
      co_return co_await ReplyResult(h.op, rid, r);
    }
    case Op::kCompleteUpload: {
      ObjectKey key;
      std::string upload_id;
      std::vector<CompletedPart> parts;
      if (Status d = DecodeBody(body, &key, &upload_id, &parts); !d.ok()) {
        co_return co_await Reject(rid, d);
      }
      const Result<ObjectMeta> r =
          co_await OnPool([&] { return store.CompleteMultipartUpload(key, upload_id, parts); });
      co_return co_await ReplyResult(h.op, rid, r);
    }
    case Op::kAbortUpload: {
      ObjectKey key;
      std::string upload_id;
      if (Status d = DecodeBody(body, &key, &upload_id); !d.ok()) {
        co_return co_await Reject(rid, d);
      }
      const Status st = co_await OnPool([&] { return store.AbortMultipartUpload(key, upload_id); });
      co_return co_await ReplyStatus(h.op, rid, st);
    }
    case Op::kListParts: {
      ObjectKey key;
      std::string upload_id;
      uint32_t marker = 0;
      uint32_t max_parts = 0;
      if (Status d = DecodeBody(body, &key, &upload_id, &marker, &max_parts); !d.ok()) {
        co_return co_await Reject(rid, d);
      }
      const Result<ListPartsResult> r =
          co_await OnPool([&] { return store.ListParts(key, upload_id, marker, max_parts); });
      co_return co_await ReplyResult(h.op, rid, r);
    }
    case Op::kListUploads: {
      std::string bucket;
      ListUploadsOptions options;
      if (Status d = DecodeBody(body, &bucket, &options); !d.ok()) {
        co_return co_await Reject(rid, d);
      }
      const Result<ListUploadsResult> r =
          co_await OnPool([&] { return store.ListMultipartUploads(bucket, options); });
      co_return co_await ReplyResult(h.op, rid, r);
    }
    case Op::kStats:
      co_return co_await ServeStats(h);
    case Op::kKvProbe:
      co_return co_await ServeKvProbe(h);
    case Op::kKvGetLayers:
      co_return co_await ServeKvGetLayers(h);
    case Op::kKvPutChunks:
      co_return co_await ServeKvPutChunks(h);
    case Op::kKvDataPlane: {
      std::string bucket;
      if (Status d = DecodeBody(body, &bucket); !d.ok()) {
        co_return co_await Reject(rid, d);
      }
      const Result<DataPlaneInfo> r = co_await OnPool([&] { return store.DataPlane(bucket); });
      co_return co_await ReplyResult(h.op, rid, r);
    }
    case Op::kKvPlan:
    case Op::kKvData:
    case Op::kKvLayerReady:
    case Op::kHello:
    case Op::kError:
    case Op::kData:
    case Op::kCommit:
    case Op::kAbort:
      break;
  }
  co_return co_await Reject(
      rid, Status::InvalidArgument("op", fmt::format("{} is not a call", OpName(h.op))));
}

asio::awaitable<bool> Connection::ServeWrite(const FrameHeader& h,
                                             Result<std::unique_ptr<ObjectWriter>> opened) {
  const uint64_t rid = h.request_id;
  if (!opened.has_value()) {
    co_return co_await SendError(rid, opened.error());
  }
  std::unique_ptr<ObjectWriter> writer = std::move(*opened);
  if (!co_await Reply(h.op, rid)) {
    co_await DestroyOnPool(std::move(writer));
    co_return false;
  }
  // Data frames follow until Commit or Abort. The first Append error is kept and answered
  // at Commit: the client streams without waiting for replies.
  Status first_error;
  for (;;) {
    FrameHeader fh;
    Status error;
    const ReadKind kind = co_await ReadFrame(server_.options.io_timeout,
                                             server_.options.max_frame_bytes, &fh, &error);
    if (kind != ReadKind::kOk) {
      co_await DestroyOnPool(std::move(writer));
      co_return kind == ReadKind::kBad ? co_await Reject(fh.request_id, error) : false;
    }
    if (fh.request_id != rid) {
      co_await DestroyOnPool(std::move(writer));
      co_return co_await Reject(fh.request_id,
                                Status::InvalidArgument("request_id", "changed inside a call"));
    }
    if (fh.op == Op::kData) {
      if (first_error.ok()) {
        const ByteSpan data(body_.data(), body_.size());
        first_error = co_await OnPool([&] { return writer->Append(data); });
      }
      continue;
    }
    if (fh.op == Op::kAbort && fh.body_length == 0) {
      co_await DestroyOnPool(std::move(writer));
      co_return true;
    }
    if (fh.op != Op::kCommit || fh.body_length != 0) {
      co_await DestroyOnPool(std::move(writer));
      co_return co_await Reject(
          rid,
          Status::InvalidArgument("op", fmt::format("{} inside a streamed write", OpName(fh.op))));
    }
    if (!first_error.ok()) {
      co_await DestroyOnPool(std::move(writer));
      co_return co_await SendError(rid, first_error);
    }
    const Result<ObjectMeta> meta = co_await OnPool([&] { return writer->Commit(); });
    co_await DestroyOnPool(std::move(writer));
    co_return co_await ReplyResult(Op::kCommit, rid, meta);
  }
}

asio::awaitable<bool> Connection::ServeGet(const FrameHeader& h) {
  const uint64_t rid = h.request_id;
  ObjectKey key;
  ByteRange range;
  if (Status d = DecodeBody(ByteSpan(body_.data(), body_.size()), &key, &range); !d.ok()) {
    co_return co_await Reject(rid, d);
  }
  Result<std::unique_ptr<ObjectReader>> opened =
      co_await OnPool([&] { return server_.store->Get(key, range); });
  if (!opened.has_value()) {
    co_return co_await SendError(rid, opened.error());
  }
  std::unique_ptr<ObjectReader> reader = std::move(*opened);
  GetReply reply{reader->meta(), reader->offset(), reader->length()};
  bool open = co_await Reply(Op::kGet, rid, reply);
  // Data frames of at most kStreamChunkBytes; the socket's flow control paces us to the
  // client, so one piece is all this connection ever holds.
  uint64_t remaining = reply.length;
  chunk_.resize(std::min<uint64_t>(kStreamChunkBytes, remaining));
  NoteMemory();
  while (open && remaining > 0) {
    const MutableByteSpan piece(chunk_.data(), std::min<uint64_t>(chunk_.size(), remaining));
    const Result<uint64_t> n = co_await OnPool([&] { return reader->Read(piece); });
    if (!n.has_value() || *n == 0 || *n > piece.size()) {
      const Status st = !n.has_value()
                            ? n.error()
                            : Status::Internal("object read returned a bad length mid-stream");
      kLog.Error("get failed mid-stream req={:016x} conn={} status={}", rid, id_, st.ToString());
      open = co_await SendError(rid, st);
      break;
    }
    open = co_await WriteData(Op::kData, rid, {}, ByteSpan(chunk_.data(), *n));
    remaining -= *n;
  }
  co_await DestroyOnPool(std::move(reader));
  co_return open;
}

asio::awaitable<bool> Connection::ServeStats(const FrameHeader& h) {
  if (Status d = DecodeBody(ByteSpan(body_.data(), body_.size())); !d.ok()) {
    co_return co_await Reject(h.request_id, d);
  }
  Result<StoreStats> stats = co_await OnPool([&] { return server_.store->Stats(); });
  if (!stats.has_value()) {
    co_return co_await SendError(h.request_id, stats.error());
  }
  for (auto& figure : server_.Figures()) {
    stats->figures.push_back(std::move(figure));
  }
  co_return co_await Reply(Op::kStats, h.request_id, *stats);
}

// --- Descriptor calls ---

namespace {

// Runs a descriptor call's store task on the store's descriptor executor, shared with any
// other front end of the store (docs/decisions.md, "One bounded executor for descriptor
// work"): kResourceExhausted (field "kv.descriptor_threads") when it is full. A store without
// one (it forwards descriptor calls itself) uses the store pool.
template <typename Server, typename F>
Status SubmitDescriptorTask(Server& server, F task) {
  if (BoundedExecutor* executor = server.store->descriptor_executor()) {
    return executor->Submit(std::move(task));
  }
  asio::post(server.store_pool, std::move(task));
  return Status::Ok();
}

}  // namespace
// The descriptor arrives as its POST-body text and is checked here with the gateway's limits
// (DecodeDescriptorText): a bad one is answered with the field at fault and the connection
// stays usable, since the frame itself was well formed.

asio::awaitable<bool> Connection::ServeKvProbe(const FrameHeader& h) {
  const uint64_t rid = h.request_id;
  std::string bucket;
  std::string text;
  std::string principal;  // unused: a probe moves no byte over the data plane
  if (Status d = DecodeBody(ByteSpan(body_.data(), body_.size()), &bucket, &text, &principal);
      !d.ok()) {
    co_return co_await Reject(rid, d);
  }
  Result<descriptor::Descriptor> d = DecodeDescriptorText(text);
  if (!d.has_value()) {
    co_return co_await SendError(rid, d.error());
  }
  server_.kv_probes.fetch_add(1, std::memory_order_relaxed);
  const Result<KvProbeResult> r =
      co_await OnPool([&] { return server_.store->ProbeChunks(bucket, *d); });
  co_return co_await ReplyResult(h.op, rid, r);
}

// GetLayers runs on the store pool. With a data-plane target the store writes the caller's
// memory with its own UCX data plane and only the plan and the report come back here;
// without one the payload streams in kKvData frames (and kKvLayerReady after each layer)
// through a KvGetStream. Frames are written in the order the store produced them, the
// report or error last.
asio::awaitable<bool> Connection::ServeKvGetLayers(const FrameHeader& h) {
  const uint64_t rid = h.request_id;
  std::string bucket;
  std::string text;
  std::string principal;
  if (Status d = DecodeBody(ByteSpan(body_.data(), body_.size()), &bucket, &text, &principal);
      !d.ok()) {
    co_return co_await Reject(rid, d);
  }
  Result<descriptor::Descriptor> decoded = DecodeDescriptorText(text);
  if (!decoded.has_value()) {
    co_return co_await SendError(rid, decoded.error());
  }
  if (decoded->target.has_value()) {
    decoded->target->principal = std::move(principal);
  }
  server_.kv_gets.fetch_add(1, std::memory_order_relaxed);
  const bool to_target = decoded->target.has_value();
  auto stream = std::make_shared<KvGetStream>(!to_target, server_.options.io_timeout);
  stream->set_wake(Waker());
  if (!to_target) {
    server_.NotePeak(body_.capacity() + kKvStreamBuffers * kStreamChunkBytes);
  }
  // On the store's descriptor executor (Store::descriptor_executor); a full one refuses the
  // call (kResourceExhausted) before anything is read.
  const Status admitted = SubmitDescriptorTask(
      server_, [stream, store = server_.store, bucket = std::move(bucket), d = std::move(*decoded),
                to_target, guard = asio::make_work_guard(server_.io)]() mutable {
        Result<KvGetReport> r =
            store->GetLayers(bucket, d, to_target ? nullptr : stream.get(),
                             [&stream](const KvPlan& plan) { return stream->PushPlan(plan); });
        stream->Done(std::move(r));
      });
  if (!admitted.ok()) {
    co_return co_await SendError(rid, admitted);
  }
  for (;;) {
    bool done = false;
    std::optional<KvGetStream::Frame> f = stream->Next(&done);
    if (f.has_value()) {
      const ByteSpan data =
          f->buffer.valid() ? ByteSpan(f->buffer.bytes().first(f->length)) : ByteSpan();
      if (!co_await WriteData(f->op, rid, f->head, data)) {
        // The caller is gone: the store call stops at its next write (or plan) and ends on
        // its own; this connection closes.
        stream->Fail(Status::Unavailable("the connection to the caller was lost"));
        kLog.Warn("descriptor get stream broken req={:016x} conn={} peer={}", rid, id_, peer_);
        co_return false;
      }
      continue;
    }
    if (done) {
      break;
    }
    co_await WaitForWake();
  }
  Result<KvGetReport> r = stream->TakeResult();
  if (r.has_value()) {
    if (to_target) {
      server_.kv_get_target_bytes.fetch_add(r->plan.payload_bytes, std::memory_order_relaxed);
      server_.kv_get_target_writes.fetch_add(r->writes, std::memory_order_relaxed);
    } else {
      server_.kv_get_stream_bytes.fetch_add(stream->streamed(), std::memory_order_relaxed);
    }
  }
  co_return co_await ReplyResult(h.op, rid, r);
}

// PutChunks runs on the store pool while this strand reads the call's frames: data frames
// (only without a target) feed a KvPutStream, and kCommit or kAbort ends the body. The one
// reply (report or error) follows kCommit/kAbort, so the connection is at a frame boundary
// again even when the store call failed early (the rest of the body is then drained unread).
asio::awaitable<bool> Connection::ServeKvPutChunks(const FrameHeader& h) {
  const uint64_t rid = h.request_id;
  std::string bucket;
  std::string text;
  std::string principal;
  if (Status d = DecodeBody(ByteSpan(body_.data(), body_.size()), &bucket, &text, &principal);
      !d.ok()) {
    co_return co_await Reject(rid, d);
  }
  Result<descriptor::Descriptor> decoded = DecodeDescriptorText(text);
  if (decoded.has_value() && decoded->target.has_value()) {
    decoded->target->principal = std::move(principal);
  }
  const bool to_target = decoded.has_value() && decoded->target.has_value();
  std::shared_ptr<KvPutStream> stream;
  if (decoded.has_value()) {
    server_.kv_puts.fetch_add(1, std::memory_order_relaxed);
    stream = std::make_shared<KvPutStream>(server_.options.io_timeout);
    stream->set_wake(Waker());
    const Status admitted =
        SubmitDescriptorTask(server_, [stream, store = server_.store, bucket = std::move(bucket),
                                       d = std::move(*decoded), to_target,
                                       guard = asio::make_work_guard(server_.io)]() mutable {
          stream->Done(store->PutChunks(bucket, d, to_target ? nullptr : stream.get()));
        });
    if (!admitted.ok()) {  // refused: drain the body to kCommit, then answer the refusal
      stream = nullptr;
      decoded = admitted;
    }
  }
  auto abandon = [&stream] {
    if (stream != nullptr) {
      stream->Close(/*abort=*/true);  // the store call ends on its own
    }
  };
  bool aborted = false;
  for (;;) {
    FrameHeader fh;
    Status error;
    const ReadKind kind = co_await ReadFrame(server_.options.io_timeout,
                                             server_.options.max_frame_bytes, &fh, &error);
    if (kind != ReadKind::kOk) {
      abandon();
      co_return kind == ReadKind::kBad ? co_await Reject(fh.request_id, error) : false;
    }
    if (fh.request_id != rid) {
      abandon();
      co_return co_await Reject(fh.request_id,
                                Status::InvalidArgument("request_id", "changed inside a call"));
    }
    if (fh.op == Op::kData) {
      if (to_target) {
        abandon();
        co_return co_await Reject(
            rid, Status::InvalidArgument("op", "data frames in a descriptor PUT with a target"));
      }
      if (stream == nullptr) {
        continue;  // the descriptor was refused: drain to kCommit, then answer
      }
      while (!stream->HasRoom()) {
        co_await WaitForWake();
      }
      stream->Push(std::move(body_));
      body_ = {};
      continue;
    }
    if ((fh.op != Op::kCommit && fh.op != Op::kAbort) || fh.body_length != 0) {
      abandon();
      co_return co_await Reject(
          rid,
          Status::InvalidArgument("op", fmt::format("{} inside a descriptor PUT", OpName(fh.op))));
    }
    aborted = fh.op == Op::kAbort;
    break;
  }
  if (stream == nullptr) {
    co_return co_await SendError(rid, decoded.error());
  }
  // kCommit: the body is complete (PutChunks checks its length); kAbort: abandoned.
  stream->Close(aborted);
  while (!stream->done()) {
    co_await WaitForWake();
  }
  Result<KvPutReport> r = stream->TakeResult();
  if (r.has_value()) {
    (to_target ? server_.kv_put_pulled_bytes : server_.kv_put_stream_bytes)
        .fetch_add(r->bytes, std::memory_order_relaxed);
  }
  co_return co_await ReplyResult(h.op, rid, r);
}

// --- Accepting and shutting down ---

bool RpcServer::Impl::Register(const std::shared_ptr<Connection>& c) {
  std::lock_guard<std::mutex> lock(mu);
  if (stopping_locked || connections.size() >= options.max_connections) {
    return false;
  }
  connections.insert(c);
  connections_active.fetch_add(1);
  connections_total.fetch_add(1);
  return true;
}

void RpcServer::Impl::Unregister(const std::shared_ptr<Connection>& c) {
  std::lock_guard<std::mutex> lock(mu);
  if (connections.erase(c) > 0) {
    connections_active.fetch_sub(1);
  }
}

asio::awaitable<void> RpcServer::Impl::Accept() {
  for (;;) {
    error_code ec;
    tcp::socket socket(asio::make_strand(io));
    co_await acceptor.async_accept(socket, Awaitable(ec));
    if (ec) {
      if (!acceptor.is_open() || stopping()) {
        co_return;
      }
      kLog.Warn("accept failed error={}", ec.message());
      continue;
    }
    auto conn =
        std::make_shared<Connection>(*this, std::move(socket), next_connection_id.fetch_add(1));
    const bool registered = Register(conn);
    auto log_exception = [](std::exception_ptr e) {
      if (e) {
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& ex) {
          kLog.Error("connection ended by exception what={}", ex.what());
        }
      }
    };
    asio::co_spawn(conn->executor(), conn->Watchdog(), log_exception);
    if (!registered) {
      asio::co_spawn(
          conn->executor(),
          conn->RefuseAndClose(Status::ResourceExhausted(
              "connections", stopping() ? "the server is shutting down" : "too many connections")),
          log_exception);
      continue;
    }
    asio::co_spawn(conn->executor(), conn->Run(), log_exception);
  }
}

void RpcServer::Impl::BeginShutdown() {
  std::vector<std::shared_ptr<Connection>> open;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (stopping_locked) {
      return;
    }
    stopping_locked = true;
    stopping_flag.store(true, std::memory_order_release);
    open.assign(connections.begin(), connections.end());
  }
  kLog.Info("shutting down: no new connections, draining open={}", open.size());
  asio::post(control, [this] {
    error_code ec;
    acceptor.close(ec);
    signals.cancel(ec);
  });
  for (const std::shared_ptr<Connection>& c : open) {
    asio::post(c->executor(), [c] { c->CloseIfIdle(); });
  }
}

// --- RpcServer ---

RpcServer::RpcServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RpcServer::~RpcServer() {
  Shutdown();
  Wait();
}

Result<std::unique_ptr<RpcServer>> RpcServer::Start(Store* store, const RpcServerOptions& options,
                                                    std::string secret) {
  OC_RETURN_IF_ERROR(options.Validate());
  if (secret.empty()) {
    return Status::InvalidArgument("secret", "the RPC shared secret must not be empty");
  }
  if (secret.size() > kMaxSecretBytes) {
    return Status::InvalidArgument("secret", fmt::format("longer than {} bytes", kMaxSecretBytes));
  }
  OC_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(options.listen, "rpc.listen"));
  auto impl = std::make_unique<Impl>(store, options, std::move(secret));
  error_code ec;
  tcp::resolver resolver(impl->io);
  const auto results =
      resolver.resolve(hp.host, std::to_string(hp.port),
                       tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || results.empty()) {
    return Status(Code::kIOError, Subject::kNone, "rpc.listen",
                  fmt::format("cannot resolve {}: {}", hp.host, ec.message()));
  }
  const tcp::endpoint endpoint = results.begin()->endpoint();
  tcp::acceptor& acceptor = impl->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) {
    acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  }
  if (!ec) {
    acceptor.bind(endpoint, ec);
  }
  if (!ec) {
    acceptor.listen(asio::socket_base::max_listen_connections, ec);
  }
  if (ec) {
    return Status(Code::kIOError, Subject::kNone, "rpc.listen",
                  fmt::format("cannot listen on {}: {}", options.listen, ec.message()));
  }
  impl->host = endpoint.address().to_string();
  impl->port = acceptor.local_endpoint(ec).port();
  Impl* raw = impl.get();
  asio::co_spawn(raw->control, raw->Accept(), asio::detached);
  for (uint32_t i = 0; i < options.io_threads; ++i) {
    raw->io_threads.emplace_back([raw] { raw->io.run(); });
  }
  return std::unique_ptr<RpcServer>(new RpcServer(std::move(impl)));
}

uint16_t RpcServer::port() const { return impl_->port; }

std::string RpcServer::endpoint() const {
  const bool v6 = impl_->host.find(':') != std::string::npos;
  return v6 ? fmt::format("[{}]:{}", impl_->host, impl_->port)
            : fmt::format("{}:{}", impl_->host, impl_->port);
}

void RpcServer::HandleSignals() {
  Impl* impl = impl_.get();
  // Registered now, so a signal from here on is queued for the wait posted below.
  error_code ec;
  impl->signals.add(SIGTERM, ec);
  impl->signals.add(SIGINT, ec);
  asio::post(impl->control, [impl] {
    impl->signals.async_wait([impl](const error_code& wait_ec, int signal) {
      if (!wait_ec) {
        kLog.Info("signal received signal={}", signal);
        impl->BeginShutdown();
      }
    });
  });
}

void RpcServer::Shutdown() { impl_->BeginShutdown(); }

void RpcServer::Wait() {
  std::call_once(impl_->joined, [this] {
    for (std::thread& t : impl_->io_threads) {
      t.join();
    }
    impl_->store_pool.join();
  });
}

std::vector<std::pair<std::string, uint64_t>> RpcServer::Figures() const {
  return impl_->Figures();
}

}  // namespace oc::storage::rpc
