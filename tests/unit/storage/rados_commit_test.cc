// RadosStore's commit op counts, against the test cluster (store_test_util.h:
// OC_TEST_CEPH_CONF, a random namespace per test; docs/decisions/rados-put-one-commit-op.md):
// overwrites from one process cost one commit op each and never conflict, even from 8 threads; PUTs
// waiting for their key are committed in one op and their versions collected; an overwrite after
// another process's write costs one conflict and one read, and GCs the version it really replaced.
// Counts come from the store's Stats() figures, which count ops as they are sent, so the tests
// assert exact numbers, never timing.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "composed_store.h"
#include "rados/rados_store.h"
#include "records/md5.h"
#include "store_test_util.h"

namespace oc::storage::test {
namespace {

constexpr uint64_t kObjectBytes = 64 << 10;  // RadosTestOptions' data object size
constexpr uint64_t kSize = 100'000;          // 2 data objects per version

class RadosCommitTest : public ::testing::Test {
 protected:
  // A store over this test's namespace (each one is "a process": its own writer id and its
  // own memory of what it committed). No background GC: the tests collect.
  std::unique_ptr<Store> OpenNs() {
    Result<StoreOptions> o = RadosTestOptions(StoreOptions{}, ns_);
    EXPECT_TRUE(o.has_value()) << o.error();
    if (!o.has_value()) {
      return nullptr;
    }
    o->rados.gc = false;
    o->rados.gc_min_wait = std::chrono::milliseconds(0);
    Result<std::unique_ptr<Store>> s = OpenStore(*o);
    EXPECT_TRUE(s.has_value()) << s.error();
    return s.has_value() ? std::move(*s) : nullptr;
  }
  void SetUp() override {
    store_ = OpenNs();
    ASSERT_NE(store_, nullptr);
    ASSERT_TRUE(store_->CreateBucket("bkt", "me").ok());
  }
  static RadosStore& R(Store& s) { return dynamic_cast<RadosStore&>(*BackendOf(s)); }
  // A Stats() figure; fails the test if the store does not report it.
  static uint64_t Figure(Store& s, std::string_view name) {
    Result<StoreStats> stats = s.Stats();
    EXPECT_TRUE(stats.has_value()) << stats.error();
    if (stats.has_value()) {
      for (const auto& [n, v] : stats->figures) {
        if (n == name) {
          return v;
        }
      }
    }
    ADD_FAILURE() << "no figure " << name;
    return ~uint64_t{0};
  }
  uint64_t DataObjects() {
    Result<uint64_t> n = R(*store_).CountDataObjects();
    EXPECT_TRUE(n.has_value()) << n.error();
    return n.has_value() ? *n : 0;
  }
  uint64_t Gc() {
    Result<uint64_t> n = R(*store_).RunGcOnce();
    EXPECT_TRUE(n.has_value()) << n.error();
    return n.has_value() ? *n : 0;
  }
  static uint64_t Objects(uint64_t size) { return (size + kObjectBytes - 1) / kObjectBytes; }

  const std::string ns_ = RandomRadosNamespace();
  std::unique_ptr<Store> store_;
};

TEST_F(RadosCommitTest, OverwritesFromOneProcessCostOneCommitOpEach) {
  constexpr int kPuts = 10;
  for (int i = 0; i < kPuts; ++i) {
    ASSERT_TRUE(PutString(*store_, {"bkt", "k"}, Bytes(i, kSize)).has_value());
  }
  EXPECT_EQ(Figure(*store_, "rados_commit_conflicts"), 0u) << "each PUT expected the last one";
  EXPECT_EQ(Figure(*store_, "rados_commit_ops"), uint64_t{kPuts});
  EXPECT_EQ(Figure(*store_, "rados_commit_rereads"), 0u);
  EXPECT_EQ(Figure(*store_, "rados_commit_expected_remembered"), uint64_t{kPuts - 1});
  // Every replaced version went to the GC: only the last one's data remains after it.
  EXPECT_EQ(Gc(), Objects(kSize) * (kPuts - 1));
  EXPECT_EQ(DataObjects(), Objects(kSize));
  EXPECT_TRUE(*GetString(*store_, {"bkt", "k"}) == Bytes(kPuts - 1, kSize));
}

TEST_F(RadosCommitTest, EightThreadsOverwritingOneKeyNeverConflictWithinAProcess) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 20;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        Result<ObjectMeta> put = PutString(*store_, {"bkt", "hot"}, Bytes(t * 1000 + r, kSize));
        if (!put.has_value()) {
          ++failures;
          ADD_FAILURE() << "thread " << t << " round " << r << ": " << put.error();
        }
      }
    });
  }
  for (std::thread& th : threads) {
    th.join();
  }
  ASSERT_EQ(failures.load(), 0);
  EXPECT_EQ(Figure(*store_, "rados_commit_conflicts"), 0u);
  EXPECT_EQ(Figure(*store_, "rados_commit_rereads"), 0u);
  // Each PUT was either the one whose op committed its group or one of the group.
  const uint64_t ops = Figure(*store_, "rados_commit_ops");
  EXPECT_EQ(ops + Figure(*store_, "rados_puts_grouped"), uint64_t{kThreads * kRounds});
  EXPECT_EQ(Gc(), Objects(kSize) * (kThreads * kRounds - 1));
  EXPECT_EQ(DataObjects(), Objects(kSize));
  Result<ObjectMeta> meta = store_->Head({"bkt", "hot"});
  ASSERT_TRUE(meta.has_value()) << meta.error();
  Result<std::string> body = GetString(*store_, {"bkt", "hot"});
  ASSERT_TRUE(body.has_value()) << body.error();
  EXPECT_EQ(meta->etag, HexEncode(Md5::Of(AsBytes(*body))));
}

