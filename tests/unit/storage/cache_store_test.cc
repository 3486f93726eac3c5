// The cache layer (storage-server/src/cache/cache_store.h) over a real RocksDB store and a real
// RADOS pool: capacity held under a churn of descriptor PUTs, chains evicted from their tails,
// no dead bytes, the index's usage against a listing, 503 SlowDown (kCacheFullField) when
// eviction cannot make room, a restart restoring the index, the [cache] config table, and
// other buckets untouched.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "cache/cache_store.h"
#include "cache_test_util.h"
#include "oc/common/config.h"
#include "oc/storage/config_tables.h"

namespace oc::storage::kvtest {
namespace {

using cache::CacheStore;

// On a parameter's backend (RocksDB data files, or a RADOS namespace of the test cluster): the
// layer is above the seam, so both must hold.
class CacheStoreTest : public ::testing::TestWithParam<test::Backend> {
 protected:
  void SetUp() override {
    Open();
    ASSERT_TRUE(store_->CreateBucket(kBucket, "tester").ok());
    ASSERT_TRUE(store_->CreateBucket(kPlainBucket, "tester").ok());
  }
  void Open(std::chrono::milliseconds put_wait = kWait) {
    StoreOptions o = CacheStoreOptions(dir_.path());
    o.cache.put_wait = put_wait;
    auto s = test::OpenTestStore(GetParam(), o, namespace_);
    ASSERT_TRUE(s.has_value()) << s.error();
    store_ = std::move(*s);
    cache_ = cache::CacheStoreOf(*store_);
    ASSERT_NE(cache_, nullptr);
    // On RADOS only the GC leader evicts; a lone server takes the lead as it opens (its GC
    // thread's first attempt): wait for it, with a deadline.
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (!cache_->leading() && std::chrono::steady_clock::now() < deadline) {
      cache_->SyncNow();
      std::this_thread::yield();
    }
    ASSERT_TRUE(cache_->leading());
  }

  Status PutDescriptor(const Descriptor& d, uint64_t seed) {
    return PutDescriptorInto(*store_, d, seed);
  }
  std::pair<uint64_t, uint64_t> Listed(std::string_view bucket) {
    return ListedIn(*store_, bucket);
  }
  std::vector<bool> Present(const Descriptor& d) { return PresentIn(*store_, d); }

  cache::CacheBucketStats BucketStats() { return *cache_->BucketStats(kBucket); }

  // Evicts down to the low watermark and waits (with a deadline) until no delete of the
  // worker's is in flight, so the index and a listing can be compared.
  void EvictAndSettle() {
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    do {
      cache_->EvictNow();
      if (BucketStats().evicting_bytes == 0) {
        return;
      }
      std::this_thread::yield();
    } while (std::chrono::steady_clock::now() < deadline);
    ADD_FAILURE() << "evictions still in flight after " << kWait.count() << " ms";
  }

