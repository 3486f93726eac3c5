// One eviction batch's deletes in flight together (storage-server/src/cache/cache_evict.cc;
// docs/decisions/cache-eviction-concurrent-deletes.md), on RocksDB and RADOS: a batch's
// DeleteIfs overlap, and a store failure in the middle of a batch leaves the index equal to
// the store, every chunk it cannot reach counted dead.
//
// The cache layer is opened here over a ForwardingStore around a real store, which watches
// the DeleteIfs the layer sends below it into the cache bucket: the first one waits (bounded)
// for a second to start, so the batch passes only if its deletes run together; or the first
// one fails as a full disk or an unreachable cluster would.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "cache/cache_store.h"
#include "cache_test_util.h"
#include "forwarding_store.h"
#include "oc/common/thread_annotations.h"

namespace oc::storage::kvtest {
namespace {

using cache::CacheStore;

class WatchedDeletes final : public ForwardingStore {
 public:
  explicit WatchedDeletes(std::unique_ptr<Store> inner) : ForwardingStore(std::move(inner)) {}

  // The first DeleteIf into the cache bucket waits until another one is in flight, for at
  // most kWait (a serial batch fails the test then, it does not hang).
  std::atomic<bool> rendezvous{false};
  // DeleteIfs into the cache bucket that fail kIOError without reaching the store.
  std::atomic<int> failures_left{0};

  Status DeleteIf(const ObjectKey& key, const ObjectVersionMatch& expected) override {
    if (key.bucket != kBucket) {
      return ForwardingStore::DeleteIf(key, expected);
    }
    if (failures_left.fetch_sub(1) > 0) {
      return Status::IOError("injected: the store failed this delete");
    }
    std::unique_lock lock(mu_);
    ++entered_;
    ++in_flight_;
    most_in_flight_ = std::max(most_in_flight_, in_flight_);
    cv_.notify_all();
    if (rendezvous && entered_ == 1) {
      // Until a second one entered (it may have returned already when this wakes).
      cv_.wait_for(lock, kWait, [&] { return entered_ >= 2; });
    }
    lock.unlock();
    Status s = ForwardingStore::DeleteIf(key, expected);
    lock.lock();
    --in_flight_;
    return s;
  }

  int most_in_flight() {
    std::lock_guard lock(mu_);
    return most_in_flight_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int in_flight_ OC_GUARDED_BY(mu_) = 0;
  int most_in_flight_ OC_GUARDED_BY(mu_) = 0;
  int entered_ OC_GUARDED_BY(mu_) = 0;  // DeleteIfs into the cache bucket so far
};

class CacheEvictTest : public ::testing::TestWithParam<test::Backend> {
 protected:
  void SetUp() override {
    StoreOptions o = CacheStoreOptions(dir_.path());
    const CacheOptions cache = o.cache;
    o.cache = {};  // the store below has no cache layer; this test composes it
    auto below = test::OpenTestStore(GetParam(), o, namespace_);
    ASSERT_TRUE(below.has_value()) << below.error();
    auto watched = std::make_unique<WatchedDeletes>(std::move(*below));
    watched_ = watched.get();
    auto cached = CacheStore::Open(std::move(watched), cache);
    ASSERT_TRUE(cached.has_value()) << cached.error();
    cache_ = std::move(*cached);
    ASSERT_TRUE(cache_->CreateBucket(kBucket, "tester").ok());
  }

  cache::CacheBucketStats BucketStats() { return *cache_->BucketStats(kBucket); }

  // As CacheStoreTest's: a pass down to the low watermark, then no delete in flight.
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

  // Bytes of present chunks of `ds` whose predecessor in their chain is absent.
  uint64_t ListedDeadBytes(const std::vector<Descriptor>& ds) {
    uint64_t dead = 0;
    for (const Descriptor& d : ds) {
      const std::vector<bool> p = PresentIn(*cache_, d);
      bool cut = false;
      for (bool present : p) {
        cut = cut || !present;
        dead += cut && present ? kChunkBytes : 0;
      }
    }
    return dead;
  }

