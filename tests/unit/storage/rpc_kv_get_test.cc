// Descriptor GETs over the storage RPC (wire.h kKvProbe, kKvGetLayers): a remote store against
// a real server whose own store runs the KV engine (real RocksDB, real UCX over shared memory
// and TCP, received with the client library). Payloads streamed in the body and written into a
// target by the server's data plane, layerwise and chunkwise, in both delivery orders, and a
// partial hit serving the longest prefix, each compared byte for byte with the oracle of
// kv_test_util.h.

#include <gtest/gtest.h>

#include "kv_test_util.h"
#include "oc/descriptor/codec.h"
#include "rpc_kv_test_util.h"

namespace oc::storage::test {
namespace {

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

}  // namespace
}  // namespace oc::storage::test
