// Descriptor GET (Store::GetLayers, src/kv/): real RocksDB in a temp dir and real UCX over
// shared memory and TCP loopback, received with the client library. Every delivered layer
// is compared byte for byte with an oracle built from the source chunks.

#include <atomic>
#include <thread>

#include "data_plane/ucx_data_plane.h"
#include "kv/kv_engine.h"
#include "kv_test_util.h"

namespace oc::storage::kvtest {
namespace {

using descriptor::ServeMode;

constexpr uint64_t kLayerwiseAlways = 1;
constexpr uint64_t kChunkwiseAlways = ~0ull;

class KvGetTest : public KvBackendTest {
 protected:
  // Stores chunks [0, n) of `d` except those in `missing`; returns every chunk's bytes.
  std::vector<std::vector<std::byte>> StoreChunks(const Descriptor& d, const Shape& s,
                                                  uint64_t seed,
                                                  std::vector<uint64_t> missing = {}) {
    std::vector<std::vector<std::byte>> chunks;
    for (uint64_t j = 0; j < s.n; ++j) {
      chunks.push_back(ChunkBytes(seed, j, s));
      if (std::find(missing.begin(), missing.end(), j) == missing.end()) {
        EXPECT_TRUE(StoreChunk(*store_, d, j, chunks.back()).ok());
      }
    }
    return chunks;
  }
};

struct Case {
  Shape shape;
  Delivery delivery;
  uint64_t threshold;
  bool compact;
};

std::string CaseName(const Case& c) {
  return ShapeName(c.shape) + " " + std::string(descriptor::DeliveryName(c.delivery)) +
         (c.threshold == kLayerwiseAlways ? " layerwise" : " chunkwise") +
         (c.compact ? " compact" : " explicit");
}

std::vector<Case> Cases() {
  const Shape shapes[] = {
      {1, 1, 7, StoredLayout::kL2TD},       // N = 1, L = 1, odd S
      {1, 3, 40'000, StoredLayout::k2LTD},  // N = 1, a layer over several buffers
      {3, 1, 5'001, StoredLayout::kL2TD},   // L = 1, odd S
      {4, 5, 9'999, StoredLayout::kL2TD},   // odd S straddling buffer edges
      {5, 4, 6'000, StoredLayout::k2LTD},   // two ranges per slice
      {2, 6, 2, StoredLayout::k2LTD},       // tiny slices
  };
  std::vector<Case> out;
  int i = 0;
  for (const Shape& s : shapes) {
    for (Delivery delivery : {Delivery::kLayerMajor, Delivery::kChunkMajor}) {
      for (uint64_t threshold : {kLayerwiseAlways, kChunkwiseAlways}) {
        out.push_back(Case{s, delivery, threshold, (i++ % 2) == 0});
      }
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Backends, KvGetTest,
                         ::testing::Values(test::Backend::kRocksSst, test::Backend::kRocksData,
                                           test::Backend::kRados),
                         test::BackendName);

TEST_P(KvGetTest, BodySinkGetsDenseByteExactPayloadInIncreasingOffsets) {
  uint64_t seed = 100;
  for (const Case& c : Cases()) {
    SCOPED_TRACE(CaseName(c));
    ++seed;
    Descriptor d = MakeDescriptor(c.shape, c.compact, seed, c.delivery);
    auto chunks = StoreChunks(d, c.shape, seed);
    auto plan = kv::PlanRequest(source(), kBucket, d, c.threshold);
    ASSERT_TRUE(plan.has_value()) << plan.error();
    EXPECT_EQ(plan->plan.matched, c.shape.n);
    EXPECT_EQ(plan->plan.mode,
              c.threshold == kLayerwiseAlways ? ServeMode::kLayerwise : ServeMode::kChunkwise);
    VectorSink sink(3, 4096);
    kv::AssembleOptions options;
    options.dense = true;
    auto report = kv::Assemble(source(), kBucket, d, *plan, sink, options, kv::Clock::now());
    ASSERT_TRUE(report.has_value()) << report.error();
    EXPECT_TRUE(sink.finished());
    EXPECT_TRUE(sink.final_status().ok());
    EXPECT_FALSE(sink.gap_or_reorder());
    std::vector<std::byte> want(c.shape.n * c.shape.layers * c.shape.s);
    OraclePayload(chunks, c.shape, c.delivery, c.shape.n, c.shape.n, want);
    EXPECT_TRUE(sink.body() == want);
    // Every layer announced once, in order.
    ASSERT_EQ(sink.layers().size(), c.shape.layers);
    for (uint32_t l = 0; l < c.shape.layers; ++l) {
      EXPECT_EQ(sink.layers()[l], l);
    }
    // The assembler holds one unwritten buffer at a time: with a sink that copies at once,
    // never more than one is lent.
    EXPECT_EQ(sink.pool().peak_lent(), 1u);
    EXPECT_EQ(sink.pool().free_count(), 3u);
  }
}

TEST_P(KvGetTest, UcxTargetGetsByteExactLayersOverShmAndTcp) {
  for (const Transport& t : kTransports) {
    SCOPED_TRACE(t.name);
    DataPlaneOptions po;
    po.transports = t.tls;
    po.staging_buffers = 3;
    po.staging_buffer_bytes = 16 << 10;
    po.op_timeout = kWait;
    auto plane = UcxDataPlane::Create(po);
    ASSERT_TRUE(plane.has_value()) << plane.error();
    uint64_t seed = t.tls[0] == 's' ? 200 : 300;
    for (const Case& c : Cases()) {
      for (bool zero_copy : {true, false}) {
        SCOPED_TRACE(CaseName(c) + (zero_copy ? " zero-copy" : " staging"));
        ++seed;
        Descriptor d = MakeDescriptor(c.shape, c.compact, seed, c.delivery);
        auto chunks = StoreChunks(d, c.shape, seed);
        const uint64_t w = c.shape.n * c.shape.layers * c.shape.s;
        auto rx = Receiver::Open(t, w + 64, Where(**plane));  // a little more: stays untouched
        ASSERT_TRUE(rx.has_value()) << rx.error();
        d.target = rx->Target();
        auto delivery = rx->plane->Expect(d.target->address, c.shape.layers);
        ASSERT_TRUE(delivery.has_value()) << delivery.error();
        auto plan = kv::PlanRequest(source(), kBucket, d, c.threshold);
        ASSERT_TRUE(plan.has_value()) << plan.error();
        auto sink = (*plane)->OpenSink(*d.target);
        ASSERT_TRUE(sink.has_value()) << sink.error();
        kv::AssembleOptions options;
        options.zero_copy = zero_copy;
        options.zero_copy_min_bytes = 1;  // these slices are small
        const uint64_t pinned_before = (*plane)->pinned_budget().taken_total();
        auto report = kv::Assemble(source(), kBucket, d, *plan, **sink, options, kv::Clock::now());
        ASSERT_TRUE(report.has_value()) << report.error();
        ASSERT_TRUE((*delivery)->Wait(kWait).ok());
        EXPECT_EQ((*delivery)->layers_ready(), c.shape.layers);
        std::vector<std::byte> want(w + 64, kUntouched);
        OraclePayload(chunks, c.shape, c.delivery, c.shape.n, c.shape.n, want);
        EXPECT_TRUE(rx->memory == want);
        // Zero-copy sends every byte from the store's pins and no staging buffer (from a store
        // that can lend its memory: RocksDB, not RADOS); both kinds of memory are all back.
        const uint64_t pinned = (*plane)->pinned_budget().taken_total() - pinned_before;
        EXPECT_EQ(pinned, zero_copy && source().SupportsPinnedSlices() ? w : 0);
        EXPECT_EQ((*plane)->staging().free_count(), 3u);
        EXPECT_EQ((*plane)->pinned_budget().free(), (*plane)->pinned_budget().capacity());
      }
    }
  }
}

TEST_P(KvGetTest, StoreGetLayersThroughItsOwnDataPlaneAndIntoABody) {
  const Shape s{3, 4, 3'000, StoredLayout::k2LTD};
  Descriptor d = MakeDescriptor(s, true, 7);
  auto chunks = StoreChunks(d, s, 7);
  std::vector<std::byte> want(s.n * s.layers * s.s);
  OraclePayload(chunks, s, d.delivery, s.n, s.n, want);

  // Into a body, with the plan announced before any byte.
  VectorSink sink(2, 5000);
  int plans = 0;
  auto report = store_->GetLayers(kBucket, d, &sink, [&](const KvPlan& p) {
    ++plans;
    EXPECT_EQ(sink.writes(), 0u);
    EXPECT_EQ(p.matched, s.n);
    EXPECT_EQ(p.num_chunks, s.n);
    EXPECT_EQ(p.payload_bytes, want.size());
    EXPECT_EQ(p.request_id, d.request_id);
    return Status::Ok();
  });
  ASSERT_TRUE(report.has_value()) << report.error();
  EXPECT_EQ(plans, 1);
  EXPECT_TRUE(sink.body() == want);
  EXPECT_EQ(report->plan.mode, ServeMode::kChunkwise);  // 36 KB is far below the default Θ
  EXPECT_EQ(report->layers_notified, s.layers);
  EXPECT_EQ(report->assigned_rate_gbps, 0);

  // Into a target over shared memory.
  auto rx = Receiver::Open(kTransports[0], want.size(), WhereIs(*store_, kBucket));
  ASSERT_TRUE(rx.has_value()) << rx.error();
  d.target = rx->Target();
  auto delivery = rx->plane->Expect(d.target->address, s.layers);
  ASSERT_TRUE(delivery.has_value());
  report = store_->GetLayers(kBucket, d, nullptr, {});
  ASSERT_TRUE(report.has_value()) << report.error();
  ASSERT_TRUE((*delivery)->Wait(kWait).ok());
  EXPECT_TRUE(rx->memory == want);
}

TEST_P(KvGetTest, PartialHitServesTheLongestPrefixAndNeverZeroFills) {
  const Shape s{5, 3, 1'001, StoredLayout::kL2TD};
  for (bool layerwise : {false, true}) {
    SCOPED_TRACE(layerwise ? "layerwise" : "chunkwise");
    const uint64_t seed = layerwise ? 11 : 12;
    Descriptor d = MakeDescriptor(s, !layerwise, seed);
    auto chunks = StoreChunks(d, s, seed, /*missing=*/{2, 4});
    const uint64_t threshold = layerwise ? kLayerwiseAlways : kChunkwiseAlways;

    auto probe = store_->ProbeChunks(kBucket, d);
    ASSERT_TRUE(probe.has_value()) << probe.error();
    EXPECT_EQ(probe->matched, 2u);
    ASSERT_EQ(probe->sizes.size(), 5u);
    EXPECT_EQ(probe->sizes[0], s.layers * s.s);
    EXPECT_EQ(probe->sizes[2], std::nullopt);
    EXPECT_EQ(probe->sizes[3], s.layers * s.s);  // present but after the gap
    EXPECT_EQ(probe->sizes[4], std::nullopt);

    auto plan = kv::PlanRequest(source(), kBucket, d, threshold);
    ASSERT_TRUE(plan.has_value()) << plan.error();
    EXPECT_EQ(plan->plan.matched, 2u);
    EXPECT_EQ(plan->plan.payload_bytes, 2 * s.layers * s.s);

    // Body: dense in M = 2.
    VectorSink body(2, 700);
    kv::AssembleOptions dense;
    dense.dense = true;
    ASSERT_TRUE(
        kv::Assemble(source(), kBucket, d, *plan, body, dense, kv::Clock::now()).has_value());
    std::vector<std::byte> want_body(2 * s.layers * s.s);
    OraclePayload(chunks, s, d.delivery, /*n=*/2, /*m=*/2, want_body);
    EXPECT_TRUE(body.body() == want_body);

    // Target: offsets with N = 5, slices of chunks 2..4 untouched.
    auto rx = Receiver::Open(kTransports[0], s.n * s.layers * s.s, WhereIs(*store_, kBucket));
    ASSERT_TRUE(rx.has_value()) << rx.error();
    d.target = rx->Target();
    auto delivery = rx->plane->Expect(d.target->address, s.layers);
    ASSERT_TRUE(delivery.has_value());
    auto report = store_->GetLayers(kBucket, d, nullptr, {});
    ASSERT_TRUE(report.has_value()) << report.error();
    EXPECT_EQ(report->plan.matched, 2u);
    ASSERT_TRUE((*delivery)->Wait(kWait).ok());
    std::vector<std::byte> want(s.n * s.layers * s.s, kUntouched);
    OraclePayload(chunks, s, d.delivery, s.n, 2, want);
    EXPECT_TRUE(rx->memory == want);
  }
}

TEST_P(KvGetTest, NoChunkPresentDeliversNothingAndFinishes) {
  const Shape s{2, 2, 100, StoredLayout::kL2TD};
  Descriptor d = MakeDescriptor(s, true, 21);
  auto chunks = StoreChunks(d, s, 21, /*missing=*/{0});
  VectorSink sink(1, 64);
  uint64_t matched = 99;
  auto report = store_->GetLayers(kBucket, d, &sink, [&](const KvPlan& p) {
    matched = p.matched;
    return Status::Ok();
  });
  ASSERT_TRUE(report.has_value()) << report.error();
  EXPECT_EQ(matched, 0u);
  EXPECT_TRUE(sink.body().empty());
  EXPECT_TRUE(sink.layers().empty());
  EXPECT_TRUE(sink.finished() && sink.final_status().ok());

  auto rx = Receiver::Open(kTransports[0], s.n * s.layers * s.s, WhereIs(*store_, kBucket));
  ASSERT_TRUE(rx.has_value());
  d.target = rx->Target();
  auto delivery = rx->plane->Expect(d.target->address, s.layers);
  ASSERT_TRUE(delivery.has_value());
  ASSERT_TRUE(store_->GetLayers(kBucket, d, nullptr, {}).has_value());
  EXPECT_TRUE((*delivery)->Wait(kWait).ok());  // "done" with no layer
  EXPECT_EQ((*delivery)->layers_ready(), 0u);
  EXPECT_TRUE(std::all_of(rx->memory.begin(), rx->memory.end(),
                          [](std::byte b) { return b == kUntouched; }));
}

TEST_P(KvGetTest, ShapeMismatchIsAnErrorNamingTheField) {
  const Shape stored{2, 4, 1'000, StoredLayout::kL2TD};
  Descriptor d = MakeDescriptor(stored, true, 31);
  auto chunks = StoreChunks(d, stored, 31);
  // A plain object (no ChunkShape) of the wrong size in the prefix.
  Descriptor plain = MakeDescriptor(Shape{1, 4, 1'000, StoredLayout::kL2TD}, false, 32);
  ASSERT_TRUE(StoreChunk(*store_, plain, 0, testutil::PatternBytes(1, 3'000), false).ok());

  struct Row {
    const char* what;
    Descriptor d;
    const char* field;
  };
  std::vector<Row> rows;
  rows.push_back({"L and S differ, same size", d, "x-oc-num-layers"});
  rows.back().d.num_layers = 8;
  rows.back().d.layer_bytes = 500;
  rows.push_back({"S differs", d, "x-oc-layer-bytes"});
  rows.back().d.layer_bytes = 1'002;
  rows.push_back({"layout differs", d, "x-oc-layout"});
  rows.back().d.layout = StoredLayout::k2LTD;
  rows.push_back({"plain object of the wrong size", plain, "x-oc-layer-bytes"});
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    VectorSink sink(1, 64);
    bool planned = false;
    auto r = store_->GetLayers(kBucket, row.d, &sink, [&](const KvPlan&) {
      planned = true;
      return Status::Ok();
    });
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), Code::kInvalidArgument);
    EXPECT_EQ(r.error().field(), row.field) << r.error();
    EXPECT_FALSE(planned);
    EXPECT_FALSE(sink.finished());  // untouched: the gateway can still answer 400
    auto probe = store_->ProbeChunks(kBucket, row.d);
    ASSERT_FALSE(probe.has_value());
    EXPECT_EQ(probe.error().field(), row.field);
  }
}

TEST_P(KvGetTest, BadRequestsFailBeforeAnyWrite) {
  const Shape s{3, 2, 500, StoredLayout::kL2TD};
  Descriptor d = MakeDescriptor(s, true, 41);
  auto chunks = StoreChunks(d, s, 41);
  auto rx = Receiver::Open(kTransports[0], s.n * s.layers * s.s, WhereIs(*store_, kBucket));
  ASSERT_TRUE(rx.has_value());

  struct Row {
    const char* what;
    Descriptor d;
    const char* field;
  };
  std::vector<Row> rows;
  rows.push_back({"target too small", d, "x-oc-target-length"});
  rows.back().d.target = rx->Target();
  rows.back().d.target->length -= 1;
  rows.push_back({"rkey not an rkey", d, "x-oc-target-rkey"});
  rows.back().d.target = rx->Target();
  rows.back().d.target->rkey.resize(3);
  rows.push_back({"unknown connection", d, "x-oc-target-connection"});
  rows.back().d.target = rx->Target();
  rows.back().d.target->connection[0] ^= std::byte{0xff};
  rows.push_back({"odd S for kv_2ltd", d, "x-oc-layer-bytes"});
  rows.back().d.layout = StoredLayout::k2LTD;
  rows.back().d.layer_bytes = 501;
  rows.back().d.target = rx->Target();
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    auto r = store_->GetLayers(kBucket, row.d, nullptr, [](const KvPlan&) {
      ADD_FAILURE() << "planned";
      return Status::Ok();
    });
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), Code::kInvalidArgument) << r.error();
    EXPECT_EQ(r.error().field(), row.field) << r.error();
  }
  EXPECT_TRUE(std::all_of(rx->memory.begin(), rx->memory.end(),
                          [](std::byte b) { return b == kUntouched; }));
  // An absent bucket.
  VectorSink sink(1, 64);
  auto r = store_->GetLayers("no-such-bucket", d, &sink, {});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kNotFound);
  // A plan refused by the caller ends the request before any byte, with Finish(error).
  r = store_->GetLayers(kBucket, d, &sink,
                        [](const KvPlan&) { return Status::Cancelled("client went away"); });
  ASSERT_FALSE(r.has_value());
  EXPECT_TRUE(sink.finished());
  EXPECT_TRUE(sink.body().empty());
}

// Ends the client's data plane while the server is between layers.
class VanishingPacer final : public LayerPacer {
 public:
  explicit VanishingPacer(std::function<void()> vanish) : vanish_(std::move(vanish)) {}
  Status BeforeLayer(uint32_t layer, uint64_t) override {
    if (layer == 1) {
      vanish_();
    }
    return Status::Ok();
  }
  double assigned_rate_gbps() const override { return 1.5; }

 private:
  std::function<void()> vanish_;
};

TEST_P(KvGetTest, ClientThatDisappearsMidTransferIsCleanedUpAndTheNextRequestWorks) {
  // The client "disappears" here by destroying its buffer and UCX worker in this process
  // while rendezvous receives are in flight: the client library must refuse new data, let
  // the receives already started land, and only then destroy its worker (UCX 1.13 aborts in
  // ucp_worker_destroy otherwise). A client process that really dies is covered by
  // client_test (data_plane_peer killed mid-transfer) and integration.objectcache.
  const Shape s{4, 6, 60'000, StoredLayout::kL2TD};
  Descriptor d = MakeDescriptor(s, true, 51);
  auto chunks = StoreChunks(d, s, 51);
  DataPlaneOptions po;
  po.transports = "tcp";  // in one process only TCP notices a peer that is gone
  po.staging_buffers = 3;
  po.staging_buffer_bytes = 32 << 10;
  po.op_timeout = std::chrono::milliseconds(3'000);
  auto plane = UcxDataPlane::Create(po);
  ASSERT_TRUE(plane.has_value()) << plane.error();
  const uint64_t w = s.n * s.layers * s.s;
  for (bool zero_copy : {false, true}) {
    SCOPED_TRACE(zero_copy ? "zero-copy" : "staging");
    // The client's memory outlives its UCX worker, as a crashed process's would not
    // matter: what is under test is the server noticing and cleaning up.
    auto rx = Receiver::Open(kTransports[1], w, Where(**plane));
    ASSERT_TRUE(rx.has_value());
    d.target = rx->Target();
    auto plan = kv::PlanRequest(source(), kBucket, d, kLayerwiseAlways);
    ASSERT_TRUE(plan.has_value());
    auto sink = (*plane)->OpenSink(*d.target);
    ASSERT_TRUE(sink.has_value());
    VanishingPacer pacer([&] {
      rx->buffer.reset();
      rx->plane.reset();
    });
    kv::AssembleOptions options;
    options.pacer = &pacer;
    options.zero_copy = zero_copy;
    options.zero_copy_min_bytes = 1;
    auto report = kv::Assemble(source(), kBucket, d, *plan, **sink, options, kv::Clock::now());
    // Either the failure is seen (kUnavailable) or the writes had all left before the
    // worker closed; in both cases every staging buffer must come back.
    if (!report.has_value()) {
      EXPECT_EQ(report.error().code(), Code::kUnavailable) << report.error();
    }
  }
  // Buffers of stuck writes are retired and replaced by the pool, and pinned writes give their
  // budget back: none is lost.
  EXPECT_EQ((*plane)->staging().free_count(), 3u);
  EXPECT_EQ((*plane)->pinned_budget().free(), (*plane)->pinned_budget().capacity());

  // A new client is served by the same server data plane.
  auto rx = Receiver::Open(kTransports[1], w, Where(**plane));
  ASSERT_TRUE(rx.has_value());
  d.target = rx->Target();
  auto delivery = rx->plane->Expect(d.target->address, s.layers);
  ASSERT_TRUE(delivery.has_value());
  auto plan = kv::PlanRequest(source(), kBucket, d, kLayerwiseAlways);
  ASSERT_TRUE(plan.has_value());
  auto sink = (*plane)->OpenSink(*d.target);
  ASSERT_TRUE(sink.has_value()) << sink.error();
  auto report = kv::Assemble(source(), kBucket, d, *plan, **sink, {}, kv::Clock::now());
  ASSERT_TRUE(report.has_value()) << report.error();
  ASSERT_TRUE((*delivery)->Wait(kWait).ok());
  std::vector<std::byte> want(w);
  OraclePayload(chunks, s, d.delivery, s.n, s.n, want);
  EXPECT_TRUE(rx->memory == want);
}

}  // namespace
}  // namespace oc::storage::kvtest