  testutil::TempDir dir_;
  const std::string namespace_ = test::RandomRadosNamespace();
  std::unique_ptr<CacheStore> cache_;
  WatchedDeletes* watched_ = nullptr;
};

INSTANTIATE_TEST_SUITE_P(Backends, CacheEvictTest,
                         ::testing::Values(test::Backend::kRocksData, test::Backend::kRados),
                         test::BackendName);

// A batch of one chain's 4 chunks: the first DeleteIf waits for a second to start. Deleted one
// at a time, the first waits out kWait alone and the most in flight stays 1.
TEST_P(CacheEvictTest, ABatchsDeletesAreInFlightTogether) {
  watched_->rendezvous = true;
  std::vector<Descriptor> ds;
  const auto put = [&](uint64_t seed) {
    ds.push_back(MakeDescriptor(kShape, true, seed));
    return PutDescriptorInto(*cache_, ds.back(), seed);
  };
  for (uint64_t seed = 1; seed <= 8; ++seed) {  // the eighth fills the capacity
    ASSERT_TRUE(put(seed).ok()) << seed;
  }
  EvictAndSettle();
  EXPECT_GE(watched_->most_in_flight(), 2) << "the batch's deletes ran one at a time";
  for (uint64_t seed = 9; seed <= 12; ++seed) {  // more batches, without the rendezvous
    ASSERT_TRUE(put(seed).ok()) << seed;
  }
  EvictAndSettle();
  const auto [objects, bytes] = ListedIn(*cache_, kBucket);
  const cache::CacheBucketStats s = BucketStats();
  EXPECT_EQ(s.index.used_bytes, bytes);
  EXPECT_EQ(s.index.objects, objects);
  EXPECT_LE(bytes, kCapacity * 9 / 10);
  EXPECT_GT(s.index.evicted_bytes, 0u);
  EXPECT_EQ(s.eviction_failures, 0u);
  // Settled, every chain is a present prefix again.
  EXPECT_EQ(ListedDeadBytes(ds), 0u);
  EXPECT_EQ(s.index.dead_bytes, 0u);
}

// The first delete of a batch fails: the deletes already started finish, the rest of the
// batch goes back to the index, and the passes after it go on. Whatever finished first, the
// index holds exactly what the store lists, and a chunk whose predecessor went while its own
// delete failed is known dead (evicted before any live chunk).
TEST_P(CacheEvictTest, AStoreFailureMidBatchGivesTheRestBackAndTheIndexStaysTrue) {
  std::vector<Descriptor> ds;
  for (uint64_t seed = 1; seed <= 7; ++seed) {
    ds.push_back(MakeDescriptor(kShape, true, seed));
    ASSERT_TRUE(PutDescriptorInto(*cache_, ds.back(), seed).ok()) << seed;
  }
  watched_->failures_left = 1;
  ds.push_back(MakeDescriptor(kShape, true, 8));
  ASSERT_TRUE(PutDescriptorInto(*cache_, ds.back(), 8).ok());  // fills the capacity
  // The pass that meets the failure ends there (the worker's, or this one); a failed pass is
  // retried at the worker's next wake, so this test runs the next one itself.
  EvictAndSettle();
  EXPECT_LE(watched_->failures_left.load(), 0);  // the failure happened
  EvictAndSettle();
  for (uint64_t seed = 9; seed <= 12; ++seed) {
    ds.push_back(MakeDescriptor(kShape, true, seed));
    ASSERT_TRUE(PutDescriptorInto(*cache_, ds.back(), seed).ok()) << seed;
  }
  EvictAndSettle();
  const cache::CacheBucketStats s = BucketStats();
  EXPECT_EQ(s.eviction_failures, 1u);
  const auto [objects, bytes] = ListedIn(*cache_, kBucket);
  EXPECT_EQ(s.index.used_bytes, bytes);
  EXPECT_EQ(s.index.objects, objects);
  EXPECT_LE(bytes, kCapacity);
  EXPECT_EQ(s.index.dead_bytes, ListedDeadBytes(ds));
  // The next pass takes dead chunks first: once it ran, no chain is cut.
  for (uint64_t seed = 13; seed <= 16; ++seed) {
    ds.push_back(MakeDescriptor(kShape, true, seed));
    ASSERT_TRUE(PutDescriptorInto(*cache_, ds.back(), seed).ok()) << seed;
  }
  EvictAndSettle();
  EXPECT_EQ(ListedDeadBytes(ds), 0u);
  EXPECT_EQ(BucketStats().index.dead_bytes, 0u);
}

}  // namespace
}  // namespace oc::storage::kvtest
