// The descriptor calls over the storage RPC (wire.h kKvProbe, kKvGetLayers, kKvPutChunks):
// a remote store against a real server whose own store runs the KV engine (real RocksDB,
// real UCX over shared memory and TCP, received with the client library), every payload
// compared byte for byte with the oracle of kv_test_util.h; bad frames and descriptors sent
// raw; and the client's handling of streams a scripted server breaks or fails mid-way.

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "kv/kv_engine.h"
#include "kv_test_util.h"
#include "oc/descriptor/codec.h"
#include "rocks/rocks_store.h"
#include "rpc/client_conn.h"
#include "rpc/wire.h"
#include "rpc_test_util.h"

namespace oc::storage::test {
namespace {

using kvtest::ChunkBytes;
using kvtest::Delivery;
using kvtest::Descriptor;
using kvtest::kBucket;
using kvtest::kTransports;
using kvtest::kUntouched;
using kvtest::kWait;
using kvtest::MakeDescriptor;
using kvtest::OraclePayload;
using kvtest::Receiver;
using kvtest::Shape;
using kvtest::StoredLayout;
using kvtest::VectorSink;
using kvtest::WhereIs;
using rpc::ClientConn;
using rpc::FrameHeader;
using rpc::Op;

KvOptions ServerKv(uint64_t threshold) {
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
    ASSERT_TRUE(remote_->CreateBucket(kBucket, "tester").ok());
  }

