// The cache layer with two servers over one RADOS namespace of the test cluster (two stores
// opened in this process, each with its own CacheStore, as two oc-storage-server processes
// would be): only the GC leader evicts, the pool never holds more than the capacity plus one
// eviction batch, nothing is evicted or counted twice, hits on the follower keep a chain
// alive on the leader, and when the leader goes the other server takes over after rebuilding
// (docs/decisions/cache-buckets.md, "RADOS").
//
// The lead is the RADOS GC lock: the stores run with gc = false and the test takes or renews
// the lock with RunGcOnce, so who leads is the test's choice, not a timer's. Syncs (the
// follower's hit log, the leader's fold, both re-listings) run when the test says (SyncNow),
// one "sync_interval" per step.

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include "cache/cache_store.h"
#include "cache_test_util.h"
#include "composed_store.h"
#include "rados/rados_store.h"

namespace oc::storage::kvtest {
namespace {

using cache::CacheStore;

class CacheSharedRadosTest : public ::testing::Test {
 protected:
  struct Server {
    testutil::TempDir dir;
    std::unique_ptr<Store> store;
    CacheStore* cache = nullptr;
  };

  void SetUp() override {
    Open(a_);
    Open(b_);
    if (HasFatalFailure()) {
      return;
    }
    ASSERT_TRUE(a_.store->CreateBucket(kBucket, "tester").ok());
    Lead(a_);
    a_.cache->SyncNow();
    b_.cache->SyncNow();
    ASSERT_TRUE(a_.cache->leading());
    ASSERT_FALSE(b_.cache->leading());
  }

  void Open(Server& s) {
    Result<StoreOptions> o = test::RadosTestOptions(CacheStoreOptions(s.dir.path()), namespace_);
    ASSERT_TRUE(o.has_value()) << o.error();
    o->rados.gc = false;  // the test takes and renews the lead (Lead)
    auto store = OpenStore(*o);
    ASSERT_TRUE(store.has_value()) << store.error();
    s.store = std::move(*store);
    s.cache = cache::CacheStoreOf(*s.store);
    ASSERT_NE(s.cache, nullptr);
  }

  // Takes (or renews) the oc.gc lock for `s`: it leads the GC, hence the eviction.
  static void Lead(Server& s) {
    auto& rados = dynamic_cast<RadosStore&>(*BackendOf(*s.store));
    Result<uint64_t> gc = rados.RunGcOnce();
    ASSERT_TRUE(gc.has_value()) << gc.error();
  }

  // One sync interval: the follower hands its hits over, the leader folds them, both re-list;
  // then the leader evicts and its deletes settle.
  void Sync(Server& leader, Server& follower) {
    follower.cache->SyncNow();
    leader.cache->SyncNow();
    EvictAndSettle(leader);
    follower.cache->SyncNow();  // sees the leader's evictions
  }

  static cache::CacheBucketStats Stats(Server& s) { return *s.cache->BucketStats(kBucket); }

  static void EvictAndSettle(Server& s) {
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    do {
      s.cache->EvictNow();
      if (Stats(s).evicting_bytes == 0) {
        return;
      }
      std::this_thread::yield();
    } while (std::chrono::steady_clock::now() < deadline);
    ADD_FAILURE() << "evictions still in flight after " << kWait.count() << " ms";
  }

  // Hit-log parts left in the state bucket (the leader folds and deletes them).
  uint64_t HitLogParts(Server& s) {
    ListOptions o;
    o.prefix = std::string(kBucket) + "/hits-";
    auto page = s.cache->inner().List(kCacheStateBucket, o);
    EXPECT_TRUE(page.has_value()) << page.error();
    return page.has_value() ? page->objects.size() : 0;
  }

