// The RPC server against misbehaving clients (every bad-frame case gets an error frame and
// a closed connection while a good client keeps working), streaming of a large object in
// both directions with bounded memory, and graceful shutdown.

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <xxhash.h>

#include <future>

#include "rpc/client_conn.h"
#include "rpc/remote_pool.h"
#include "rpc/wire.h"
#include "rpc_test_util.h"

namespace oc::storage::test {
namespace {

using rpc::ClientConn;
using rpc::FrameHeader;
using rpc::Op;

std::unique_ptr<ClientConn> Dial(const rpc::RpcServer& server) {
  Result<std::unique_ptr<ClientConn>> c =
      ClientConn::Connect(rpc::HostPort{"127.0.0.1", server.port()}, std::chrono::seconds(5));
  EXPECT_TRUE(c.has_value()) << c.error();
  if (!c.has_value()) {
    return nullptr;
  }
  (*c)->set_io_timeout(std::chrono::seconds(30));
  return std::move(*c);
}

std::vector<std::byte> Frame(uint8_t version, uint8_t op, uint64_t rid, ByteSpan body) {
  std::vector<std::byte> out(rpc::kHeaderBytes);
  rpc::EncodeHeader(FrameHeader{version, static_cast<Op>(op), 0, rid, body.size()},
                    std::span<std::byte, rpc::kHeaderBytes>(out.data(), rpc::kHeaderBytes));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

std::vector<std::byte> Hello(std::string_view secret, uint64_t rid = 1) {
  std::vector<std::byte> out;
  rpc::EncodeFrame(&out, Op::kHello, 0, rid, secret);
  return out;
}

// Reads one error frame and then expects the server to have closed the connection.
Status ExpectErrorThenClose(ClientConn& conn) {
  FrameHeader h;
  std::vector<std::byte> body;
  Status read = conn.ReadFrame(&h, &body);
  EXPECT_TRUE(read.ok()) << read;
  if (!read.ok()) {
    return read;
  }
  EXPECT_EQ(h.op, Op::kError);
  EXPECT_NE(h.flags & rpc::kFlagReply, 0);
  Status st;
  EXPECT_TRUE(rpc::DecodeBody(body, &st).ok());
  std::byte one[1];
  const Status after = conn.ReadExact(one);
  EXPECT_EQ(after.code(), Code::kUnavailable) << "connection should be closed";
  return st;
}

class RpcServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    served_ = Serve();
    ASSERT_NE(served_, nullptr);
    good_ = Connect({served_->server->endpoint()});
    ASSERT_NE(good_, nullptr);
    ASSERT_TRUE(good_->CreateBucket("bkt", "me").ok());
    ASSERT_TRUE(PutString(*good_, {"bkt", "k"}, "hello").has_value());
  }

  // The good client, on its own (pooled) connection, still works.
  void ExpectGoodClientWorks() {
    Result<std::string> got = GetString(*good_, {"bkt", "k"});
    ASSERT_TRUE(got.has_value()) << got.error();
    EXPECT_EQ(*got, "hello");
  }