  // Stores chunks [0, n) of `d` except `missing` through the remote store (plain PUTs).
  std::vector<std::vector<std::byte>> StoreChunks(const Descriptor& d, const Shape& s,
                                                  uint64_t seed, uint64_t present) {
    std::vector<std::vector<std::byte>> chunks;
    for (uint64_t j = 0; j < s.n; ++j) {
      chunks.push_back(ChunkBytes(seed, j, s));
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

const Shape kShapes[] = {
    {1, 1, 7, StoredLayout::kL2TD},
    {3, 4, 40'002, StoredLayout::k2LTD},  // layers span several frames and buffers
    {5, 3, 6'000, StoredLayout::kL2TD},
};

TEST_F(RpcKvTest, BodyGetStreamsByteExactPayloadWithLayerReadyAndReport) {
  for (uint64_t threshold : {uint64_t{1}, ~uint64_t{0}}) {
    Start(threshold);
    uint64_t seed = threshold == 1 ? 10 : 20;
    for (const Shape& s : kShapes) {
      for (Delivery delivery : {Delivery::kLayerMajor, Delivery::kChunkMajor}) {
        SCOPED_TRACE(kvtest::ShapeName(s) + (threshold == 1 ? " layerwise " : " chunkwise ") +
                     std::string(descriptor::DeliveryName(delivery)));
        ++seed;
        Descriptor d = MakeDescriptor(s, seed % 2 == 0, seed, delivery);
        auto chunks = StoreChunks(d, s, seed, s.n);
        std::vector<std::byte> want(s.n * s.layers * s.s);
        OraclePayload(chunks, s, delivery, s.n, s.n, want);
        // A small sink: each 1 MiB data frame lands in several of its buffers.
        VectorSink sink(2, 5'000);
        int plans = 0;
        auto report = remote_->GetLayers(kBucket, d, &sink, [&](const KvPlan& p) {
          ++plans;
          EXPECT_EQ(sink.writes(), 0u);
          EXPECT_EQ(p.matched, s.n);
          EXPECT_EQ(p.payload_bytes, want.size());
          EXPECT_EQ(p.request_id, d.request_id);
          return Status::Ok();
        });
        ASSERT_TRUE(report.has_value()) << report.error();
        EXPECT_EQ(plans, 1);
        EXPECT_TRUE(sink.finished());
        EXPECT_TRUE(sink.final_status().ok());
        EXPECT_TRUE(sink.body() == want);
        EXPECT_EQ(sink.layers().size(), s.layers);
        EXPECT_EQ(report->plan.mode, threshold == 1 ? descriptor::ServeMode::kLayerwise
                                                    : descriptor::ServeMode::kChunkwise);
        EXPECT_EQ(report->layers_notified, s.layers);
        EXPECT_GT(report->timings.total_us, 0u);
      }
    }
    StoreStats st = ServerStats();
    EXPECT_GT(Figure(st, "rpc_kv_get_stream_bytes"), 0u);
    EXPECT_EQ(Figure(st, "rpc_kv_get_target_bytes"), 0u);
    // Bounded staging: the server never held more than its stream buffers and one request.
    EXPECT_LE(Figure(st, "rpc_peak_connection_bytes"), 8u << 20);
    remote_.reset();
    served_.reset();
  }
}

TEST_F(RpcKvTest, TargetGetIsWrittenByTheServerOverShmAndTcp) {
  Start(1);
  uint64_t seed = 100;
  uint64_t expected_bytes = 0;
  for (const auto& t : kTransports) {
    for (const Shape& s : kShapes) {
      SCOPED_TRACE(std::string(t.name) + " " + kvtest::ShapeName(s));
      ++seed;
      Descriptor d = MakeDescriptor(s, true, seed);
      auto chunks = StoreChunks(d, s, seed, s.n);
      const uint64_t w = s.n * s.layers * s.s;
      auto rx = Receiver::Open(t, w + 64, WhereIs(*remote_, kBucket));
      ASSERT_TRUE(rx.has_value()) << rx.error();
      d.target = rx->Target();
      auto delivery = rx->plane->Expect(d.target->address, s.layers);
      ASSERT_TRUE(delivery.has_value()) << delivery.error();
      auto report = remote_->GetLayers(kBucket, d, nullptr, {});
      ASSERT_TRUE(report.has_value()) << report.error();
      ASSERT_TRUE((*delivery)->Wait(kWait).ok());
      EXPECT_EQ((*delivery)->layers_ready(), s.layers);
      std::vector<std::byte> want(w + 64, kUntouched);
      OraclePayload(chunks, s, d.delivery, s.n, s.n, want);
      EXPECT_TRUE(rx->memory == want);
      EXPECT_EQ(report->plan.mode, descriptor::ServeMode::kLayerwise);
      EXPECT_GT(report->writes, 0u);
      expected_bytes += w;
    }
  }
  // The server's own data plane did the writes (the remote store has none).
  EXPECT_EQ(Figure(ServerStats(), "rpc_kv_get_target_bytes"), expected_bytes);
}

TEST_F(RpcKvTest, PartialHitProbeAndGetServeTheLongestPrefix) {
  Start(1);
  const Shape s{4, 3, 3'000, StoredLayout::kL2TD};
  Descriptor d = MakeDescriptor(s, false, 7);
  auto chunks = StoreChunks(d, s, 7, 2);  // chunks 0 and 1 present

  auto probe = remote_->ProbeChunks(kBucket, d);
  ASSERT_TRUE(probe.has_value()) << probe.error();
  EXPECT_EQ(probe->matched, 2u);
  ASSERT_EQ(probe->sizes.size(), 4u);
  EXPECT_EQ(probe->sizes[1], s.layers * s.s);
  EXPECT_FALSE(probe->sizes[2].has_value());

  VectorSink sink(2, 4'096);
  auto report = remote_->GetLayers(kBucket, d, &sink, {});
  ASSERT_TRUE(report.has_value()) << report.error();
  std::vector<std::byte> want(2 * s.layers * s.s);
  OraclePayload(chunks, s, d.delivery, /*n=*/2, /*m=*/2, want);  // dense in M
  EXPECT_TRUE(sink.body() == want);
  EXPECT_EQ(report->plan.matched, 2u);

  auto rx = Receiver::Open(kTransports[0], s.n * s.layers * s.s, WhereIs(*remote_, kBucket));
  ASSERT_TRUE(rx.has_value()) << rx.error();
  d.target = rx->Target();
  auto delivery = rx->plane->Expect(d.target->address, s.layers);
  ASSERT_TRUE(delivery.has_value());
  report = remote_->GetLayers(kBucket, d, nullptr, {});
  ASSERT_TRUE(report.has_value()) << report.error();
  ASSERT_TRUE((*delivery)->Wait(kWait).ok());
  std::vector<std::byte> target_want(s.n * s.layers * s.s, kUntouched);
  OraclePayload(chunks, s, d.delivery, s.n, 2, target_want);  // N's offsets, rest untouched
  EXPECT_TRUE(rx->memory == target_want);
}

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

TEST_F(RpcKvTest, ServerErrorsReachTheCallerAndKeepTheConnectionUsable) {
  Start(1);
  const Shape s{2, 2, 1'000, StoredLayout::kL2TD};
  Descriptor d = MakeDescriptor(s, true, 5);
  // Unknown bucket: before the plan, so the sink is untouched.
  VectorSink sink(2, 4'096);
  auto r = remote_->GetLayers("no-such-bucket", d, &sink, {});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kNotFound);
  EXPECT_FALSE(sink.finished());
  EXPECT_EQ(remote_->ProbeChunks("no-such-bucket", d).status().code(), Code::kNotFound);
  // A body of the wrong length: the whole body is drained, then the error comes back.
  std::vector<std::byte> short_body(s.n * s.layers * s.s - 1, std::byte{1});
  kvtest::MemorySource source(short_body, 4'096);
  auto put = remote_->PutChunks(kBucket, d, &source);
  ASSERT_FALSE(put.has_value());
  EXPECT_EQ(put.error().code(), Code::kInvalidArgument);
  // A PUT into an unknown bucket: drained, then NotFound.
  kvtest::MemorySource source2(std::vector<std::byte>(s.n * s.layers * s.s), 4'096);
  EXPECT_EQ(remote_->PutChunks("no-such-bucket", d, &source2).status().code(), Code::kNotFound);
  // A shape mismatch names the field.
  auto chunks = StoreChunks(d, s, 5, s.n);
  Descriptor wrong = d;
  wrong.layer_bytes = 500;
  wrong.num_layers = 4;
  VectorSink sink2(2, 4'096);
  r = remote_->GetLayers(kBucket, wrong, &sink2, {});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kInvalidArgument);
  // Every error above left the pooled connection at a frame boundary: no new connections.
  const uint64_t before = Figure(ServerStats(), "rpc_connections_total");
  VectorSink sink3(2, 4'096);
  ASSERT_TRUE(remote_->GetLayers(kBucket, d, &sink3, {}).has_value());
  EXPECT_EQ(Figure(ServerStats(), "rpc_connections_total"), before);
  EXPECT_EQ(Figure(ServerStats(), "rpc_protocol_errors"), 0u);
}

// A sink whose Write fails after `ok_writes` writes: the caller's side failing mid-stream.
class FailingSink final : public LayerSink {
 public:
  explicit FailingSink(uint64_t ok_writes) : pool_(2, 4'096), ok_writes_(ok_writes) {}
  uint64_t buffer_bytes() const override { return pool_.buffer_bytes(); }
  Result<StagingBuffer> AcquireBuffer() override { return pool_.Acquire(kWait); }
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

TEST_F(RpcKvTest, CallerSideFailureMidStreamDropsThatConnectionOnly) {
  Start(1);
  const Shape s{4, 8, 200'000, StoredLayout::kL2TD};  // 6.4 MB: more than TCP buffers hold
  Descriptor d = MakeDescriptor(s, true, 9);
  auto chunks = StoreChunks(d, s, 9, s.n);
  FailingSink failing(3);
  auto r = remote_->GetLayers(kBucket, d, &failing, {});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kUnavailable);
  EXPECT_EQ(failing.finishes_, 1);
  // The broken stream's connection was closed, not pooled (a pooled one would hand the next
  // call the rest of the old stream): the next call gets exactly its own payload.
  VectorSink sink(4, 1 << 20);
  auto ok = remote_->GetLayers(kBucket, d, &sink, {});
  ASSERT_TRUE(ok.has_value()) << ok.error();
  std::vector<std::byte> want(s.n * s.layers * s.s);
  OraclePayload(chunks, s, d.delivery, s.n, s.n, want);
  EXPECT_TRUE(sink.body() == want);
  EXPECT_EQ(Figure(ServerStats(), "rpc_protocol_errors"), 0u);
}

// --- Raw frames against the real server ---

std::unique_ptr<ClientConn> Dial(const rpc::RpcServer& server) {
  auto c = ClientConn::Connect(rpc::HostPort{"127.0.0.1", server.port()}, std::chrono::seconds(5));
  EXPECT_TRUE(c.has_value()) << c.error();
  if (!c.has_value()) {
    return nullptr;
  }
  (*c)->set_io_timeout(std::chrono::seconds(30));
  EXPECT_TRUE((*c)->Handshake(kTestSecret, 1).ok());
  return std::move(*c);
}

Status ReadError(ClientConn& conn, uint64_t rid) {
  FrameHeader h;
  std::vector<std::byte> body;
  OC_RETURN_IF_ERROR(conn.ReadFrame(&h, &body));
  EXPECT_EQ(h.op, Op::kError);
  EXPECT_EQ(h.request_id, rid);
  Status st;
  EXPECT_TRUE(rpc::DecodeBody(body, &st).ok());
  return st;
}

bool ClosedByServer(ClientConn& conn) {
  std::byte one[1];
  return conn.ReadExact(one).code() == Code::kUnavailable;
}

TEST_F(RpcKvTest, BadDescriptorFramesAreRefused) {
  Start(1);
  const Shape s{2, 2, 100, StoredLayout::kL2TD};
  const std::string good = descriptor::EncodeBody(MakeDescriptor(s, true, 3));
  // A malformed body (not bucket + descriptor): protocol error, error frame, close.
  for (Op op : {Op::kKvProbe, Op::kKvGetLayers, Op::kKvPutChunks}) {
    SCOPED_TRACE(rpc::OpName(op));
    auto conn = Dial(*served_->server);
    ASSERT_NE(conn, nullptr);
    std::vector<std::byte> frame;
    rpc::EncodeFrame(&frame, op, 0, 7, std::string(kBucket));  // the descriptor is missing
    ASSERT_TRUE(conn->WriteAll(frame).ok());
    EXPECT_EQ(ReadError(*conn, 7).code(), Code::kInvalidArgument);
    EXPECT_TRUE(ClosedByServer(*conn));
  }
  // A well-framed but invalid descriptor: the error names the field; the connection lives.
  struct Row {
    std::string text;
    std::string_view field;
  };
  std::string no_layers = good;
  no_layers.replace(no_layers.find("x-oc-num-layers: 2"), 18, "x-oc-num-layers: 0");
  for (const Row& row : {Row{no_layers, "x-oc-num-layers"}, Row{"x-oc-bogus: 1\n", ""},
                         Row{good + "x-oc-target-length: 12\n", ""}}) {
    SCOPED_TRACE(row.text.substr(0, 60));
    for (Op op : {Op::kKvProbe, Op::kKvGetLayers}) {
      auto conn = Dial(*served_->server);
      ASSERT_NE(conn, nullptr);
      std::vector<std::byte> frame;
      rpc::EncodeFrame(&frame, op, 0, 8, std::string(kBucket), row.text, std::string());
      ASSERT_TRUE(conn->WriteAll(frame).ok());
      Status st = ReadError(*conn, 8);
      EXPECT_EQ(st.code(), Code::kInvalidArgument);
      EXPECT_EQ(st.subject(), Subject::kDescriptor);
      if (!row.field.empty()) {
        EXPECT_EQ(st.field(), row.field);
      }
      std::vector<std::byte> stats;
      rpc::EncodeFrame(&stats, Op::kStats, 0, 9);
      ASSERT_TRUE(conn->WriteAll(stats).ok());
      FrameHeader h;
      std::vector<std::byte> body;
      ASSERT_TRUE(conn->ReadFrame(&h, &body).ok());
      EXPECT_EQ(h.op, Op::kStats);
    }
  }
  // A descriptor over the KV request limit is refused before its body is read.
  {
    auto conn = Dial(*served_->server);
    ASSERT_NE(conn, nullptr);
    std::array<std::byte, rpc::kHeaderBytes> header;
    rpc::EncodeHeader(
        FrameHeader{rpc::kVersion, Op::kKvGetLayers, 0, 10, rpc::kMaxKvRequestBodyBytes + 1},
        header);
    ASSERT_TRUE(conn->WriteAll(header).ok());
    EXPECT_EQ(ReadError(*conn, 10).code(), Code::kResourceExhausted);
    EXPECT_TRUE(ClosedByServer(*conn));
  }
  // A non-descriptor op may not use the larger limit.
  {
    auto conn = Dial(*served_->server);
    ASSERT_NE(conn, nullptr);
    std::array<std::byte, rpc::kHeaderBytes> header;
    rpc::EncodeHeader(FrameHeader{rpc::kVersion, Op::kHeadMany, 0, 11, 5ull << 20}, header);
    ASSERT_TRUE(conn->WriteAll(header).ok());
    EXPECT_EQ(ReadError(*conn, 11).code(), Code::kResourceExhausted);
  }
}

TEST_F(RpcKvTest, TruncatedAndMisframedPutStreamsLeaveTheServerServing) {
  Start(1);
  const Shape s{2, 2, 100'000, StoredLayout::kL2TD};
  Descriptor d = MakeDescriptor(s, true, 4);
  std::vector<std::byte> request;
  rpc::EncodeFrame(&request, Op::kKvPutChunks, 0, 20, std::string(kBucket),
                   descriptor::EncodeBody(d), std::string());
  const std::vector<std::byte> piece(50'000, std::byte{7});
  // The body stops mid-way and the connection closes.
  {
    auto conn = Dial(*served_->server);
    ASSERT_NE(conn, nullptr);
    ASSERT_TRUE(conn->WriteAll(request).ok());
    ASSERT_TRUE(conn->WriteFrame(Op::kData, 20, piece).ok());
  }
  // A frame of another op inside the body: error frame and close.
  {
    auto conn = Dial(*served_->server);
    ASSERT_NE(conn, nullptr);
    ASSERT_TRUE(conn->WriteAll(request).ok());
    ASSERT_TRUE(conn->WriteFrame(Op::kData, 20, piece).ok());
    ASSERT_TRUE(conn->WriteFrame(Op::kHead, 20, {}).ok());
    EXPECT_EQ(ReadError(*conn, 20).code(), Code::kInvalidArgument);
    EXPECT_TRUE(ClosedByServer(*conn));
  }
  // kAbort: the call ends with the cancellation, the connection stays usable.
  {
    auto conn = Dial(*served_->server);
    ASSERT_NE(conn, nullptr);
    ASSERT_TRUE(conn->WriteAll(request).ok());
    ASSERT_TRUE(conn->WriteFrame(Op::kData, 20, piece).ok());
    ASSERT_TRUE(conn->WriteFrame(Op::kAbort, 20, {}).ok());
    EXPECT_EQ(ReadError(*conn, 20).code(), Code::kCancelled);
  }
  // The server still serves descriptor calls, and no chunk was stored by the broken PUTs.
  auto probe = remote_->ProbeChunks(kBucket, d);
  ASSERT_TRUE(probe.has_value()) << probe.error();
  EXPECT_EQ(probe->matched, 0u);
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
  RocksStore& server_store = static_cast<RocksStore&>(*served_->local);
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
    // Accepts one connection, answers Hello, reads the request, then sends a plan and the
    // row's frames with the request's id (the remote store numbers calls from a random
    // start), half-closes and drains until the client goes.
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
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) {
          return;
        }
        FrameHeader h;
        std::vector<std::byte> out;
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
