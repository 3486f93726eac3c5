// Descriptor PUTs over the storage RPC (wire.h kKvPutChunks) against a real server whose store
// runs the KV engine: chunks sent in the body and pulled from the caller's target over UCX
// stored byte for byte, and a PUT the caller gives up on after three whole chunks (its source
// fails, it sends kAbort, or its connection drops) storing nothing.

#include <gtest/gtest.h>

#include <thread>

#include "composed_store.h"
#include "kv_test_util.h"
#include "oc/descriptor/codec.h"
#include "rocks/rocks_store.h"
#include "rpc_kv_test_util.h"

namespace oc::storage::test {
namespace {

using kvtest::ChunkBytes;
using kvtest::Descriptor;
using kvtest::kBucket;
using kvtest::kTransports;
using kvtest::MakeDescriptor;
using kvtest::Receiver;
using kvtest::Shape;
using kvtest::StoredLayout;
using kvtest::WhereIs;
using rpc::ClientConn;
using rpc::Op;

TEST_F(RpcKvTest, PutChunksFromBodyAndPulledFromTargetStoreEveryChunk) {
  Start(1);
  const Shape s{3, 4, 70'000, StoredLayout::k2LTD};  // 840 KB per chunk: several frames
  for (bool pull : {false, true}) {
    SCOPED_TRACE(pull ? "pulled over UCX" : "from the body");
    const uint64_t seed = pull ? 61 : 60;
    Descriptor d = MakeDescriptor(s, true, seed);
    std::vector<std::byte> all;
    std::vector<std::vector<std::byte>> chunks;
    for (uint64_t j = 0; j < s.n; ++j) {
      chunks.push_back(ChunkBytes(seed, j, s));
      all.insert(all.end(), chunks.back().begin(), chunks.back().end());
    }
    Result<KvPutReport> put = Status::Internal("unset");
    std::optional<Result<Receiver>> rx;
    if (pull) {
      rx.emplace(Receiver::Open(kTransports[0], all.size(), WhereIs(*remote_, kBucket)));
      ASSERT_TRUE(rx->has_value()) << rx->error();
      std::copy(all.begin(), all.end(), (*rx)->memory.begin());
      d.target = (*rx)->Target();
      put = remote_->PutChunks(kBucket, d, nullptr);
    } else {
      kvtest::MemorySource source(all, 300'000);
      put = remote_->PutChunks(kBucket, d, &source);
    }
    ASSERT_TRUE(put.has_value()) << put.error();
    EXPECT_EQ(put->chunks, s.n);
    EXPECT_EQ(put->bytes, all.size());
    for (uint64_t j = 0; j < s.n; ++j) {
      auto meta = remote_->Head(ObjectKey{kBucket, d.ObjectName(j)});
      ASSERT_TRUE(meta.has_value()) << meta.error();
      ASSERT_TRUE(meta->chunk.has_value());
      EXPECT_EQ(meta->chunk->layout, s.layout);
      auto bytes =
          GetString(*remote_, ObjectKey{kBucket, d.ObjectName(j)}, ByteRange::All(), 1 << 20);
      ASSERT_TRUE(bytes.has_value()) << bytes.error();
      EXPECT_TRUE(*bytes ==
                  std::string(reinterpret_cast<const char*>(chunks[j].data()), chunks[j].size()));
    }
  }
  StoreStats st = ServerStats();
  EXPECT_EQ(Figure(st, "rpc_kv_put_stream_bytes"), s.n * s.layers * s.s);
  EXPECT_EQ(Figure(st, "rpc_kv_put_pulled_bytes"), s.n * s.layers * s.s);
}

// A descriptor PUT over the RPC whose caller gives up after chunks 0..2 were streamed whole
// (its source fails, it sends kAbort, or its connection drops) stores nothing on the server:
// every chunk keeps its previous version, and the server frees what it staged.
TEST_F(RpcKvTest, PutChunksAbortedAfterThreeWholeChunksStoresNothing) {
  Start(1);
  const Shape s{5, 2, 60'000, StoredLayout::kL2TD};
  Descriptor d = MakeDescriptor(s, true, 70);
  const std::vector<std::vector<std::byte>> old_chunks = StoreChunks(d, s, 70, s.n);
  const uint64_t chunk = s.layers * s.s;
  std::vector<std::byte> new_body;
  for (uint64_t j = 0; j < s.n; ++j) {
    const std::vector<std::byte> c = ChunkBytes(71, j, s);
    new_body.insert(new_body.end(), c.begin(), c.end());
  }
  RocksStore& server_store = dynamic_cast<RocksStore&>(*BackendOf(*served_->local));
  const Result<uint64_t> extents_before = server_store.CountExtents();
  ASSERT_TRUE(extents_before.has_value());
  auto expect_old = [&](std::string_view what) {
    SCOPED_TRACE(what);
    for (uint64_t j = 0; j < s.n; ++j) {
      auto bytes =
          GetString(*remote_, ObjectKey{kBucket, d.ObjectName(j)}, ByteRange::All(), 1 << 20);
      ASSERT_TRUE(bytes.has_value()) << bytes.error();
      EXPECT_TRUE(*bytes == std::string(reinterpret_cast<const char*>(old_chunks[j].data()),
                                        old_chunks[j].size()))
          << "chunk " << j << " was overwritten";
    }
    EXPECT_EQ(Figure(server_store.Stats().value(), "writes_in_progress"), 0u);
    EXPECT_EQ(server_store.CountExtents().value(), *extents_before) << "staged extents left behind";
  };

  // The caller's source fails after 3 whole chunks: RemoteStore sends kAbort.
  class Failing final : public ChunkSource {
   public:
    Failing(std::vector<std::byte> bytes) : inner_(std::move(bytes), 50'000) {}
    Result<uint64_t> Read(MutableByteSpan out) override {
      OC_ASSIGN_OR_RETURN(const uint64_t n, inner_.Read(out));
      if (n == 0) {
        return Status::Cancelled("the HTTP client left");
      }
      return n;
    }

   private:
    kvtest::MemorySource inner_;
  } failing({new_body.begin(), new_body.begin() + 3 * chunk});
  auto put = remote_->PutChunks(kBucket, d, &failing);
  ASSERT_FALSE(put.has_value());
  EXPECT_EQ(put.error().code(), Code::kCancelled);
  expect_old("caller source failed");

  std::vector<std::byte> request;
  rpc::EncodeFrame(&request, Op::kKvPutChunks, 0, 30, std::string(kBucket),
                   descriptor::EncodeBody(d), std::string());  // principal: anonymous
  auto stream_three = [&](ClientConn& conn) {
    ASSERT_TRUE(conn.WriteAll(request).ok());
    for (uint64_t at = 0; at < 3 * chunk; at += 40'000) {
      const uint64_t n = std::min<uint64_t>(40'000, 3 * chunk - at);
      ASSERT_TRUE(conn.WriteFrame(Op::kData, 30, ByteSpan(new_body).subspan(at, n)).ok());
    }
  };
  {  // kAbort after 3 whole chunks.
    auto conn = Dial(*served_->server);
    ASSERT_NE(conn, nullptr);
    stream_three(*conn);
    ASSERT_TRUE(conn->WriteFrame(Op::kAbort, 30, {}).ok());
    EXPECT_EQ(ReadError(*conn, 30).code(), Code::kCancelled);
  }
  expect_old("kAbort");
  {  // The connection drops after 3 whole chunks.
    auto conn = Dial(*served_->server);
    ASSERT_NE(conn, nullptr);
    stream_three(*conn);
  }
  // No reply tells when the server's store call has ended after a drop: check over a second
  // that no chunk changes (before, chunks 0..2 were committed as they arrived).
  for (int i = 0; i < 10 && !HasFailure(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    expect_old("connection dropped");
  }
}

}  // namespace
}  // namespace oc::storage::test