  const std::string namespace_ = test::RandomRadosNamespace();
  Server a_;
  Server b_;
};

TEST_F(CacheSharedRadosTest, WritesThroughBothOnlyTheLeaderEvictsAndNothingIsCountedTwice) {
  std::vector<Descriptor> ds;
  std::set<std::string> written;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE(seed);
    Server& via = seed % 2 == 0 ? a_ : b_;
    Server& other = seed % 2 == 0 ? b_ : a_;
    ds.push_back(MakeDescriptor(kShape, /*compact=*/true, seed));
    ASSERT_TRUE(PutDescriptorInto(*via.store, ds.back(), seed).ok());
    for (uint64_t j = 0; j < kShape.n; ++j) {
      written.insert(ds.back().ObjectName(j));
    }
    if (seed % 3 == 0) {  // hits through the other server, so recency crosses servers
      ASSERT_TRUE(other.store->ProbeChunks(kBucket, ds[seed / 2]).has_value());
    }
    EXPECT_LE(ListedIn(*a_.store, kBucket).second, kCapacity + kEvictionBatch);
    if (seed % 2 == 0) {
      Lead(a_);  // the lock lasts 30 s unless renewed: keep it
    }
    Sync(a_, b_);
    EXPECT_LE(ListedIn(*a_.store, kBucket).second, kCapacity + kEvictionBatch);
  }
  Sync(a_, b_);
  const auto [objects, bytes] = ListedIn(*a_.store, kBucket);
  const cache::CacheBucketStats leader = Stats(a_);
  const cache::CacheBucketStats follower = Stats(b_);
  // Only the leader evicted, and every object that went is counted once, by it.
  EXPECT_EQ(follower.index.evicted_objects, 0u);
  EXPECT_EQ(follower.victims_gone, 0u);
  EXPECT_GT(leader.index.evicted_objects, 0u);
  EXPECT_EQ(leader.index.evicted_objects, written.size() - objects);
  EXPECT_EQ(leader.victims_gone, 0u);
  // Both indexes count what the pool holds; eviction ended under the high watermark.
  EXPECT_EQ(leader.index.used_bytes, bytes);
  EXPECT_EQ(leader.index.objects, objects);
  EXPECT_EQ(follower.index.used_bytes, bytes);
  EXPECT_LE(bytes, kCapacity * 9 / 10);
  // Chains written through either server went from their tails.
  EXPECT_EQ(leader.index.dead_bytes, 0u);
  for (const Descriptor& d : ds) {
    const std::vector<bool> p = PresentIn(*a_.store, d);
    for (size_t j = 1; j < p.size(); ++j) {
      EXPECT_TRUE(p[j - 1] || !p[j]) << d.ObjectName(j);
    }
  }
  // The follower's hit logs all reached the leader, which removed them.
  EXPECT_GT(follower.hit_logs_written, 0u);
  EXPECT_EQ(leader.hit_logs_folded, follower.hit_logs_written);
  EXPECT_EQ(HitLogParts(a_), 0u);
}

TEST_F(CacheSharedRadosTest, HitsOnTheFollowerKeepAChainAliveOnTheLeader) {
  // The hot chain is written and hit only through the follower; the leader sees it in its
  // listings and learns of its hits only from the follower's hit logs.
  const Descriptor hot = MakeDescriptor(kShape, true, 100);
  ASSERT_TRUE(PutDescriptorInto(*b_.store, hot, 100).ok());
  Sync(a_, b_);
  for (uint64_t seed = 101; seed <= 130; ++seed) {
    SCOPED_TRACE(seed);
    ASSERT_TRUE(PutDescriptorInto(*a_.store, MakeDescriptor(kShape, true, seed), seed).ok());
    KvProbeResult probe = *b_.store->ProbeChunks(kBucket, hot);
    EXPECT_EQ(probe.matched, kShape.n);  // hit after every PUT: never evicted
    if (seed % 4 == 0) {
      Lead(a_);
    }
    Sync(a_, b_);
  }
  EXPECT_EQ(PresentIn(*a_.store, hot), std::vector<bool>(kShape.n, true));
  EXPECT_EQ(PresentIn(*a_.store, MakeDescriptor(kShape, true, 101)),
            std::vector<bool>(kShape.n, false));
  EXPECT_EQ(Stats(b_).index.evicted_objects, 0u);
}

TEST_F(CacheSharedRadosTest, AVictimDeletedThroughTheOtherServerIsFreedButNotCountedAsEvicted) {
  // Seven plain objects through the leader: 224 KiB, under the high watermark (230.4 KiB).
  for (int i = 0; i < 7; ++i) {
    ASSERT_TRUE(
        test::PutString(*a_.store, {kBucket, "p" + std::to_string(i)}, std::string(32 << 10, 'x'))
            .has_value());
  }
  // A client deletes the least recent one through the follower; the leader does not know yet.
  ASSERT_TRUE(b_.store->Delete({kBucket, "p0"}).ok());
  // Two more through the leader: its index (p0..p8, 288 KiB) must lose two objects to stay
  // under the high watermark, one batch (32 KiB) at a time. It picks p0, finds it gone (freed,
  // not its eviction), then p1, which it deletes. Whether the eighth PUT's commit or the ninth
  // PUT's wait starts the pass, the outcome is the same.
  for (const char* key : {"p7", "p8"}) {
    ASSERT_TRUE(test::PutString(*a_.store, {kBucket, key}, std::string(32 << 10, 'y')).has_value());
  }
  EvictAndSettle(a_);
  const cache::CacheBucketStats s = Stats(a_);
  EXPECT_EQ(s.victims_gone, 1u);
  EXPECT_EQ(s.index.evicted_objects, 1u);  // p1 only: p0 was the client's delete
  EXPECT_FALSE(a_.store->Head({kBucket, "p1"}).has_value());
  const auto [objects, bytes] = ListedIn(*a_.store, kBucket);
  EXPECT_EQ(objects, 7u);  // p2..p8
  EXPECT_EQ(s.index.used_bytes, bytes);
}

TEST_F(CacheSharedRadosTest, WhenTheLeaderStopsTheOtherServerRebuildsAndEvicts) {
  std::vector<Descriptor> ds;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    ds.push_back(MakeDescriptor(kShape, true, seed));
    ASSERT_TRUE(PutDescriptorInto(*(seed % 2 == 0 ? a_ : b_).store, ds.back(), seed).ok());
    Sync(a_, b_);
  }
  const cache::CacheBucketStats before = Stats(a_);
  EXPECT_GT(before.index.evicted_objects, 0u);
  EXPECT_GT(before.index.linked, 0u);
  // The leader stops: it writes its snapshot and releases the lock.
  a_.store.reset();
  a_.cache = nullptr;
  EXPECT_FALSE(b_.cache->leading());
  Lead(b_);
  b_.cache->EvictNow();  // takes over: listing + the snapshot + the hit logs, then evicts
  ASSERT_TRUE(b_.cache->leading());
  const cache::CacheBucketStats took = Stats(b_);
  EXPECT_EQ(took.index.linked, before.index.linked);  // chains written through A are known
  EXPECT_EQ(took.index.used_bytes, ListedIn(*b_.store, kBucket).second);

