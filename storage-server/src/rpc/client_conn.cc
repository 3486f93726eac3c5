#include "rpc/client_conn.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include <fmt/core.h>

namespace oc::storage::rpc {
namespace {

using Clock = std::chrono::steady_clock;

// Most iovecs one sendmsg() takes here; callers pass a header and a piece or two.
constexpr size_t kMaxPieces = 8;

int RemainingMs(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left.count(), 1 << 30));
}

// Waits until fd is ready for `events` or the deadline passes; false on timeout.
bool WaitReady(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int ms = RemainingMs(deadline);
    const int rc = ::poll(&p, 1, ms);
    if (rc > 0) {
      return true;
    }
    if (rc == 0 || (rc < 0 && errno != EINTR)) {
      return false;
    }
  }
}

}  // namespace

Result<std::unique_ptr<ClientConn>> ClientConn::Connect(const HostPort& endpoint,
                                                        std::chrono::milliseconds timeout) {
  const std::string peer = fmt::format("{}:{}", endpoint.host, endpoint.port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int gai =
      ::getaddrinfo(endpoint.host.c_str(), std::to_string(endpoint.port).c_str(), &hints, &found);
  if (gai != 0) {
    return Status::Unavailable(
        fmt::format("cannot resolve storage server {}: {}", peer, ::gai_strerror(gai)));
  }
  const Clock::time_point deadline = Clock::now() + timeout;
  std::string last_error = "no address";
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    const int fd =
        ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last_error = std::strerror(errno);
      continue;
    }
    int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      if (WaitReady(fd, POLLOUT, deadline)) {
        int err = 0;
        socklen_t len = sizeof(err);
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err == 0 ? 0 : -1;
        errno = err;
      } else {
        errno = ETIMEDOUT;
      }
    }
    if (rc != 0) {
      last_error = std::strerror(errno);
      ::close(fd);
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    ::freeaddrinfo(found);
    return std::unique_ptr<ClientConn>(new ClientConn(fd, peer));
  }
  ::freeaddrinfo(found);
  return Status::Unavailable(
      fmt::format("cannot connect to storage server {}: {}", peer, last_error));
}

ClientConn::~ClientConn() { ::close(fd_); }

Status ClientConn::Fail(std::string_view what) {
  broken_ = true;
  return Status::Unavailable(fmt::format("storage server {}: {}", peer_, what));
}

Status ClientConn::WriteAll(std::span<const ByteSpan> pieces) {
  if (broken_) {
    return Status::Unavailable(fmt::format("storage server {}: connection broken", peer_));
  }
  if (pieces.size() > kMaxPieces) {
    return Status::Internal("too many pieces for one write");
  }
  std::array<iovec, kMaxPieces> iov;
  size_t count = 0;
  for (const ByteSpan& p : pieces) {
    if (!p.empty()) {
      iov[count++] = iovec{const_cast<std::byte*>(p.data()), p.size()};
    }
  }
  const Clock::time_point deadline = Clock::now() + io_timeout_;
  size_t first = 0;
  while (first < count) {
    msghdr msg{};
    msg.msg_iov = iov.data() + first;
    msg.msg_iovlen = count - first;
    const ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (!WaitReady(fd_, POLLOUT, deadline)) {
          return Fail("write timed out");
        }
        continue;
      }
      return Fail(fmt::format("write failed: {}", std::strerror(errno)));
    }
    size_t sent = static_cast<size_t>(n);
    while (first < count && sent >= iov[first].iov_len) {
      sent -= iov[first].iov_len;
      ++first;
    }
    if (first < count) {
      iov[first].iov_base = static_cast<std::byte*>(iov[first].iov_base) + sent;
      iov[first].iov_len -= sent;
    }
  }
  return Status::Ok();
}

Status ClientConn::WriteFrame(Op op, uint64_t request_id, ByteSpan body) {
  std::array<std::byte, kHeaderBytes> header;
  EncodeHeader(FrameHeader{kVersion, op, 0, request_id, body.size()}, header);
  const std::array<ByteSpan, 2> pieces{ByteSpan(header), body};
  return WriteAll(pieces);
}

Status ClientConn::ReadExact(MutableByteSpan out) {
  if (broken_) {
    return Status::Unavailable(fmt::format("storage server {}: connection broken", peer_));
  }
  const Clock::time_point deadline = Clock::now() + io_timeout_;
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::recv(fd_, out.data() + got, out.size() - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) {
      return Fail("connection closed by the server");
    }
    if (errno == EINTR) {
      continue;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!WaitReady(fd_, POLLIN, deadline)) {
        return Fail("read timed out");
      }
      continue;
    }
    return Fail(fmt::format("read failed: {}", std::strerror(errno)));
  }
  return Status::Ok();
}

Result<FrameHeader> ClientConn::ReadHeader(uint64_t max_body) {
  std::array<std::byte, kHeaderBytes> raw;
  OC_RETURN_IF_ERROR(ReadExact(raw));
  FrameHeader h;
  if (Status st = DecodeHeader(raw, max_body, &h); !st.ok()) {
    broken_ = true;
    return Status::Internal(
        fmt::format("storage server {} sent a bad frame: {}", peer_, st.ToString()));
  }
  return h;
}

Status ClientConn::ReadFrame(FrameHeader* header, std::vector<std::byte>* body) {
  OC_ASSIGN_OR_RETURN(*header, ReadHeader(kMaxFrameBodyBytes));
  body->resize(header->body_length);
  return ReadExact(*body);
}

Status ClientConn::Handshake(std::string_view secret, uint64_t request_id) {
  std::vector<std::byte> frame;
  EncodeFrame(&frame, Op::kHello, 0, request_id, secret);
  OC_RETURN_IF_ERROR(WriteAll(frame));
  FrameHeader h;
  std::vector<std::byte> body;
  OC_RETURN_IF_ERROR(ReadFrame(&h, &body));
  if (h.op == Op::kError) {
    Status st;
    broken_ = true;  // the server closes after refusing a handshake
    if (!DecodeBody(body, &st).ok()) {
      return Status::Internal(fmt::format("storage server {}: malformed error frame", peer_));
    }
    return st;
  }
  if (h.op != Op::kHello || h.request_id != request_id || (h.flags & kFlagReply) == 0 ||
      !body.empty()) {
    broken_ = true;
    return Status::Internal(fmt::format("storage server {}: unexpected handshake reply", peer_));
  }
  return Status::Ok();
}

void ClientConn::ShutdownWrite() { ::shutdown(fd_, SHUT_WR); }

bool ClientConn::LooksAlive() const {
  if (broken_) {
    return false;
  }
  // An idle connection has nothing to read; readable means EOF, reset or stray bytes.
  pollfd p{fd_, POLLIN, 0};
  const int rc = ::poll(&p, 1, 0);
  return rc == 0;
}

}  // namespace oc::storage::rpc