TEST_F(RadosCommitTest, PutsWaitingForTheirKeyAreCommittedInOneOp) {
  constexpr int kWaiting = 4;
  ASSERT_TRUE(PutString(*store_, {"bkt", "k"}, Bytes(99, kSize)).has_value());
  Result<RadosStore::BucketRef> ref = R(*store_).Bucket("bkt");
  ASSERT_TRUE(ref.has_value());
  std::vector<Result<ObjectMeta>> puts(kWaiting, Status::Internal("not run"));
  std::vector<std::thread> threads;
  uint64_t ops_before = 0;
  {
    // With the key's commits held, each PUT writes its data and waits for its commit.
    const rados::CommitMemo::StripeHold hold = R(*store_).HoldCommitsForTest(*ref, "k");
    for (int t = 0; t < kWaiting; ++t) {
      threads.emplace_back([&, t] { puts[t] = PutString(*store_, {"bkt", "k"}, Bytes(t, kSize)); });
    }
    while (R(*store_).WaitingPutsForTest(*ref, "k") < kWaiting) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // waits for a state
    }
    ops_before = Figure(*store_, "rados_commit_ops");
  }
  for (std::thread& th : threads) {
    th.join();
  }
  std::set<std::string> etags;
  for (int t = 0; t < kWaiting; ++t) {
    ASSERT_TRUE(puts[t].has_value()) << puts[t].error();
    EXPECT_EQ(puts[t]->etag, HexEncode(Md5::Of(AsBytes(Bytes(t, kSize)))));
    etags.insert(puts[t]->etag);
  }
  EXPECT_EQ(Figure(*store_, "rados_commit_ops") - ops_before, 1u) << "one op for the four";
  EXPECT_EQ(Figure(*store_, "rados_puts_grouped"), uint64_t{kWaiting - 1});
  // The visible object is one of the four, whole.
  Result<ObjectMeta> meta = store_->Head({"bkt", "k"});
  ASSERT_TRUE(meta.has_value()) << meta.error();
  EXPECT_EQ(etags.count(meta->etag), 1u);
  Result<std::string> body = GetString(*store_, {"bkt", "k"});
  ASSERT_TRUE(body.has_value()) << body.error();
  EXPECT_EQ(meta->etag, HexEncode(Md5::Of(AsBytes(*body))));
  // The first version and the three never visible ones went to the GC in that op.
  EXPECT_EQ(DataObjects(), Objects(kSize) * (kWaiting + 1));
  EXPECT_EQ(Gc(), Objects(kSize) * kWaiting);
  EXPECT_EQ(DataObjects(), Objects(kSize));
}

TEST_F(RadosCommitTest, AnOverwriteAfterAnotherProcessWroteGcsTheVersionItReplaced) {
  std::unique_ptr<Store> other = OpenNs();
  ASSERT_NE(other, nullptr);
  ASSERT_TRUE(PutString(*store_, {"bkt", "k"}, Bytes(1, kSize)).has_value());
  ASSERT_TRUE(PutString(*other, {"bkt", "k"}, Bytes(2, kSize)).has_value());
  EXPECT_EQ(Figure(*other, "rados_commit_conflicts"), 1u) << "the other expected no object";
  // This store expects version 1, meets version 2: one refused op, one read of the shard's
  // state and records, then the op that replaces version 2.
  ASSERT_TRUE(PutString(*store_, {"bkt", "k"}, Bytes(3, kSize)).has_value());
  EXPECT_EQ(Figure(*store_, "rados_commit_conflicts"), 1u);
  EXPECT_EQ(Figure(*store_, "rados_commit_rereads"), 1u);
  EXPECT_EQ(Figure(*store_, "rados_commit_ops"), 3u);
  EXPECT_EQ(Gc(), Objects(kSize) * 2) << "versions 1 and 2";
  EXPECT_EQ(DataObjects(), Objects(kSize));
  EXPECT_TRUE(*GetString(*store_, {"bkt", "k"}) == Bytes(3, kSize));
  // The other process deletes it; this one still remembers version 3 and meets no object.
  ASSERT_TRUE(other->Delete({"bkt", "k"}).ok());
  ASSERT_TRUE(PutString(*store_, {"bkt", "k"}, Bytes(4, kSize)).has_value());
  EXPECT_EQ(Figure(*store_, "rados_commit_conflicts"), 2u);
  EXPECT_EQ(Gc(), Objects(kSize)) << "version 3, from the delete";
  EXPECT_EQ(DataObjects(), Objects(kSize));
  EXPECT_TRUE(*GetString(*other, {"bkt", "k"}) == Bytes(4, kSize));
  // And back: the other process remembers nothing of the key now and overwrites version 4.
  ASSERT_TRUE(PutString(*other, {"bkt", "k"}, Bytes(5, kSize)).has_value());
  EXPECT_EQ(Gc(), Objects(kSize)) << "version 4";
  EXPECT_EQ(DataObjects(), Objects(kSize));
  EXPECT_TRUE(*GetString(*store_, {"bkt", "k"}) == Bytes(5, kSize));
}

}  // namespace
}  // namespace oc::storage::test
