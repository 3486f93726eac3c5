// The remote store's client side of a descriptor GET (wire.h kKvGetLayers) against a scripted
// server that breaks or fails the stream mid-way: the caller's sink is finished once, with the
// error.

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <functional>
#include <string>
#include <thread>

#include "kv_test_util.h"
#include "oc/descriptor/codec.h"
#include "rpc_kv_test_util.h"

namespace oc::storage::test {
namespace {

using kvtest::Descriptor;
using kvtest::MakeDescriptor;
using kvtest::Shape;
using kvtest::StoredLayout;
using rpc::FrameHeader;
using rpc::Op;

// --- A scripted server: the client against streams a server breaks ---
// Appends a kKvData frame: u64 offset, then `n` bytes of `value`.
void AppendData(std::vector<std::byte>* out, uint64_t rid, uint64_t offset, uint64_t n,
                uint8_t value) {
  std::vector<std::byte> body(8 + n, std::byte{value});
  PutLittleEndian64(offset, body.data());
  const size_t start = out->size();
  out->resize(start + rpc::kHeaderBytes);
  rpc::EncodeHeader(
      FrameHeader{rpc::kVersion, Op::kKvData, rpc::kFlagReply, rid, body.size()},
      std::span<std::byte, rpc::kHeaderBytes>(out->data() + start, rpc::kHeaderBytes));
  out->insert(out->end(), body.begin(), body.end());
}

TEST(RpcKvClient, BrokenOrFailedStreamsFinishTheSinkOnceWithTheError) {
  const Shape s{2, 2, 100, StoredLayout::kL2TD};
  Descriptor d = MakeDescriptor(s, true, 1);
  struct Row {
    std::string name;
    // Builds the frames after the plan for request id `rid`.
    std::function<void(std::vector<std::byte>*, uint64_t)> after_plan;
    Code want;
  };
  const std::vector<Row> rows = {
      {"error mid-stream",
       [](std::vector<std::byte>* out, uint64_t rid) {
         AppendData(out, rid, 0, 100, 1);
         rpc::EncodeFrame(out, Op::kError, rpc::kFlagReply, rid,
                          Status(Code::kFailedPrecondition, Subject::kKey, "", "overwritten"));
       },
       Code::kFailedPrecondition},
      {"truncated stream",
       [](std::vector<std::byte>* out, uint64_t rid) {
         AppendData(out, rid, 0, 100, 1);
         out->resize(out->size() - 30);  // the last frame is cut short, then the socket closes
       },
       Code::kUnavailable},
      {"data out of order",
       [](std::vector<std::byte>* out, uint64_t rid) { AppendData(out, rid, 100, 100, 1); },
       Code::kInternal},
      {"data past the payload",
       [](std::vector<std::byte>* out, uint64_t rid) { AppendData(out, rid, 0, 401, 1); },
       Code::kInternal},
      {"report before the whole payload",
       [](std::vector<std::byte>* out, uint64_t rid) {
         AppendData(out, rid, 0, 100, 1);
         KvGetReport report;
         report.plan = KvPlan{2, 2, descriptor::ServeMode::kChunkwise, 400, "x"};
         rpc::EncodeFrame(out, Op::kKvGetLayers, rpc::kFlagReply, rid, report);
       },
       Code::kInternal},
      {"bad layer-ready",
       [](std::vector<std::byte>* out, uint64_t rid) {
         rpc::EncodeFrame(out, Op::kKvLayerReady, rpc::kFlagReply, rid, uint32_t{2});
       },
       Code::kInternal},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    // Answers the remote store's ServerInfo at connect as a server older than that op does
    // (an unknown op: an error frame, then the connection closes), then accepts one more
    // connection, answers Hello, reads the request, sends a plan and the row's frames with
    // the request's id (the remote store numbers calls from a random start), half-closes and
    // drains until the client goes.
    class EchoServer {
     public:
      explicit EchoServer(const Row& row) : row_(row) {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof(a);
        EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
        EXPECT_EQ(::listen(fd_, 4), 0);
        EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len), 0);
        port_ = ntohs(a.sin_port);
        thread_ = std::thread([this] { Serve(); });
      }
      ~EchoServer() {
        thread_.join();
        ::close(fd_);
      }
      std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }

     private:
      static bool Read(int fd, FrameHeader* h) {
        std::array<std::byte, rpc::kHeaderBytes> header;
        if (::recv(fd, header.data(), header.size(), MSG_WAITALL) != ssize_t(header.size()) ||
            !rpc::DecodeHeader(header, rpc::kMaxFrameBodyBytes, h).ok()) {
          return false;
        }
        std::vector<std::byte> body(h->body_length);
        return body.empty() ||
               ::recv(fd, body.data(), body.size(), MSG_WAITALL) == ssize_t(body.size());
      }
      void Serve() {
        int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) {
          return;
        }
        FrameHeader h;
        std::vector<std::byte> out;
        if (Read(c, &h)) {
          rpc::EncodeFrame(&out, Op::kHello, rpc::kFlagReply, h.request_id);
          (void)::send(c, out.data(), out.size(), MSG_NOSIGNAL);
          out.clear();
          if (Read(c, &h) && h.op == Op::kServerInfo) {
            rpc::EncodeFrame(&out, Op::kError, rpc::kFlagReply, h.request_id,
                             Status(Code::kUnimplemented, Subject::kNone, "op", "unknown op 51"));
          }
          (void)::send(c, out.data(), out.size(), MSG_NOSIGNAL);
          out.clear();
        }
        ::close(c);
        c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) {
          return;
        }
        if (Read(c, &h)) {
          rpc::EncodeFrame(&out, Op::kHello, rpc::kFlagReply, h.request_id);
          (void)::send(c, out.data(), out.size(), MSG_NOSIGNAL);
          out.clear();
          if (Read(c, &h)) {
            rpc::EncodeFrame(&out, Op::kKvPlan, rpc::kFlagReply, h.request_id,
                             KvPlan{2, 2, descriptor::ServeMode::kChunkwise, 400, "x"});
            row_.after_plan(&out, h.request_id);
          }
          (void)::send(c, out.data(), out.size(), MSG_NOSIGNAL);
        }
        ::shutdown(c, SHUT_WR);
        std::byte drain[64];
        while (::recv(c, drain, sizeof(drain), 0) > 0) {
        }
        ::close(c);
      }
      const Row& row_;
      int fd_ = -1;
      uint16_t port_ = 0;
      std::thread thread_;
    };
    EchoServer server(row);
    auto remote = Connect({server.endpoint()});
    ASSERT_NE(remote, nullptr);
    EXPECT_EQ(remote->identity().backend, "rocksdb") << "an old server counts as RocksDB";
    FailingSink sink(~0ull);
    int plans = 0;
    auto r = remote->GetLayers("b", d, &sink, [&](const KvPlan&) {
      ++plans;
      return Status::Ok();
    });
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), row.want) << r.error();
    EXPECT_EQ(plans, 1);
    EXPECT_EQ(sink.finishes_, 1);
    EXPECT_EQ(sink.final_.code(), row.want);
    remote.reset();  // closes the client side, so the server thread's drain ends
  }
}

}  // namespace
}  // namespace oc::storage::test
