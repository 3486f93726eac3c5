#pragma once
// One client connection of the RPC server (oc/storage/rpc_server.h). Private to
// oc_storage_rpc_server; its members are defined by concern:
//   server_frame_io.cc       the watchdog, reading and writing frames, errors, the handshake,
//                            the call loop
//   server_unary_calls.cc    the op table (Dispatch) and ServeUnary, one template for every
//                            call of calls.h's UnaryCalls; ServeStats
//   server_object_streams.cc streamed writes (PutBegin, UploadPartBegin) and Get
//   server_kv_calls.cc       the descriptor calls (KvProbe, KvGetLayers, KvPutChunks)
//
// A connection is a coroutine serving calls one after another and a watchdog coroutine that
// closes the socket when the current deadline passes. Both run on the connection's strand;
// the shared_ptr is held by both (a genuinely shared async lifetime).
//
// Thread safety: every member runs on the connection's strand, except Waker()'s function,
// which may be called from any thread.

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "oc/common/bytes.h"
#include "oc/common/result.h"
#include "oc/common/status.h"
#include "oc/storage/store.h"
#include "rpc/calls.h"
#include "rpc/server_impl.h"
#include "rpc/wire.h"

namespace oc::storage::rpc {

// Deadline while a call waits on the store: store calls are not timed out by the network.
inline constexpr std::chrono::hours kNoDeadline{24 * 365};

// An awaitable completion token that stores the error in `ec` instead of throwing.
inline auto Awaitable(boost::system::error_code& ec) {
  return boost::asio::redirect_error(boost::asio::use_awaitable, ec);
}

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(RpcServer::Impl& server, boost::asio::ip::tcp::socket socket, uint64_t id);

  boost::asio::any_io_executor executor() { return socket_.get_executor(); }

  boost::asio::awaitable<void> Run();
  boost::asio::awaitable<void> Watchdog();

  // On the strand: closes the connection if it is waiting for its next call.
  void CloseIfIdle();

  // Sends one error frame and closes: for clients the server cannot keep serving.
  boost::asio::awaitable<void> RefuseAndClose(const Status& status);

 private:
  enum class ReadKind { kOk, kClosed, kBad };
  // Serves one call whose request frame is in body_; false once the connection must close.
  using Handler = boost::asio::awaitable<bool> (Connection::*)(const FrameHeader& h);
  using HandlerTable = std::array<Handler, 256>;  // indexed by the op's byte

  // --- server_frame_io.cc ---
  void Arm(std::chrono::steady_clock::duration timeout);
  void Finish();
  void NoteMemory();
  void ReleaseIdleBuffers();
  ByteSpan body() const { return ByteSpan(body_.data(), body_.size()); }
  // `allow_kv_request`: a descriptor call's request may be up to kMaxKvRequestBodyBytes.
  boost::asio::awaitable<ReadKind> ReadFrame(std::chrono::milliseconds timeout, uint64_t max_body,
                                             FrameHeader* h, Status* error,
                                             bool allow_kv_request = false);
  boost::asio::awaitable<bool> WriteOut();
  boost::asio::awaitable<bool> WriteData(Op op, uint64_t rid, ByteSpan prefix, ByteSpan data);
  boost::asio::awaitable<bool> SendError(uint64_t rid, const Status& status);
  // A protocol error: counted, logged, answered with an error frame; returns false (close).
  boost::asio::awaitable<bool> Reject(uint64_t rid, const Status& status);
  boost::asio::awaitable<bool> Handshake();

  template <typename... Fields>
  boost::asio::awaitable<bool> Reply(Op op, uint64_t rid, const Fields&... fields) {
    out_.clear();
    EncodeFrame(&out_, op, kFlagReply, rid, fields...);
    co_return co_await WriteOut();
  }
  // The reply of a call that returned `status`: an empty reply frame, or the error frame.
  boost::asio::awaitable<bool> Answer(Op op, uint64_t rid, const Status& status) {
    if (!status.ok()) {
      co_return co_await SendError(rid, status);
    }
    co_return co_await Reply(op, rid);
  }
  // The reply of a call that returned `result`: the value, or the error frame.
  template <typename T>
  boost::asio::awaitable<bool> Answer(Op op, uint64_t rid, const Result<T>& result) {
    if (!result.has_value()) {
      co_return co_await SendError(rid, result.error());
    }
    co_return co_await Reply(op, rid, *result);
  }

  // Runs f() on the store pool and resumes on this connection's strand with its result.
  template <typename F>
  boost::asio::awaitable<std::invoke_result_t<F&>> OnPool(F f) {
    using R = std::invoke_result_t<F&>;
    Arm(kNoDeadline);
    std::optional<R> result;
    co_await boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&, void()>(
        [&](auto handler) {
          // The guard keeps io_context::run() going while only the pool has work.
          boost::asio::post(server_.store_pool,
                            [&result, &f, handler = std::move(handler),
                             guard = boost::asio::make_work_guard(server_.io)]() mutable {
                              result.emplace(f());
                              auto ex = boost::asio::get_associated_executor(handler);
                              boost::asio::dispatch(ex, std::move(handler));
                            });
        },
        boost::asio::use_awaitable);
    co_return std::move(*result);
  }
  template <typename T>
  boost::asio::awaitable<void> DestroyOnPool(std::unique_ptr<T> p) {
    // Closing a reader or discarding a writer may touch the engine: not on an I/O thread.
    co_await OnPool([&p] {
      p.reset();
      return 0;
    });
  }

  // A function that wakes WaitForWake() from any thread (it posts to this strand).
  std::function<void()> Waker() {
    return [self = shared_from_this()] {
      boost::asio::post(self->socket_.get_executor(), [self] { self->wake_.cancel(); });
    };
  }
  // Suspends until a Waker() call (or at once if one is already queued on the strand).
  // Callers re-check their condition on this strand before each wait, so no wake-up is lost.
  boost::asio::awaitable<void> WaitForWake() {
    Arm(kNoDeadline);
    wake_.expires_at(std::chrono::steady_clock::time_point::max());
    boost::system::error_code ec;
    co_await wake_.async_wait(Awaitable(ec));
  }

  // --- server_unary_calls.cc ---
  static const HandlerTable& Handlers();
  template <typename... Calls>
  static void AddUnary(HandlerTable& table, CallList<Calls...>);
  boost::asio::awaitable<bool> Dispatch(const FrameHeader& h);
  template <typename C>
  boost::asio::awaitable<bool> ServeUnary(const FrameHeader& h);
  boost::asio::awaitable<bool> ServeStats(const FrameHeader& h);

  // --- server_object_streams.cc ---
  template <typename C>
  boost::asio::awaitable<bool> ServeOpenWrite(const FrameHeader& h);
  boost::asio::awaitable<bool> ServeWrite(const FrameHeader& h,
                                          Result<std::unique_ptr<ObjectWriter>> writer);
  boost::asio::awaitable<bool> ServeGet(const FrameHeader& h);

  // --- server_kv_calls.cc ---
  boost::asio::awaitable<bool> ServeKvProbe(const FrameHeader& h);
  boost::asio::awaitable<bool> ServeKvGetLayers(const FrameHeader& h);
  boost::asio::awaitable<bool> ServeKvPutChunks(const FrameHeader& h);

  RpcServer::Impl& server_;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer timer_;
  boost::asio::steady_timer wake_;  // WaitForWake(): cancelled by Waker()
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

}  // namespace oc::storage::rpc
