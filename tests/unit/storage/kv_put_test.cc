// Descriptor PUT (Store::PutChunks) from a body and over UCX (the server pulls from the
// client's registered buffer), and the three descriptor calls through a remote store served
// by an in-process RPC server over a real RocksDB.

#include "kv/kv_engine.h"
#include "kv_test_util.h"
#include "rpc/server.h"

namespace oc::storage::kvtest {
namespace {

class KvPutTest : public KvStoreTest {
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

TEST_F(KvPutTest, BodyChunksAreStoredWithTheirShapeAndServeLayers) {
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

TEST_F(KvPutTest, ChunksArePulledFromTheClientsBufferOverUcx) {
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

TEST_F(KvPutTest, ABodyOfTheWrongLengthIsRefusedAndTheChunkInProgressIsNotVisible) {
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
  EXPECT_EQ(probe->matched, 2u);  // chunks 0 and 1 are whole and committed; 2 is not there
  EXPECT_EQ(probe->sizes[2], std::nullopt);

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

TEST_F(KvPutTest, RemoteStoreServesTheDescriptorCallsOverTheRpc) {
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
