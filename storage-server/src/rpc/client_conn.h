#pragma once
// ClientConn is one blocking client connection of the storage RPC (wire.h): a POSIX TCP
// socket whose every read and write waits with poll() against a deadline. The remote
// store (remote_pool.h) pools these; tests use them to speak the protocol directly.
//
// The client is blocking on purpose: Store is a synchronous interface called from the
// gateway's own worker threads, and a plain socket per call keeps Asio out of the caller.
//
// Errors: a failed or timed-out read or write, or the peer closing, is kUnavailable and
// marks the connection broken (it must then be dropped, never reused).
// Thread safety: one thread at a time.

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "oc/common/bytes.h"
#include "oc/common/result.h"
#include "oc/common/status.h"
#include "rpc/wire.h"

namespace oc::storage::rpc {

class ClientConn {
 public:
  // Connects to `endpoint` within `timeout`; kUnavailable if it cannot.
  static Result<std::unique_ptr<ClientConn>> Connect(const HostPort& endpoint,
                                                     std::chrono::milliseconds timeout);
  ~ClientConn();
  ClientConn(const ClientConn&) = delete;
  ClientConn& operator=(const ClientConn&) = delete;

  // Sends Hello with `secret` and reads the answer: OK, or the server's error
  // (kUnauthenticated for a wrong secret).
  Status Handshake(std::string_view secret, uint64_t request_id);

  // Writes every piece, in order, with one deadline of io timeout.
  Status WriteAll(std::span<const ByteSpan> pieces);
  Status WriteAll(ByteSpan bytes) { return WriteAll(std::span<const ByteSpan>(&bytes, 1)); }
  // Writes one frame header for (op, request_id) followed by `body`, without copying it.
  Status WriteFrame(Op op, uint64_t request_id, ByteSpan body);
  // Fills `out` exactly.
  Status ReadExact(MutableByteSpan out);
  // Reads and checks one header; bodies above `max_body` are refused (and the connection
  // is marked broken: the stream can no longer be followed).
  Result<FrameHeader> ReadHeader(uint64_t max_body);
  // Reads a header and its whole body (at most kMaxFrameBodyBytes).
  Status ReadFrame(FrameHeader* header, std::vector<std::byte>* body);

  // Closes the sending direction (the peer reads EOF); reads still work. For tests.
  void ShutdownWrite();

  // False once an I/O error happened or the protocol was broken.
  bool healthy() const { return !broken_; }
  void MarkBroken() { broken_ = true; }
  // For a pooled connection about to be reused: false if the peer has closed it or sent
  // something unexpected while it sat idle.
  bool LooksAlive() const;

  void set_io_timeout(std::chrono::milliseconds timeout) { io_timeout_ = timeout; }
  const std::string& peer() const { return peer_; }

 private:
  ClientConn(int fd, std::string peer) : fd_(fd), peer_(std::move(peer)) {}
  Status Fail(std::string_view what);
  int fd_;
  std::string peer_;
  bool broken_ = false;
  std::chrono::milliseconds io_timeout_{120'000};
};

}  // namespace oc::storage::rpc
