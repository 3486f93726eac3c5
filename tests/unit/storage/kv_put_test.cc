// Descriptor PUT (Store::PutChunks) from a body and over UCX (the server pulls from the
// client's registered buffer), and the three descriptor calls through a remote store served
// by an in-process RPC server over a real RocksDB. Create-if-absent (Descriptor::if_none_match)
// through the Store API and the RPC, and raced by several writers.

#include <latch>
#include <optional>
#include <thread>

#include "composed_store.h"
#include "kv/kv_engine.h"
#include "kv_test_util.h"
#include "oc/storage/remote_store.h"
#include "oc/storage/rpc_server.h"
#include "rocks/rocks_store.h"

namespace oc::storage::kvtest {
namespace {

class KvPutTest : public KvBackendTest {
 protected:
  // The N chunks back to back, as a PUT body carries them.
  static std::vector<std::byte> Body(const std::vector<std::vector<std::byte>>& chunks) {
    std::vector<std::byte> out;
    for (const auto& c : chunks) {
      out.insert(out.end(), c.begin(), c.end());
    }
    return out;
  }

  // Checks every chunk object: bytes, size and stored shape.
  void ExpectStored(Store& store, const Descriptor& d,
                    const std::vector<std::vector<std::byte>>& chunks) {
    for (uint64_t j = 0; j < chunks.size(); ++j) {
      SCOPED_TRACE(j);
      const ObjectKey key{kBucket, d.ObjectName(j)};
      auto meta = store.Head(key);
      ASSERT_TRUE(meta.has_value()) << meta.error();
      EXPECT_EQ(meta->size, chunks[j].size());
      ASSERT_TRUE(meta->chunk.has_value());
      EXPECT_EQ(meta->chunk->layout, d.layout);
      EXPECT_EQ(meta->chunk->num_layers, d.num_layers);
      EXPECT_EQ(meta->chunk->layer_bytes, d.layer_bytes);
      auto reader = store.Get(key, ByteRange::All());
      ASSERT_TRUE(reader.has_value()) << reader.error();
      std::vector<std::byte> got(chunks[j].size() + 1);
      uint64_t at = 0;
      for (;;) {
        auto n = (*reader)->Read(MutableByteSpan(got).subspan(at));
        ASSERT_TRUE(n.has_value()) << n.error();
        if (*n == 0) {
          break;
        }
        at += *n;
      }
      got.resize(at);
      EXPECT_TRUE(got == chunks[j]);
    }
  }
};

INSTANTIATE_TEST_SUITE_P(Backends, KvPutTest,
                         ::testing::Values(test::Backend::kRocksSst, test::Backend::kRocksData,
                                           test::Backend::kRados),
                         test::BackendName);

TEST_P(KvPutTest, BodyChunksAreStoredWithTheirShapeAndServeLayers) {
  const Shape shapes[] = {{1, 1, 7, StoredLayout::kL2TD},
                          {3, 4, 5'000, StoredLayout::k2LTD},
                          {6, 2, 3'001, StoredLayout::kL2TD}};
  uint64_t seed = 500;
  for (const Shape& s : shapes) {
    for (bool compact : {true, false}) {
      SCOPED_TRACE(ShapeName(s) + (compact ? " compact" : " explicit"));
      ++seed;
      Descriptor d = MakeDescriptor(s, compact, seed);
      std::vector<std::vector<std::byte>> chunks;
      for (uint64_t j = 0; j < s.n; ++j) {
        chunks.push_back(ChunkBytes(seed, j, s));
      }
      MemorySource body(Body(chunks), /*piece=*/777);
      auto report = store_->PutChunks(kBucket, d, &body);
      ASSERT_TRUE(report.has_value()) << report.error();
      EXPECT_EQ(report->chunks, s.n);
      EXPECT_EQ(report->bytes, s.n * s.layers * s.s);
      EXPECT_EQ(report->request_id, d.request_id);
      ExpectStored(*store_, d, chunks);
      // And they come back as layers.
      VectorSink sink(2, 4096);
      auto got = store_->GetLayers(kBucket, d, &sink, {});
      ASSERT_TRUE(got.has_value()) << got.error();
      std::vector<std::byte> want(s.n * s.layers * s.s);
      OraclePayload(chunks, s, d.delivery, s.n, s.n, want);
      EXPECT_TRUE(sink.body() == want);
    }
  }
}

TEST_P(KvPutTest, ChunksArePulledFromTheClientsBufferOverUcx) {
  const Shape s{4, 3, 10'001, StoredLayout::kL2TD};  // chunks span several staging buffers
  const Shape s2{2, 5, 6'000, StoredLayout::k2LTD};
  uint64_t seed = 600;
  for (const Transport& t : kTransports) {
    for (const Shape& shape : {s, s2}) {
      SCOPED_TRACE(std::string(t.name) + " " + ShapeName(shape));
      ++seed;
      Descriptor d = MakeDescriptor(shape, true, seed);
      std::vector<std::vector<std::byte>> chunks;
      for (uint64_t j = 0; j < shape.n; ++j) {
        chunks.push_back(ChunkBytes(seed, j, shape));
      }
      auto rx = Receiver::Open(t, shape.n * shape.layers * shape.s, WhereIs(*store_, kBucket));
      ASSERT_TRUE(rx.has_value()) << rx.error();
      const std::vector<std::byte> source = Body(chunks);
      ASSERT_EQ(source.size(), rx->memory.size());
      std::copy(source.begin(), source.end(), rx->memory.begin());  // into the mapped memory
      d.target = rx->Target();
      auto report = store_->PutChunks(kBucket, d, nullptr);
      ASSERT_TRUE(report.has_value()) << report.error();
      EXPECT_EQ(report->chunks, shape.n);
      ExpectStored(*store_, d, chunks);
    }
  }
}

// A buffer the client's UCX allocated (System V shared memory, as Client::data_plane()->
// Allocate and the Python package's allocate_buffer give) is attached by the server's UCX and
// read in place, straight into the group (UcxDataPlane::SourceInPlace; docs/decisions/
// kv-put-pull-in-place.md): the same bytes must be stored as through the staging pulls above.
TEST_P(KvPutTest, ChunksAreReadInPlaceFromAnAttachedClientBuffer) {
  const Shape shape{3, 4, 10'001, StoredLayout::kL2TD};
  Descriptor d = MakeDescriptor(shape, true, 700);
  std::vector<std::vector<std::byte>> chunks;
  for (uint64_t j = 0; j < shape.n; ++j) {
    chunks.push_back(ChunkBytes(700, j, shape));
  }
  auto rx = Receiver::Open(kTransports[0], 1, WhereIs(*store_, kBucket));
  ASSERT_TRUE(rx.has_value()) << rx.error();
  const std::vector<std::byte> source = Body(chunks);
  auto allocated = rx->plane->Allocate(source.size());
  ASSERT_TRUE(allocated.has_value()) << allocated.error();
  std::copy(source.begin(), source.end(), (*allocated)->bytes().begin());
  d.target = (*allocated)->Target(rx->connection);
  auto report = store_->PutChunks(kBucket, d, nullptr);
  ASSERT_TRUE(report.has_value()) << report.error();
  EXPECT_EQ(report->chunks, shape.n);
  ExpectStored(*store_, d, chunks);
  // A target longer than the attached buffer is refused before any byte is read.
  d.target->length += 4096;
  EXPECT_FALSE(store_->PutChunks(kBucket, d, nullptr).has_value());
}

TEST_P(KvPutTest, ABodyOfTheWrongLengthIsRefusedAndNoChunkIsStored) {
  const Shape s{3, 2, 1'000, StoredLayout::kL2TD};
  Descriptor d = MakeDescriptor(s, false, 700);
  std::vector<std::vector<std::byte>> chunks;
  for (uint64_t j = 0; j < s.n; ++j) {
    chunks.push_back(ChunkBytes(700, j, s));
  }
  std::vector<std::byte> body = Body(chunks);
  body.resize(body.size() - 1);  // chunk 2 is one byte short
  MemorySource short_body(body, 4096);
  auto r = store_->PutChunks(kBucket, d, &short_body);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.error().subject(), Subject::kEntity);
  auto probe = store_->ProbeChunks(kBucket, d);
  ASSERT_TRUE(probe.has_value()) << probe.error();
  EXPECT_EQ(probe->matched, 0u);  // all or nothing: chunks 0 and 1 were whole, yet not stored
  EXPECT_EQ(probe->sizes, std::vector<std::optional<uint64_t>>(s.n));

  Descriptor d2 = MakeDescriptor(s, true, 701);
  std::vector<std::byte> long_body = Body(chunks);
  long_body.push_back(std::byte{1});
  MemorySource long_source(long_body, 4096);
  r = store_->PutChunks(kBucket, d2, &long_source);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().subject(), Subject::kEntity);

  // Bad descriptors are refused before anything is written.
  Descriptor bad = d2;
  bad.layout = StoredLayout::k2LTD;
  bad.layer_bytes = 999;
  MemorySource unused(Body(chunks), 4096);
  r = store_->PutChunks(kBucket, bad, &unused);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().field(), "x-oc-layer-bytes");
  r = store_->PutChunks("no-such-bucket", d2, &unused);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kNotFound);
}

// An in-process RPC server over `store` and a remote store connected to it.
struct RemoteOver {
  explicit RemoteOver(Store* store) {
    rpc::RpcServerOptions ro;
    ro.listen = "127.0.0.1:0";
    ro.io_threads = 1;
    ro.store_threads = 2;
    auto started = rpc::RpcServer::Start(store, ro, "kv-secret");
    EXPECT_TRUE(started.has_value()) << started.error();
    if (!started.has_value()) {
      return;
    }
    server = std::move(*started);
    RemoteStoreOptions remote_options;
    remote_options.endpoints = {server->endpoint()};
    remote_options.secret = "kv-secret";
    auto connected = ConnectRemoteStore(remote_options);
    EXPECT_TRUE(connected.has_value()) << connected.error();
    if (connected.has_value()) {
      remote = std::move(*connected);
    }
  }
  ~RemoteOver() {
    remote.reset();
    if (server != nullptr) {
      server->Shutdown();
      server->Wait();
    }
  }
  std::unique_ptr<rpc::RpcServer> server;
  std::unique_ptr<Store> remote;
};

// docs/protocol.md, "Descriptor PUT: create if absent": with if_none_match a chunk already
// stored keeps its bytes and is reported as existing, the absent ones are written in the same
// commit, and the request succeeds; through the Store API and through a remote store (the
// descriptor text and KvPutReport::existed cross the RPC).
TEST_P(KvPutTest, IfNoneMatchLeavesPresentChunksAndReportsWhichExisted) {
  RemoteOver over(store_.get());
  ASSERT_NE(over.remote, nullptr);
  for (const bool remote : {false, true}) {
    SCOPED_TRACE(remote ? "remote store" : "store API");
    Store& st = remote ? *over.remote : *store_;
    const Shape s{4, 2, 3'000, StoredLayout::kL2TD};
    const uint64_t seed = remote ? 1101 : 1100;
    Descriptor d = MakeDescriptor(s, /*compact=*/false, seed);
    std::vector<std::vector<std::byte>> old_chunks, new_chunks;
    for (uint64_t j = 0; j < s.n; ++j) {
      old_chunks.push_back(ChunkBytes(seed, j, s));
      new_chunks.push_back(ChunkBytes(seed + 50, j, s));
    }
    // Chunks 1 and 3 are stored first.
    const auto& names = std::get<descriptor::ExplicitKeys>(d.keys).names;
    Descriptor odd = d;
    odd.keys = descriptor::ExplicitKeys{{names[1], names[3]}};
    MemorySource first(Body({old_chunks[1], old_chunks[3]}), 1'000);
    auto plain = st.PutChunks(kBucket, odd, &first);
    ASSERT_TRUE(plain.has_value()) << plain.error();
    EXPECT_TRUE(plain->existed.empty());

    Descriptor create = d;
    create.if_none_match = true;
    MemorySource body(Body(new_chunks), 2'500);
    auto r = st.PutChunks(kBucket, create, &body);
    ASSERT_TRUE(r.has_value()) << r.error();
    EXPECT_EQ(r->chunks, s.n);
    EXPECT_EQ(r->existed, (std::vector<bool>{false, true, false, true}));
    ExpectStored(st, d, {new_chunks[0], old_chunks[1], new_chunks[2], old_chunks[3]});

    // Every chunk present now: nothing changes, all reported existing.
    MemorySource again(Body(old_chunks), 4'000);
    r = st.PutChunks(kBucket, create, &again);
    ASSERT_TRUE(r.has_value()) << r.error();
    EXPECT_EQ(r->existed, std::vector<bool>(s.n, true));
    ExpectStored(st, d, {new_chunks[0], old_chunks[1], new_chunks[2], old_chunks[3]});

    // The body is still checked whole: a short one fails and changes nothing.
    std::vector<std::byte> short_body = Body(old_chunks);
    short_body.pop_back();
    MemorySource truncated(short_body, 4'000);
    r = st.PutChunks(kBucket, create, &truncated);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().subject(), Subject::kEntity);

    // Without the option every chunk is replaced.
    MemorySource replace(Body(old_chunks), 4'000);
    r = st.PutChunks(kBucket, d, &replace);
    ASSERT_TRUE(r.has_value()) << r.error();
    EXPECT_TRUE(r->existed.empty());
    ExpectStored(st, d, old_chunks);
  }
}

// "First writer wins" under a race: writers whose chunk sets overlap PUT with if_none_match at
// once; every request succeeds, every chunk is reported written by exactly one of them, and it
// holds that writer's bytes.
TEST_P(KvPutTest, RacingCreateIfAbsentPutsLeaveEachChunkWithExactlyOneWritersBytes) {
  constexpr int kWriters = 6;
  constexpr uint64_t kChunks = 8;
  const Shape s{4, 2, 16'000, StoredLayout::kL2TD};  // each writer names 4 of the 8 chunks
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    auto name = [&](uint64_t j) {
      return "race-" + std::to_string(round) + "-" + std::to_string(j);
    };
    auto global = [&](int w, uint64_t i) { return (w + i) % kChunks; };
    auto bytes = [&](int w, uint64_t j) {
      return testutil::PatternBytes(round * 1'000'000 + w * 1'000 + j + 1, s.layers * s.s);
    };
    std::vector<std::optional<Result<KvPutReport>>> results(kWriters);
    std::latch start(kWriters);
    std::vector<std::thread> threads;
    for (int w = 0; w < kWriters; ++w) {
      threads.emplace_back([&, w] {
        Descriptor d = MakeDescriptor(s, /*compact=*/false, 2000 + w);
        descriptor::ExplicitKeys keys;
        std::vector<std::byte> body;
        for (uint64_t i = 0; i < s.n; ++i) {
          keys.names.push_back(name(global(w, i)));
          const std::vector<std::byte> b = bytes(w, global(w, i));
          body.insert(body.end(), b.begin(), b.end());
        }
        d.keys = std::move(keys);
        d.if_none_match = true;
        MemorySource source(std::move(body), 8'000);
        start.arrive_and_wait();
        results[w] = store_->PutChunks(kBucket, d, &source);
      });
    }
    for (std::thread& t : threads) {
      t.join();
    }
    std::vector<std::vector<int>> writers_of(kChunks);
    for (int w = 0; w < kWriters; ++w) {
      ASSERT_TRUE(results[w]->has_value()) << results[w]->error();
      const KvPutReport& r = **results[w];
      ASSERT_EQ(r.existed.size(), s.n);
      for (uint64_t i = 0; i < s.n; ++i) {
        if (!r.existed[i]) {
          writers_of[global(w, i)].push_back(w);
        }
      }
    }
    for (uint64_t j = 0; j < kChunks; ++j) {
      SCOPED_TRACE(name(j));
      ASSERT_EQ(writers_of[j].size(), 1u) << "chunks must have exactly one writer";
      Result<std::string> stored = test::GetString(*store_, ObjectKey{kBucket, name(j)});
      ASSERT_TRUE(stored.has_value()) << stored.error();
      const std::vector<std::byte> want = bytes(writers_of[j][0], j);
      EXPECT_TRUE(*stored == std::string(reinterpret_cast<const char*>(want.data()), want.size()));
    }
  }
}

// A source that serves `bytes` and then fails, in place of more bytes or of its end.
class FailingSource final : public ChunkSource {
 public:
  FailingSource(std::vector<std::byte> bytes, Status error)
      : inner_(std::move(bytes), 5'000), error_(std::move(error)) {}
  Result<uint64_t> Read(MutableByteSpan out) override {
    OC_ASSIGN_OR_RETURN(const uint64_t n, inner_.Read(out));
    if (n == 0) {
      return error_;
    }
    return n;
  }

 private:
  MemorySource inner_;
  Status error_;
};

// What the store holds besides objects: extent records and pending (uncommitted) writes.
struct Residue {
  uint64_t extents = 0;
  uint64_t pending = 0;
  bool operator==(const Residue&) const = default;
};
Residue ResidueOf(Store& store) {
  Residue r;
  Result<uint64_t> extents = dynamic_cast<RocksStore&>(*BackendOf(store)).CountExtents();
  EXPECT_TRUE(extents.has_value());
  r.extents = extents.has_value() ? *extents : 0;
  Result<StoreStats> stats = store.Stats();
  EXPECT_TRUE(stats.has_value());
  if (!stats.has_value()) {
    return r;
  }
  for (const auto& [name, value] : stats->figures) {
    if (name == "writes_in_progress") {
      r.pending = value;
    }
  }
  return r;
}

// A store whose write batches flush every few extents, so a descriptor PUT has written some
// chunks' extents to RocksDB (staged, pending) before it fails.
class KvPutStagingTest : public KvPutTest {
 protected:
  void SetUp() override {
    StoreOptions o = TestStoreOptions(dir_.path());
    o.default_extent_bytes = 16 << 10;
    o.write_batch_bytes = 16 << 10;
    auto s = OpenStore(o);
    ASSERT_TRUE(s.has_value()) << s.error();
    store_ = std::move(*s);
    ASSERT_TRUE(store_->CreateBucket(kBucket, "tester").ok());
  }
};

INSTANTIATE_TEST_SUITE_P(Rocks, KvPutStagingTest, ::testing::Values(test::Backend::kRocksSst),
                         test::BackendName);

TEST_P(KvPutStagingTest, ASourceFailingAtChunk3StoresNothingAndKeepsEveryPreviousVersion) {
  const Shape s{5, 4, 20'000, StoredLayout::kL2TD};  // 80 KB chunks, several flushes each
  Descriptor d = MakeDescriptor(s, true, 900);
  std::vector<std::vector<std::byte>> old_chunks, new_chunks;
  for (uint64_t j = 0; j < s.n; ++j) {
    old_chunks.push_back(ChunkBytes(900, j, s));
    new_chunks.push_back(ChunkBytes(901, j, s));
  }
  // Chunks 0..3 stored (the previous versions); chunk 4 absent.
  Descriptor four = d;
  std::get<descriptor::CompactKeys>(four.keys).hashes.resize(4);
  MemorySource first(Body({old_chunks.begin(), old_chunks.begin() + 4}), 7'000);
  ASSERT_TRUE(store_->PutChunks(kBucket, four, &first).has_value());
  const Residue before = ResidueOf(*store_);
  EXPECT_EQ(before.pending, 0u);

  struct Row {
    std::string_view what;
    uint64_t bytes;  // of the new body served before the error
    Status error;
  };
  const uint64_t chunk = s.layers * s.s;
  for (const Row& row : {
           Row{"fails inside chunk 3", 3 * chunk + 12'345, Status::Cancelled("abandoned")},
           Row{"fails at the start of chunk 3", 3 * chunk, Status::Unavailable("stalled")},
           // Every byte arrived, but the source does not vouch for them (a bad payload hash).
           Row{"fails instead of its end", s.n * chunk,
               Status(Code::kInvalidArgument, Subject::kDigest, "x-amz-content-sha256", "bad")},
       }) {
    SCOPED_TRACE(row.what);
    std::vector<std::byte> body = Body(new_chunks);
    body.resize(row.bytes);
    FailingSource source(std::move(body), row.error);
    auto r = store_->PutChunks(kBucket, d, &source);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), row.error.code()) << r.error();
    ExpectStored(*store_, four, {old_chunks.begin(), old_chunks.begin() + 4});
    auto probe = store_->ProbeChunks(kBucket, d);
    ASSERT_TRUE(probe.has_value()) << probe.error();
    EXPECT_EQ(probe->matched, 4u);
    EXPECT_EQ(probe->sizes[4], std::nullopt);
    EXPECT_EQ(ResidueOf(*store_), before) << "the staged extents were not freed";
  }
  // The same request with a verified end replaces every chunk at once.
  MemorySource good(Body(new_chunks), 9'000);
  auto r = store_->PutChunks(kBucket, d, &good);
  ASSERT_TRUE(r.has_value()) << r.error();
  EXPECT_EQ(r->chunks, s.n);
  ExpectStored(*store_, d, new_chunks);
  EXPECT_EQ(ResidueOf(*store_).pending, 0u);
  EXPECT_EQ(ResidueOf(*store_).extents, s.n * s.layers)  // one extent per layer slice
      << "the replaced versions' extents were not freed";
}

TEST_P(KvPutTest, RemoteStoreServesTheDescriptorCallsOverTheRpc) {
  rpc::RpcServerOptions ro;
  ro.listen = "127.0.0.1:0";
  ro.io_threads = 1;
  ro.store_threads = 2;
  auto server = rpc::RpcServer::Start(store_.get(), ro, "kv-secret");
  ASSERT_TRUE(server.has_value()) << server.error();
  RemoteStoreOptions remote_options;
  remote_options.endpoints = {(*server)->endpoint()};
  remote_options.secret = "kv-secret";
  auto remote = ConnectRemoteStore(remote_options);
  ASSERT_TRUE(remote.has_value()) << remote.error();
  Store& rs = **remote;

  const Shape s{4, 3, 20'000, StoredLayout::k2LTD};
  Descriptor d = MakeDescriptor(s, true, 800);
  std::vector<std::vector<std::byte>> chunks;
  for (uint64_t j = 0; j < s.n; ++j) {
    chunks.push_back(ChunkBytes(800, j, s));
  }
  std::vector<std::byte> body = Body(chunks);
  body.resize(3 * s.layers * s.s);  // only chunks 0..2 are PUT
  Descriptor three = d;
  std::get<descriptor::CompactKeys>(three.keys).hashes.resize(3);
  MemorySource source(body, 100'000);
  auto put = rs.PutChunks(kBucket, three, &source);
  ASSERT_TRUE(put.has_value()) << put.error();
  EXPECT_EQ(put->chunks, 3u);

  auto probe = rs.ProbeChunks(kBucket, d);
  ASSERT_TRUE(probe.has_value()) << probe.error();
  EXPECT_EQ(probe->matched, 3u);

  for (Delivery delivery : {Delivery::kLayerMajor, Delivery::kChunkMajor}) {
    SCOPED_TRACE(descriptor::DeliveryName(delivery));
    d.delivery = delivery;
    d.target.reset();
    VectorSink sink(2, 8192);
    auto got = rs.GetLayers(kBucket, d, &sink, {});
    ASSERT_TRUE(got.has_value()) << got.error();
    EXPECT_EQ(got->plan.matched, 3u);
    std::vector<std::byte> want(3 * s.layers * s.s);
    OraclePayload(chunks, s, delivery, 3, 3, want);
    EXPECT_TRUE(sink.body() == want);

    auto rx = Receiver::Open(kTransports[0], s.n * s.layers * s.s, WhereIs(rs, kBucket));
    ASSERT_TRUE(rx.has_value()) << rx.error();
    d.target = rx->Target();
    auto notes = rx->plane->Expect(d.target->address, s.layers);
    ASSERT_TRUE(notes.has_value());
    got = rs.GetLayers(kBucket, d, nullptr, {});
    ASSERT_TRUE(got.has_value()) << got.error();
    ASSERT_TRUE((*notes)->Wait(kWait).ok());
    std::vector<std::byte> want_target(s.n * s.layers * s.s, kUntouched);
    OraclePayload(chunks, s, delivery, s.n, 3, want_target);
    EXPECT_TRUE(rx->memory == want_target);
  }
  remote->reset();
  (*server)->Shutdown();
  (*server)->Wait();
}

}  // namespace
}  // namespace oc::storage::kvtest
