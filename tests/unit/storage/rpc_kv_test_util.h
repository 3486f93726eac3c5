#pragma once
// Helpers shared by the rpc_kv_*_test.cc files (the descriptor calls over the storage RPC):
// the RpcKvTest fixture (a real server whose store runs the KV engine, and a remote store
// connected to it), a sink that fails on the caller's side, and raw connections to the
// server for frames sent by hand.

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <vector>

#include "kv_test_util.h"
#include "oc/storage/kv.h"
#include "rpc/client_conn.h"
#include "rpc/wire.h"
#include "rpc_test_util.h"

namespace oc::storage::test {

// The served store's KV options: `threshold` picks layerwise (1) or chunkwise (~0) serving.
inline KvOptions ServerKv(uint64_t threshold) {
  KvOptions kv;
  kv.layerwise_threshold_bytes = threshold;
  kv.data_plane_staging_buffers = 4;
  kv.data_plane_staging_buffer_bytes = 16 << 10;  // layers span several buffers
  kv.data_plane_timeout = std::chrono::milliseconds(10'000);
  return kv;
}

class RpcKvTest : public ::testing::Test {
 protected:
  void Start(uint64_t threshold) {
    served_ = Serve({}, ServerKv(threshold));
    ASSERT_NE(served_, nullptr);
    remote_ = Connect({served_->server->endpoint()});
    ASSERT_NE(remote_, nullptr);
    ASSERT_TRUE(remote_->CreateBucket(kvtest::kBucket, "tester").ok());
  }

  // Stores chunks [0, n) of `d` except `missing` through the remote store (plain PUTs).
  std::vector<std::vector<std::byte>> StoreChunks(const kvtest::Descriptor& d,
                                                  const kvtest::Shape& s, uint64_t seed,
                                                  uint64_t present) {
    std::vector<std::vector<std::byte>> chunks;
    for (uint64_t j = 0; j < s.n; ++j) {
      chunks.push_back(kvtest::ChunkBytes(seed, j, s));
      if (j < present) {
        EXPECT_TRUE(kvtest::StoreChunk(*remote_, d, j, chunks.back()).ok());
      }
    }
    return chunks;
  }

  StoreStats ServerStats() {
    Result<StoreStats> st = remote_->Stats();
    EXPECT_TRUE(st.has_value()) << st.error();
    return st.has_value() ? *st : StoreStats{};
  }

  std::unique_ptr<ServedStore> served_;
  std::unique_ptr<Store> remote_;
};

// A sink whose Write fails after `ok_writes` writes: the caller's side failing mid-stream.
class FailingSink final : public LayerSink {
 public:
  explicit FailingSink(uint64_t ok_writes) : pool_(2, 4'096), ok_writes_(ok_writes) {}
  uint64_t buffer_bytes() const override { return pool_.buffer_bytes(); }
  Result<StagingBuffer> AcquireBuffer() override { return pool_.Acquire(kvtest::kWait); }
  Status Write(uint64_t, StagingBuffer, uint64_t) override {
    return writes_++ < ok_writes_ ? Status::Ok() : Status::Unavailable("the HTTP client left");
  }
  Status LayerReady(uint32_t) override { return Status::Ok(); }
  Status Finish(const Status& final) override {
    ++finishes_;
    final_ = final;
    return final;
  }
  int finishes_ = 0;
  Status final_;

 private:
  HeapBufferPool pool_;
  uint64_t ok_writes_;
  uint64_t writes_ = 0;
};

// --- Raw frames against the real server ---

inline std::unique_ptr<rpc::ClientConn> Dial(const rpc::RpcServer& server) {
  auto c =
      rpc::ClientConn::Connect(rpc::HostPort{"127.0.0.1", server.port()}, std::chrono::seconds(5));
  EXPECT_TRUE(c.has_value()) << c.error();
  if (!c.has_value()) {
    return nullptr;
  }
  (*c)->set_io_timeout(std::chrono::seconds(30));
  EXPECT_TRUE((*c)->Handshake(kTestSecret, 1).ok());
  return std::move(*c);
}

// Reads the error frame answering request `rid`; returns the status it carries.
inline Status ReadError(rpc::ClientConn& conn, uint64_t rid) {
  rpc::FrameHeader h;
  std::vector<std::byte> body;
  OC_RETURN_IF_ERROR(conn.ReadFrame(&h, &body));
  EXPECT_EQ(h.op, rpc::Op::kError);
  EXPECT_EQ(h.request_id, rid);
  Status st;
  EXPECT_TRUE(rpc::DecodeBody(body, &st).ok());
  return st;
}

inline bool ClosedByServer(rpc::ClientConn& conn) {
  std::byte one[1];
  return conn.ReadExact(one).code() == Code::kUnavailable;
}

}  // namespace oc::storage::test