  testutil::TempDir dir_;
  const std::string namespace_ = test::RandomRadosNamespace();  // the same after a restart
  std::unique_ptr<Store> store_;
  CacheStore* cache_ = nullptr;
};

INSTANTIATE_TEST_SUITE_P(Backends, CacheStoreTest,
                         ::testing::Values(test::Backend::kRocksData, test::Backend::kRados),
                         test::BackendName);

TEST_P(CacheStoreTest, ChurnOfDescriptorPutsStaysWithinCapacityAndEatsChainsFromTheTail) {
  std::vector<Descriptor> ds;
  uint64_t most_listed = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    SCOPED_TRACE(seed);
    ds.push_back(MakeDescriptor(kShape, /*compact=*/seed % 2 == 0, seed));
    ASSERT_TRUE(PutDescriptor(ds.back(), seed).ok());
    // Every few PUTs, hit an older chain so recency is not just arrival order.
    if (seed % 3 == 0) {
      ASSERT_TRUE(store_->ProbeChunks(kBucket, ds[seed / 2]).has_value());
    }
    const auto [objects, bytes] = Listed(kBucket);
    EXPECT_LE(bytes, kCapacity);  // admission: no PUT ever takes the bucket past capacity
    most_listed = std::max(most_listed, bytes);
  }
  EvictAndSettle();
  const auto [objects, bytes] = Listed(kBucket);
  const cache::CacheBucketStats s = BucketStats();
  EXPECT_EQ(s.index.used_bytes, bytes);  // the index counts what the store holds
  EXPECT_EQ(s.index.objects, objects);
  EXPECT_LE(bytes, kCapacity * 9 / 10);
  EXPECT_GT(s.index.evicted_bytes, 0u);
  EXPECT_EQ(s.index.dead_bytes, 0u);
  // The admitted peak bounds what was ever stored, and admission bounds it by the capacity.
  EXPECT_GE(s.admitted_peak, most_listed);
  EXPECT_LE(s.admitted_peak, kCapacity);
  // Every chain is a present prefix: a chunk never goes before its successors.
  for (const Descriptor& d : ds) {
    const std::vector<bool> p = Present(d);
    for (size_t j = 1; j < p.size(); ++j) {
      EXPECT_TRUE(p[j - 1] || !p[j]) << d.ObjectName(j);
    }
  }
  EXPECT_EQ(s.chunks_requested, 20 * kShape.n);
  EXPECT_GT(s.chunks_served, 0u);
  // The other bucket's objects are never counted nor evicted.
  EXPECT_EQ(Listed(kPlainBucket).first, 0u);
}

TEST_P(CacheStoreTest, RecentlyHitChainsStayWhileOlderOnesGo) {
  const Descriptor hot = MakeDescriptor(kShape, true, 100);
  ASSERT_TRUE(PutDescriptor(hot, 100).ok());
  for (uint64_t seed = 101; seed <= 130; ++seed) {
    ASSERT_TRUE(PutDescriptor(MakeDescriptor(kShape, true, seed), seed).ok());
    KvProbeResult probe = *store_->ProbeChunks(kBucket, hot);
    EXPECT_EQ(probe.matched, kShape.n) << seed;  // hit after every PUT: never evicted
  }
  EvictAndSettle();
  EXPECT_EQ(Present(hot), std::vector<bool>(kShape.n, true));
  EXPECT_EQ(Present(MakeDescriptor(kShape, true, 101)), std::vector<bool>(kShape.n, false));
}

// A descriptor GET in flight keeps every chunk it named: an eviction pass meanwhile (here run
// from the GET's plan callback, once the engine has found the chain present and before it reads
// a byte) spares them, takes other chains instead, and the GET returns every byte. Without the
// pins the oldest chain's tail goes in that pass and the GET fails "changed during the request".
TEST_P(CacheStoreTest, EvictionSparesTheChunksOfADescriptorGetInFlight) {
  const Descriptor old = MakeDescriptor(kShape, true, 200);
  ASSERT_TRUE(PutDescriptor(old, 200).ok());
  // 7 of the 8 descriptors the capacity holds: below the high watermark, so nothing goes until
  // the eighth, stored while the GET runs.
  for (uint64_t seed = 201; seed <= 206; ++seed) {
    ASSERT_TRUE(PutDescriptor(MakeDescriptor(kShape, true, seed), seed).ok());
  }
  std::vector<std::vector<std::byte>> chunks;
  for (uint64_t j = 0; j < kShape.n; ++j) {
    chunks.push_back(ChunkBytes(200, j, kShape));
  }
  std::vector<std::byte> want(kShape.n * kShape.layers * kShape.s);
  OraclePayload(chunks, kShape, old.delivery, kShape.n, kShape.n, want);
  VectorSink sink(2, 4096);
  auto report = store_->GetLayers(kBucket, old, &sink, [&](const KvPlan& p) {
    EXPECT_EQ(p.matched, kShape.n);
    EXPECT_TRUE(PutDescriptor(MakeDescriptor(kShape, true, 207), 207).ok());
    EvictAndSettle();  // the worker's pass, or this one: either finds `old` the least recent
    return Status::Ok();
  });
  ASSERT_TRUE(report.has_value()) << report.error();
  EXPECT_TRUE(sink.body() == want);
  const cache::CacheBucketStats s = BucketStats();
  EXPECT_GT(s.victims_spared, 0u);
  EXPECT_GT(s.index.evicted_bytes, 0u);  // other chains went instead
  EXPECT_EQ(Present(old), std::vector<bool>(kShape.n, true));
  EXPECT_EQ(Present(MakeDescriptor(kShape, true, 201)).back(), false);
  // The GET's hit made its chain the most recent: later passes leave it too.
  for (uint64_t seed = 208; seed <= 210; ++seed) {
    ASSERT_TRUE(PutDescriptor(MakeDescriptor(kShape, true, seed), seed).ok());
  }
  EvictAndSettle();
  EXPECT_EQ(Present(old), std::vector<bool>(kShape.n, true));
  const auto [objects, bytes] = Listed(kBucket);
  EXPECT_EQ(BucketStats().index.used_bytes, bytes);  // spared victims are counted again
  EXPECT_EQ(BucketStats().index.objects, objects);
}

// A client that hit chunks 0..M-1 stores M..N-1 with a descriptor naming only those: the layer
// links chunk M under M-1, where the request stopped, so the index knows the whole chain and,
// when M-1 went in between, that the new chunks are dead (they then go first).
TEST_P(CacheStoreTest, PutOfTheRestOfAPartlyHitPrefixIsLinkedUnderItsLastHitChunk) {
  const Shape six{6, kShape.layers, kShape.s, kShape.layout};
  const auto part = [](const Descriptor& whole, size_t from, size_t to) {
    Descriptor d = whole;
    auto& h = std::get<descriptor::CompactKeys>(d.keys).hashes;
    h = std::vector<descriptor::ChunkHash>(h.begin() + from, h.begin() + to);
    return d;
  };
  const Descriptor whole = MakeDescriptor(six, true, 300);
  ASSERT_TRUE(PutDescriptor(part(whole, 0, 4), 300).ok());
  EXPECT_EQ(BucketStats().index.linked, 3u);
  ASSERT_EQ(store_->ProbeChunks(kBucket, whole)->matched, 4u);
  ASSERT_TRUE(PutDescriptor(part(whole, 4, 6), 301).ok());
  cache::CacheBucketStats s = BucketStats();
  EXPECT_EQ(s.puts_linked, 1u);
  EXPECT_EQ(s.index.linked, 5u);  // chunk 4 under 3 (and 5 under 4, from the PUT itself)
  EXPECT_EQ(s.index.dead_bytes, 0u);

  // Chunk 3 of another prefix goes between the GET that hit 0..3 and the PUT of 4..5.
  const Descriptor other = MakeDescriptor(six, true, 310);
  ASSERT_TRUE(PutDescriptor(part(other, 0, 4), 310).ok());
  VectorSink sink(2, 4096);
  Result<KvGetReport> got = store_->GetLayers(kBucket, other, &sink, {});
  ASSERT_TRUE(got.has_value()) << got.error();
  ASSERT_EQ(got->plan.matched, 4u);
  ASSERT_TRUE(store_->Delete({kBucket, other.ObjectName(3)}).ok());
  ASSERT_TRUE(PutDescriptor(part(other, 4, 6), 311).ok());
  s = BucketStats();
  EXPECT_EQ(s.puts_linked, 2u);
  EXPECT_EQ(s.index.dead_bytes, 2 * kChunkBytes);
}

TEST_P(CacheStoreTest, PutThatCannotGetRoomIsRefusedSlowDownStoringNothing) {
  store_.reset();
  Open(kRefusalWait);
  // A plain PUT that announced 70% of the capacity holds it while its body streams.
  PutOptions big;
  big.expected_size = kCapacity * 7 / 10;
  auto holder = store_->Put({kBucket, "holder"}, big);
  ASSERT_TRUE(holder.has_value()) << holder.error();
  // Nothing is evictable, so a descriptor PUT of half the capacity waits put_wait, then is
  // refused before a byte is stored.
  Descriptor d = MakeDescriptor(Shape{16, 2, 4096, StoredLayout::kL2TD}, true, 7);
  std::vector<std::byte> body(16 * kChunkBytes, std::byte{1});
  MemorySource source(std::move(body), 5000);
  const auto start = std::chrono::steady_clock::now();
  Result<KvPutReport> refused = store_->PutChunks(kBucket, d, &source);
  ASSERT_FALSE(refused.has_value());
  EXPECT_GE(std::chrono::steady_clock::now() - start, kRefusalWait);
  EXPECT_EQ(refused.error().code(), Code::kResourceExhausted);
  EXPECT_EQ(refused.error().field(), kCacheFullField);
  EXPECT_EQ(Present(d), std::vector<bool>(16, false));
  // A plain PUT likewise, at once when it announces more than the capacity.
  PutOptions huge;
  huge.expected_size = kCapacity + 1;
  auto too_big = store_->Put({kBucket, "huge"}, huge);
  ASSERT_FALSE(too_big.has_value());
  EXPECT_EQ(too_big.error().field(), kCacheFullField);
  // An unannounced size is admitted at Commit, before the object becomes visible.
  auto unsized = store_->Put({kBucket, "unsized"}, PutOptions{});
  ASSERT_TRUE(unsized.has_value());
  std::vector<std::byte> half(kCapacity / 2, std::byte{2});
  ASSERT_TRUE((*unsized)->Append(half).ok());
  Result<ObjectMeta> late = (*unsized)->Commit();
  ASSERT_FALSE(late.has_value());
  EXPECT_EQ(late.error().field(), kCacheFullField);
  EXPECT_FALSE(store_->Head({kBucket, "unsized"}).has_value());
  EXPECT_EQ(BucketStats().puts_refused, 3u);
  // Once the holder is gone, the same descriptor PUT fits.
  holder->reset();
  MemorySource again(std::vector<std::byte>(16 * kChunkBytes, std::byte{1}), 5000);
  EXPECT_TRUE(store_->PutChunks(kBucket, d, &again).has_value());
}

TEST_P(CacheStoreTest, PutWaitsForEvictionWhenTheBucketIsFull) {
  // Fill to just under capacity with plain objects (no eviction below the high watermark
  // is needed for these); then a PUT that does not fit waits for the worker to evict.
  for (int i = 0; i < 7; ++i) {
    auto w = store_->Put({kBucket, "p" + std::to_string(i)}, PutOptions{});
    ASSERT_TRUE(w.has_value());
    ASSERT_TRUE((*w)->Append(std::vector<std::byte>(32 << 10, std::byte{3})).ok());
    ASSERT_TRUE((*w)->Commit().has_value());
  }
  PutOptions o;
  o.expected_size = 64 << 10;
  auto w = store_->Put({kBucket, "late"}, o);
  ASSERT_TRUE(w.has_value()) << w.error();
  ASSERT_TRUE((*w)->Append(std::vector<std::byte>(64 << 10, std::byte{4})).ok());
  ASSERT_TRUE((*w)->Commit().has_value());
  EXPECT_GE(BucketStats().puts_waited, 1u);
  EXPECT_FALSE(store_->Head({kBucket, "p0"}).has_value());  // least recent went first
  EXPECT_LE(Listed(kBucket).second, kCapacity);
}

TEST_P(CacheStoreTest, MultipartCompletionThatDoesNotFitWaitsThenIsRefusedStoringNothing) {
  store_.reset();
  Open(kRefusalWait);
  // Parts are not counted; the object is admitted whole at completion. A held PUT of 70% of
  // the capacity leaves no room for a 50% object, and nothing is evictable.
  PutOptions big;
  big.expected_size = kCapacity * 7 / 10;
  auto holder = store_->Put({kBucket, "holder"}, big);
  ASSERT_TRUE(holder.has_value()) << holder.error();
  const ObjectKey key{kBucket, "mp"};
  Result<std::string> id = store_->CreateMultipartUpload(key, {});
  ASSERT_TRUE(id.has_value()) << id.error();
  auto part = store_->UploadPart(key, *id, 1, {});
  ASSERT_TRUE(part.has_value()) << part.error();
  ASSERT_TRUE((*part)->Append(std::vector<std::byte>(kCapacity / 2, std::byte{5})).ok());
  Result<ObjectMeta> part_meta = (*part)->Commit();
  ASSERT_TRUE(part_meta.has_value()) << part_meta.error();
  const std::vector<CompletedPart> parts = {CompletedPart{1, part_meta->etag, {}, {}}};

  const auto start = std::chrono::steady_clock::now();
  Result<ObjectMeta> refused = store_->CompleteMultipartUpload(key, *id, parts, {});
  ASSERT_FALSE(refused.has_value());
  EXPECT_GE(std::chrono::steady_clock::now() - start, kRefusalWait);
  EXPECT_EQ(refused.error().code(), Code::kResourceExhausted);
  EXPECT_EQ(refused.error().field(), kCacheFullField);
  EXPECT_FALSE(store_->Head(key).has_value());  // nothing stored...
  Result<ListPartsResult> listed = store_->ListParts(key, *id, 0, 10);
  ASSERT_TRUE(listed.has_value()) << listed.error();  // ...and the upload is intact
  EXPECT_EQ(listed->parts.size(), 1u);
  EXPECT_EQ(BucketStats().puts_refused, 1u);

  // Once the holder is gone, the retried completion fits; a retry of that success answers
  // the object without being admitted again.
  holder->reset();
  Result<ObjectMeta> done = store_->CompleteMultipartUpload(key, *id, parts, {});
  ASSERT_TRUE(done.has_value()) << done.error();
  EXPECT_EQ(done->size, kCapacity / 2);
  Result<ObjectMeta> again = store_->CompleteMultipartUpload(key, *id, parts, {});
  if (again.has_value()) {
    EXPECT_EQ(again->etag, done->etag);
  }
  EXPECT_EQ(BucketStats().puts_refused, 1u);
  const auto [objects, bytes] = Listed(kBucket);
  EXPECT_EQ(objects, 1u);
  EXPECT_EQ(bytes, kCapacity / 2);
  EXPECT_EQ(BucketStats().index.used_bytes, bytes);
}

TEST_P(CacheStoreTest, RestartRestoresTheIndexAndHidesItsState) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    ASSERT_TRUE(PutDescriptor(MakeDescriptor(kShape, true, seed), seed).ok());
  }
  const cache::CacheBucketStats before = BucketStats();
  ASSERT_TRUE(cache_->PersistSnapshots().ok());
  EXPECT_GT(before.index.linked, 0u);
  // The snapshot bucket is nobody's: not listed, not reachable, not creatable.
  auto buckets = store_->ListBuckets();
  ASSERT_TRUE(buckets.has_value());
  EXPECT_EQ(buckets->size(), 2u);
  EXPECT_EQ(store_->HeadBucket(kCacheStateBucket).error().code(), Code::kNotFound);
  EXPECT_FALSE(store_->List(kCacheStateBucket, {}).has_value());
  EXPECT_FALSE(store_->CreateBucket(kCacheStateBucket, "x").ok());

  store_.reset();
  Open();
  const cache::CacheBucketStats after = BucketStats();
  EXPECT_EQ(after.index.objects, before.index.objects);
  EXPECT_EQ(after.index.used_bytes, before.index.used_bytes);
  EXPECT_EQ(after.index.linked, before.index.linked);  // predecessors came back
  EXPECT_EQ(after.index.dead_bytes, 0u);
}