  std::unique_ptr<ServedStore> served_;
  std::unique_ptr<Store> good_;
};

TEST_F(RpcServerTest, BadFramesGetAnErrorAndACloseWhileOthersKeepWorking) {
  const std::vector<std::byte> hello = Hello(kTestSecret);
  std::vector<std::byte> head_body;
  rpc::EncodeFrame(&head_body, Op::kHead, 0, 9, ObjectKey{"bkt", "k"});
  const ByteSpan head_only(head_body.data() + rpc::kHeaderBytes,
                           head_body.size() - rpc::kHeaderBytes);
  std::vector<std::byte> oversize =
      Frame(rpc::kVersion, static_cast<uint8_t>(Op::kPutBegin), 5, {});
  PutLittleEndian64(1ull << 40, oversize.data() + 16);  // claims a 1 TiB body
  std::vector<std::byte> bad_magic =
      Frame(rpc::kVersion, static_cast<uint8_t>(Op::kHead), 6, head_only);
  bad_magic[0] = std::byte{'X'};
  const std::vector<std::byte> garbage_body = {std::byte{1}, std::byte{2}, std::byte{3}};

  struct Row {
    std::string_view name;
    bool handshake;                // send a correct Hello first
    std::vector<std::byte> bytes;  // then these
    bool shutdown_write;           // then half-close (a truncated frame)
    Code code;
    std::string_view field;
  };
  const std::vector<Row> rows = {
      {"no handshake", false, head_body, false, Code::kUnauthenticated, "secret"},
      {"bad secret", false, Hello("wrong-secret"), false, Code::kUnauthenticated, "secret"},
      {"empty secret", false, Hello(""), false, Code::kUnauthenticated, "secret"},
      {"unknown version", true, Frame(7, static_cast<uint8_t>(Op::kHead), 3, head_only), false,
       Code::kUnimplemented, "version"},
      {"unknown op", true, Frame(rpc::kVersion, 99, 4, head_only), false, Code::kUnimplemented,
       "op"},
      {"oversize length", true, oversize, false, Code::kResourceExhausted, "body_length"},
      {"bad magic", true, bad_magic, false, Code::kInvalidArgument, "magic"},
      {"truncated header", true, std::vector<std::byte>(head_body.begin(), head_body.begin() + 10),
       true, Code::kInvalidArgument, "frame"},
      {"truncated body", true, std::vector<std::byte>(head_body.begin(), head_body.end() - 2), true,
       Code::kInvalidArgument, "frame"},
      {"malformed body", true,
       Frame(rpc::kVersion, static_cast<uint8_t>(Op::kHead), 8, garbage_body), false,
       Code::kInvalidArgument, ""},
      {"reply flag from client", true,
       [&] {
         auto f = head_body;
         f[6] = std::byte{rpc::kFlagReply};
         return f;
       }(),
       false, Code::kInvalidArgument, "flags"},
      {"data outside a put", true, Frame(rpc::kVersion, static_cast<uint8_t>(Op::kData), 2, {}),
       false, Code::kInvalidArgument, "op"},
      {"second hello", true, Hello(kTestSecret, 2), false, Code::kInvalidArgument, "op"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    std::unique_ptr<ClientConn> bad = Dial(*served_->server);
    ASSERT_NE(bad, nullptr);
    if (row.handshake) {
      ASSERT_TRUE(bad->Handshake(kTestSecret, 1).ok());
    }
    ASSERT_TRUE(bad->WriteAll(row.bytes).ok());
    if (row.shutdown_write) {
      bad->ShutdownWrite();
    }
    const Status st = ExpectErrorThenClose(*bad);
    EXPECT_EQ(st.code(), row.code) << st;
    if (!row.field.empty()) {
      EXPECT_EQ(st.field(), row.field) << st;
    }
    ExpectGoodClientWorks();
  }
  Result<StoreStats> stats = good_->Stats();
  ASSERT_TRUE(stats.has_value());
  EXPECT_GE(Figure(*stats, "rpc_protocol_errors"), rows.size());
}

TEST_F(RpcServerTest, WrongSecretIsRefusedThroughTheRemoteStore) {
  std::unique_ptr<Store> intruder = Connect({served_->server->endpoint()}, "not-the-secret");
  ASSERT_NE(intruder, nullptr);
  Result<ObjectMeta> h = intruder->Head({"bkt", "k"});
  ASSERT_FALSE(h.has_value());
  EXPECT_EQ(h.error().code(), Code::kUnauthenticated);
  ExpectGoodClientWorks();
}

TEST_F(RpcServerTest, AClientThatGoesSilentMidFrameDoesNotBlockOthers) {
  std::unique_ptr<ClientConn> stuck = Dial(*served_->server);
  ASSERT_NE(stuck, nullptr);
  ASSERT_TRUE(stuck->Handshake(kTestSecret, 1).ok());
  const std::vector<std::byte> partial =
      Frame(rpc::kVersion, static_cast<uint8_t>(Op::kHead), 3, std::vector<std::byte>(4));
  ASSERT_TRUE(stuck->WriteAll(ByteSpan(partial).first(rpc::kHeaderBytes + 2)).ok());
  for (int i = 0; i < 20; ++i) {
    ExpectGoodClientWorks();
  }
}

TEST_F(RpcServerTest, UnreachableServerIsUnavailable) {
  std::unique_ptr<Store> nowhere = Connect({"127.0.0.1:" + std::to_string(testutil::FreePort())});
  ASSERT_NE(nowhere, nullptr);
  EXPECT_EQ(nowhere->HeadBucket("bkt").error().code(), Code::kUnavailable);
  EXPECT_EQ(nowhere->Put({"bkt", "x"}, {}).error().code(), Code::kUnavailable);
}

// A server that accepts connections but never answers Hello (a wedged process, or something
// else listening on the port) fails the handshake after the connect timeout, not after the
// 120 s a call may take: a gateway starting against it is not held up for minutes.
TEST(RpcEndpoint, AHelloNobodyAnswersFailsAfterTheConnectTimeout) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 4), 0);  // the kernel completes connects; nobody reads or answers
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  rpc::Endpoint endpoint(rpc::HostPort{"127.0.0.1", ntohs(addr.sin_port)}, "secret", 1);
  std::future<Status> acquired = std::async(std::launch::async, [&] {
    bool reused = true;
    return endpoint.Acquire(1, &reused).status();
  });
  // Twice the connect timeout is far below the 120 s of a call.
  ASSERT_EQ(acquired.wait_for(2 * rpc::kConnectTimeout), std::future_status::ready)
      << "the handshake waited for longer than the connect timeout";
  EXPECT_EQ(acquired.get().code(), Code::kUnavailable);
  ::close(fd);
}