  // A restarted server is a follower now: it never evicts.
  Open(a_);
  a_.cache->SyncNow();
  EXPECT_FALSE(a_.cache->leading());
  for (uint64_t seed = 13; seed <= 30; ++seed) {
    SCOPED_TRACE(seed);
    ds.push_back(MakeDescriptor(kShape, true, seed));
    ASSERT_TRUE(PutDescriptorInto(*(seed % 2 == 0 ? a_ : b_).store, ds.back(), seed).ok());
    if (seed % 4 == 0) {
      Lead(b_);
    }
    Sync(b_, a_);
    EXPECT_LE(ListedIn(*b_.store, kBucket).second, kCapacity + kEvictionBatch);
  }
  const cache::CacheBucketStats after = Stats(b_);
  EXPECT_GT(after.index.evicted_objects, took.index.evicted_objects);
  EXPECT_EQ(after.victims_gone, 0u);
  EXPECT_EQ(after.index.dead_bytes, 0u);
  EXPECT_EQ(Stats(a_).index.evicted_objects, 0u);
  const auto [objects, bytes] = ListedIn(*b_.store, kBucket);
  EXPECT_EQ(after.index.used_bytes, bytes);
  EXPECT_LE(bytes, kCapacity * 9 / 10);
  for (const Descriptor& d : ds) {
    const std::vector<bool> p = PresentIn(*b_.store, d);
    for (size_t j = 1; j < p.size(); ++j) {
      EXPECT_TRUE(p[j - 1] || !p[j]) << d.ObjectName(j);
    }
  }
}

}  // namespace
}  // namespace oc::storage::kvtest