TEST_P(CacheStoreTest, StatsNameEveryCacheFigure) {
  ASSERT_TRUE(PutDescriptor(MakeDescriptor(kShape, true, 1), 1).ok());
  auto stats = store_->Stats();
  ASSERT_TRUE(stats.has_value());
  std::map<std::string, uint64_t> f(stats->figures.begin(), stats->figures.end());
  const std::string p = std::string("cache.") + kBucket + ".";
  EXPECT_EQ(f[p + "capacity_bytes"], kCapacity);
  EXPECT_EQ(f[p + "used_bytes"], kShape.n * kChunkBytes);
  EXPECT_EQ(f.count(p + "evicted_bytes_total"), 1u);
  EXPECT_EQ(f[p + "admitted_bytes_peak"], kShape.n * kChunkBytes);
  EXPECT_EQ(f.count(p + "victims_spared_total"), 1u);
  EXPECT_EQ(f.count(p + "puts_linked_total"), 1u);
  EXPECT_EQ(f.count(p + "prefix_hit_ratio_ppm"), 1u);
  EXPECT_EQ(f["cache.high_watermark_ppm"], 900'000u);
}

TEST(CacheConfig, ReadsTheIssuesFormAndNamesBadKeys) {
  Result<Config> c = Config::Parse(R"(
[cache]
buckets = { kvcache = 68719476736, "other.cache" = "1GiB" }
high_watermark = 0.95
low_watermark = 0.85
)");
  ASSERT_TRUE(c.has_value()) << c.error();
  StoreOptions o;
  ASSERT_TRUE(ApplyConfig(*c, &o).ok());
  ASSERT_TRUE(c->CheckNoUnknownKeys().ok());
  ASSERT_EQ(o.cache.buckets.size(), 2u);
  EXPECT_EQ(o.cache.CapacityOf("kvcache"), 68719476736u);
  EXPECT_EQ(o.cache.CapacityOf("other.cache"), 1u << 30);
  EXPECT_DOUBLE_EQ(o.cache.high_watermark, 0.95);
  EXPECT_TRUE(o.Validate().ok());
  EXPECT_NE(CacheConfigTable().Toml(o.cache).find("buckets = { kvcache = 68719476736"),
            std::string::npos);

  struct Row {
    const char* toml;
    const char* field;
  };
  for (const Row& row : {Row{"[cache]\nbuckets = { kvcache = 0 }\n", "cache.buckets"},
                         Row{"[cache]\nbuckets = { Bad_Name = 10 }\n", "cache.buckets"},
                         Row{"[cache]\nbuckets = { kvcache = -1 }\n", "cache.buckets.kvcache"},
                         Row{"[cache]\nbuckets = 5\n", "cache.buckets"},
                         Row{"[cache]\nhigh_watermark = 1.5\n", "cache.high_watermark"},
                         Row{"[cache]\nlow_watermark = 0.95\n", "cache.low_watermark"},
                         Row{"[cache]\nlow_watermark = 0\n", "cache.low_watermark"}}) {
    SCOPED_TRACE(row.toml);
    Result<Config> bad = Config::Parse(row.toml);
    ASSERT_TRUE(bad.has_value());
    StoreOptions b;
    Status s = ApplyConfig(*bad, &b);
    if (s.ok()) {
      s = b.Validate();
    }
    EXPECT_EQ(s.field(), row.field) << s;
  }
}

}  // namespace
}  // namespace oc::storage::kvtest