TEST_F(RpcServerTest, BrokenPooledConnectionIsReplacedForReads) {
  // Restart the server on the same port: the client's pooled connection is now dead.
  const uint16_t port = served_->server->port();
  served_->server.reset();
  rpc::RpcServerOptions options;
  options.listen = "127.0.0.1:" + std::to_string(port);
  Result<std::unique_ptr<rpc::RpcServer>> again =
      rpc::RpcServer::Start(served_->local.get(), options, std::string(kTestSecret));
  ASSERT_TRUE(again.has_value()) << again.error();
  served_->server = std::move(*again);
  ExpectGoodClientWorks();
  EXPECT_TRUE(good_->CreateBucket("after-restart", "me").ok());
}

// Pieces of a large object are a pure function of their index, so neither side of the test
// needs the whole object either.
std::vector<std::byte> Piece(uint64_t index, uint64_t size) {
  return testutil::PatternBytes(1000 + index, size);
}

TEST_F(RpcServerTest, LargeObjectStreamsBothWaysWithBoundedMemory) {
  constexpr uint64_t kPiece = 1 << 20;
  constexpr uint64_t kPieces = 64;  // 64 MiB
  XXH3_state_t* put_hash = XXH3_createState();
  XXH3_64bits_reset(put_hash);
  {
    Result<std::unique_ptr<ObjectWriter>> w = good_->Put({"bkt", "big"}, {});
    ASSERT_TRUE(w.has_value()) << w.error();
    for (uint64_t i = 0; i < kPieces; ++i) {
      const std::vector<std::byte> piece = Piece(i, kPiece);
      XXH3_64bits_update(put_hash, piece.data(), piece.size());
      ASSERT_TRUE((*w)->Append(piece).ok());
    }
    Result<ObjectMeta> meta = (*w)->Commit();
    ASSERT_TRUE(meta.has_value()) << meta.error();
    EXPECT_EQ(meta->size, kPiece * kPieces);
  }
  Result<std::unique_ptr<ObjectReader>> r = good_->Get({"bkt", "big"}, ByteRange::All());
  ASSERT_TRUE(r.has_value()) << r.error();
  EXPECT_EQ((*r)->length(), kPiece * kPieces);
  XXH3_state_t* get_hash = XXH3_createState();
  XXH3_64bits_reset(get_hash);
  std::vector<std::byte> buffer(300 * 1024);  // not a divisor of the frame size
  uint64_t total = 0;
  for (;;) {
    Result<uint64_t> n = (*r)->Read(buffer);
    ASSERT_TRUE(n.has_value()) << n.error();
    if (*n == 0) {
      break;
    }
    XXH3_64bits_update(get_hash, buffer.data(), *n);
    total += *n;
  }
  EXPECT_EQ(total, kPiece * kPieces);
  EXPECT_EQ(XXH3_64bits_digest(get_hash), XXH3_64bits_digest(put_hash));
  XXH3_freeState(put_hash);
  XXH3_freeState(get_hash);

  // The server never held more than a few frames' worth for any connection.
  Result<StoreStats> stats = good_->Stats();
  ASSERT_TRUE(stats.has_value());
  const uint64_t peak = Figure(*stats, "rpc_peak_connection_bytes");
  EXPECT_GT(peak, 0u);
  EXPECT_LE(peak, 4 * kPiece) << "a connection buffered " << peak << " bytes";
}

TEST_F(RpcServerTest, ShutdownLetsACallInFlightFinish) {
  // A writer is mid-stream when shutdown begins: it may still commit, and afterwards
  // the server is gone.
  Result<std::unique_ptr<ObjectWriter>> w = good_->Put({"bkt", "late"}, {});
  ASSERT_TRUE(w.has_value()) << w.error();
  ASSERT_TRUE((*w)->Append(AsBytes("in flight")).ok());
  served_->server->Shutdown();
  Result<ObjectMeta> meta = (*w)->Commit();
  ASSERT_TRUE(meta.has_value()) << meta.error();
  served_->server->Wait();
  EXPECT_EQ(good_->HeadBucket("bkt").error().code(), Code::kUnavailable);
  Result<ObjectMeta> local = served_->local->Head({"bkt", "late"});
  ASSERT_TRUE(local.has_value());
  EXPECT_EQ(local->size, 9u);
}

}  // namespace
}  // namespace oc::storage::test
