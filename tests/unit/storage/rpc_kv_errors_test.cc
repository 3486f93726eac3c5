// Errors on the descriptor calls over the storage RPC: server errors reaching the caller with
// the connection kept at a frame boundary, a caller-side sink failing mid-stream dropping only
// that connection, and bad descriptor frames and broken PUT streams sent raw leaving the server
// serving.

#include <gtest/gtest.h>

#include <array>

#include "kv_test_util.h"
#include "oc/descriptor/codec.h"
#include "rpc_kv_test_util.h"

namespace oc::storage::test {
namespace {

using kvtest::Descriptor;
using kvtest::kBucket;
using kvtest::MakeDescriptor;
using kvtest::OraclePayload;
using kvtest::Shape;
using kvtest::StoredLayout;
using kvtest::VectorSink;
using rpc::FrameHeader;
using rpc::Op;

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

}  // namespace
}  // namespace oc::storage::test
