// RadosStore's garbage collection and orphan scrub, against the test cluster
// (store_test_util.h: OC_TEST_CEPH_CONF, a random namespace per test): racing overwrites
// leave only the visible version's data after GC; delete and every multipart path leave no
// garbage, racing part uploads included; uploads of more parts than an omap page; gc_min_wait is
// what keeps a reader's version; only the oc.gc lock holder collects; the scrub removes crash
// leftovers only once they are old enough and never referenced data.

#include <rados/librados.h>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "composed_store.h"
#include "rados/rados_keys.h"
#include "rados/rados_store.h"
#include "records/md5.h"
#include "store_test_util.h"

namespace oc::storage::test {
namespace {

constexpr uint64_t kObjectBytes = 64 << 10;  // RadosTestOptions' data object size

uint64_t Objects(uint64_t size) { return (size + kObjectBytes - 1) / kObjectBytes; }

class RadosGcTest : public ::testing::Test {
 protected:
  // A store in this test's namespace; the test collects (gc = false: no background leader).
  std::unique_ptr<Store> OpenNs(std::chrono::milliseconds gc_min_wait,
                                std::chrono::milliseconds orphan_min_age = {}) {
    Result<StoreOptions> o = RadosTestOptions(StoreOptions{}, ns_);
    EXPECT_TRUE(o.has_value()) << o.error();
    if (!o.has_value()) {
      return nullptr;
    }
    o->rados.gc = false;
    o->rados.gc_min_wait = gc_min_wait;
    o->rados.orphan_min_age = orphan_min_age;
    Result<std::unique_ptr<Store>> s = OpenStore(*o);
    EXPECT_TRUE(s.has_value()) << s.error();
    return s.has_value() ? std::move(*s) : nullptr;
  }
  void SetUp() override {
    store_ = OpenNs(std::chrono::milliseconds(0));
    ASSERT_NE(store_, nullptr);
    ASSERT_TRUE(store_->CreateBucket("bkt", "me").ok());
  }
  static RadosStore& R(Store& s) { return dynamic_cast<RadosStore&>(*BackendOf(s)); }
  uint64_t DataObjects() {
    Result<uint64_t> n = R(*store_).CountDataObjects();
    EXPECT_TRUE(n.has_value()) << n.error();
    return n.has_value() ? *n : 0;
  }
  uint64_t Gc(Store& s) {
    Result<uint64_t> n = R(s).RunGcOnce();
    EXPECT_TRUE(n.has_value()) << n.error();
    return n.has_value() ? *n : 0;
  }
  Result<ObjectMeta> Part(const std::string& key, const std::string& id, uint32_t n,
                          std::string_view data) {
    OC_ASSIGN_OR_RETURN(std::unique_ptr<ObjectWriter> w,
                        store_->UploadPart({"bkt", key}, id, n, {}));
    OC_RETURN_IF_ERROR(w->Append(AsBytes(data)));
    return w->Commit();
  }

  const std::string ns_ = RandomRadosNamespace();
  std::unique_ptr<Store> store_;
};

TEST_F(RadosGcTest, EightThreadsOverwritingOneKeyLeaveOnlyTheVisibleVersionAfterGc) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 12;
  constexpr uint64_t kSize = 150'000;  // 3 data objects per version
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        if (!PutString(*store_, {"bkt", "hot"}, Bytes(t * 1000 + r, kSize)).has_value()) {
          ++failures;
        }
      }
    });
  }
  for (std::thread& th : threads) {
    th.join();
  }
  ASSERT_EQ(failures.load(), 0);
  EXPECT_EQ(DataObjects(), Objects(kSize) * kThreads * kRounds) << "replaced data waits for GC";
  EXPECT_EQ(Gc(*store_), Objects(kSize) * (kThreads * kRounds - 1));
  EXPECT_EQ(DataObjects(), Objects(kSize)) << "only the visible version's data remains";
  Result<ObjectMeta> meta = store_->Head({"bkt", "hot"});
  ASSERT_TRUE(meta.has_value());
  Result<std::string> body = GetString(*store_, {"bkt", "hot"});
  ASSERT_TRUE(body.has_value()) << body.error();
  EXPECT_EQ(meta->etag, HexEncode(Md5::Of(AsBytes(*body))));
  EXPECT_EQ(Gc(*store_), 0u) << "a second pass finds nothing due";
}

TEST_F(RadosGcTest, DeleteAndEveryMultipartPathLeaveNoGarbage) {
  // Overwrites and deletes.
  ASSERT_TRUE(PutString(*store_, {"bkt", "keep"}, Bytes(1, 200'000)).has_value());
  ASSERT_TRUE(PutString(*store_, {"bkt", "keep"}, Bytes(2, 70'000)).has_value());
  ASSERT_TRUE(PutString(*store_, {"bkt", "gone"}, Bytes(3, 100'000)).has_value());
  ASSERT_TRUE(store_->Delete({"bkt", "gone"}).ok());
  // Multipart: a re-uploaded part, a part left out of the completed object, completion
  // replacing an existing object.
  ASSERT_TRUE(PutString(*store_, {"bkt", "mp"}, Bytes(4, 300'000)).has_value());
  Result<std::string> id = store_->CreateMultipartUpload({"bkt", "mp"}, {});
  ASSERT_TRUE(id.has_value());
  const std::string p1 = Bytes(5, kMinPartBytes);
  ASSERT_TRUE(Part("mp", *id, 1, Bytes(6, 90'000)).has_value());
  Result<ObjectMeta> m1 = Part("mp", *id, 1, p1);  // replaces the first part 1
  Result<ObjectMeta> m2 = Part("mp", *id, 2, Bytes(7, 10'000));
  Result<ObjectMeta> m3 = Part("mp", *id, 3, Bytes(8, 20'000));
  ASSERT_TRUE(m1.has_value() && m2.has_value() && m3.has_value());
  Result<ObjectMeta> done = store_->CompleteMultipartUpload(
      {"bkt", "mp"}, *id, std::vector<CompletedPart>{{1, m1->etag}, {3, m3->etag}}, {});
  ASSERT_TRUE(done.has_value()) << done.error();
  // An aborted upload.
  Result<std::string> aborted = store_->CreateMultipartUpload({"bkt", "ab"}, {});
  ASSERT_TRUE(aborted.has_value());
  ASSERT_TRUE(Part("ab", *aborted, 1, Bytes(9, 130'000)).has_value());
  ASSERT_TRUE(Part("ab", *aborted, 2, Bytes(10, 1'000)).has_value());
  ASSERT_TRUE(store_->AbortMultipartUpload({"bkt", "ab"}, *aborted).ok());
  // An upload still open keeps its parts.
  Result<std::string> open = store_->CreateMultipartUpload({"bkt", "open"}, {});
  ASSERT_TRUE(open.has_value());
  ASSERT_TRUE(Part("open", *open, 4, Bytes(11, 65'537)).has_value());

  const uint64_t referenced =
      Objects(70'000) + Objects(kMinPartBytes) + Objects(20'000) + Objects(65'537);
  const uint64_t garbage = Objects(200'000) + Objects(100'000) + Objects(300'000) +
                           Objects(90'000) + Objects(10'000) + Objects(130'000) + Objects(1'000);
  EXPECT_EQ(DataObjects(), referenced + garbage);
  EXPECT_EQ(Gc(*store_), garbage);
  EXPECT_EQ(DataObjects(), referenced);
  Result<std::string> mp = GetString(*store_, {"bkt", "mp"}, ByteRange::All(), 1 << 20);
  ASSERT_TRUE(mp.has_value()) << mp.error();
  EXPECT_TRUE(*mp == p1 + Bytes(8, 20'000));
  EXPECT_TRUE(*GetString(*store_, {"bkt", "keep"}) == Bytes(2, 70'000));

  // Removing everything leaves nothing once collected; the bucket then goes.
  ASSERT_TRUE(store_->Delete({"bkt", "keep"}).ok());
  ASSERT_TRUE(store_->Delete({"bkt", "mp"}).ok());
  ASSERT_TRUE(store_->AbortMultipartUpload({"bkt", "open"}, *open).ok());
  EXPECT_EQ(Gc(*store_), referenced);
  EXPECT_EQ(DataObjects(), 0u);
  EXPECT_TRUE(store_->DeleteBucket("bkt").ok());
}

TEST_F(RadosGcTest, DeleteBucketTakesDataWaitingForGcWithIt) {
  ASSERT_TRUE(PutString(*store_, {"bkt", "k"}, Bytes(1, 100'000)).has_value());
  ASSERT_TRUE(store_->Delete({"bkt", "k"}).ok());
  Result<std::string> id = store_->CreateMultipartUpload({"bkt", "mp"}, {});
  ASSERT_TRUE(id.has_value());
  ASSERT_TRUE(Part("mp", *id, 1, Bytes(2, 1000)).has_value());
  // The deleted object's data waits for the GC; the open upload's part is still named by it.
  EXPECT_EQ(DataObjects(), Objects(100'000) + 1);
  // S3 counts only objects: the open upload is aborted with the bucket, its part's data too.
  ASSERT_TRUE(store_->DeleteBucket("bkt").ok());
  EXPECT_EQ(DataObjects(), 0u);
}

TEST_F(RadosGcTest, AReaderKeepsItsVersionUntilGcMinWaitHasPassed) {
  std::unique_ptr<Store> patient = OpenNs(std::chrono::hours(1));
  ASSERT_NE(patient, nullptr);
  const std::string v1 = Bytes(1, 300'000);
  const std::string v2 = Bytes(2, 200'000);
  ASSERT_TRUE(PutString(*patient, {"bkt", "k"}, v1).has_value());
  Result<std::unique_ptr<ObjectReader>> r1 = patient->Get({"bkt", "k"}, ByteRange::All());
  ASSERT_TRUE(r1.has_value());
  // Replaced by a store whose entries wait an hour: a GC pass now removes nothing.
  ASSERT_TRUE(PutString(*patient, {"bkt", "k"}, v2).has_value());
  EXPECT_EQ(Gc(*patient), 0u);
  Result<std::string> got = ReadAll(**r1, 1 << 20);
  ASSERT_TRUE(got.has_value()) << got.error();
  EXPECT_TRUE(*got == v1);
  // Replaced by a store with gc_min_wait = 0: the next pass takes the old version, and a
  // reader still on it is told so (store.h) instead of reading other bytes.
  Result<std::unique_ptr<ObjectReader>> r2 = store_->Get({"bkt", "k"}, ByteRange::All());
  ASSERT_TRUE(r2.has_value());
  ASSERT_TRUE(PutString(*store_, {"bkt", "k"}, Bytes(3, 10)).has_value());
  EXPECT_EQ(Gc(*patient), Objects(200'000));
  Result<std::string> lost = ReadAll(**r2, 1 << 20);
  ASSERT_FALSE(lost.has_value());
  EXPECT_EQ(lost.error().code(), Code::kFailedPrecondition);
  EXPECT_EQ(lost.error().subject(), Subject::kKey);
}

TEST_F(RadosGcTest, OnlyTheHolderOfTheGcLockCollects) {
  std::unique_ptr<Store> other = OpenNs(std::chrono::milliseconds(0));
  ASSERT_NE(other, nullptr);
  ASSERT_TRUE(PutString(*store_, {"bkt", "k"}, "one").has_value());
  ASSERT_TRUE(PutString(*store_, {"bkt", "k"}, "two").has_value());
  EXPECT_EQ(Gc(*store_), 1u);  // store_ leads now
  ASSERT_TRUE(PutString(*store_, {"bkt", "k"}, "three").has_value());
  Result<uint64_t> refused = R(*other).RunGcOnce();
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), Code::kUnavailable);
  Result<RadosStore::ScrubReport> no_scrub = R(*other).RunScrubOnce();
  ASSERT_FALSE(no_scrub.has_value());
  EXPECT_EQ(no_scrub.error().code(), Code::kUnavailable);
  store_.reset();  // a leader that closes releases the lock
  EXPECT_EQ(Gc(*other), 1u);
}

TEST_F(RadosGcTest, RacingUploadsOfOnePartLeaveOnePartAndNoGarbage) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 5;
  Result<std::string> id = store_->CreateMultipartUpload({"bkt", "mp"}, {});
  ASSERT_TRUE(id.has_value());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        if (!Part("mp", *id, 1, Bytes(t * 100 + r, 70'000)).has_value()) {
          ++failures;
        }
      }
    });
  }
  for (std::thread& th : threads) {
    th.join();
  }
  ASSERT_EQ(failures.load(), 0);
  Result<ListPartsResult> parts = store_->ListParts({"bkt", "mp"}, *id, 0, 10);
  ASSERT_TRUE(parts.has_value());
  ASSERT_EQ(parts->parts.size(), 1u);
  EXPECT_EQ(Gc(*store_), Objects(70'000) * (kThreads * kRounds - 1));
  ASSERT_TRUE(store_
                  ->CompleteMultipartUpload(
                      {"bkt", "mp"}, *id, std::vector<CompletedPart>{{1, parts->parts[0].etag}}, {})
                  .has_value());
  EXPECT_EQ(DataObjects(), Objects(70'000));
  Result<std::string> body = GetString(*store_, {"bkt", "mp"});
  ASSERT_TRUE(body.has_value()) << body.error();
  EXPECT_EQ(HexEncode(Md5::Of(AsBytes(*body))), parts->parts[0].etag);
}

TEST_F(RadosGcTest, AnUploadOfMorePartsThanAnOmapPageListsAndAbortsWhole) {
  constexpr uint32_t kParts = 1100;  // more than one omap page (1000) of m/ entries
  Result<std::string> id = store_->CreateMultipartUpload({"bkt", "many"}, {});
  ASSERT_TRUE(id.has_value());
  for (uint32_t n = 1; n <= kParts; ++n) {
    ASSERT_TRUE(Part("many", *id, n, std::to_string(n)).has_value()) << n;
  }
  std::vector<uint32_t> numbers;
  uint32_t marker = 0;
  for (int guard = 0; guard < 10; ++guard) {
    Result<ListPartsResult> r = store_->ListParts({"bkt", "many"}, *id, marker, 1000);
    ASSERT_TRUE(r.has_value()) << r.error();
    for (const PartInfo& p : r->parts) {
      numbers.push_back(p.part_number);
    }
    if (!r->truncated) {
      break;
    }
    marker = r->next_part_number_marker;
  }
  ASSERT_EQ(numbers.size(), kParts);
  EXPECT_EQ(numbers.back(), kParts);
  EXPECT_EQ(DataObjects(), kParts);
  // One op compares and removes every m/ entry and hands all their data to the GC.
  ASSERT_TRUE(store_->AbortMultipartUpload({"bkt", "many"}, *id).ok());
  EXPECT_EQ(Gc(*store_), kParts);
  EXPECT_EQ(DataObjects(), 0u);
  EXPECT_TRUE(store_->DeleteBucket("bkt").ok());
}

// Crash leftovers made by hand: what a writer killed before its commit, a DeleteBucket
// killed after its registry removal, and a part that raced its upload's completion leave.
TEST_F(RadosGcTest, ScrubRemovesOrphansOnceOldEnoughAndNeverReferencedData) {
  ASSERT_TRUE(PutString(*store_, {"bkt", "live"}, Bytes(1, 100'000)).has_value());
  ASSERT_TRUE(PutString(*store_, {"bkt", "old"}, Bytes(2, 10)).has_value());
  ASSERT_TRUE(PutString(*store_, {"bkt", "old"}, Bytes(3, 10)).has_value());  // a g/ entry
  Result<std::string> id = store_->CreateMultipartUpload({"bkt", "mp"}, {});
  ASSERT_TRUE(id.has_value());
  ASSERT_TRUE(Part("mp", *id, 1, Bytes(4, 70'000)).has_value());
  const uint64_t referenced = Objects(100'000) + 2 + Objects(70'000);
  ASSERT_EQ(DataObjects(), referenced);

  RadosStore& rados = R(*store_);
  Result<RadosStore::BucketRef> ref = rados.Bucket("bkt");
  ASSERT_TRUE(ref.has_value());
  auto put_raw = [&](const std::string& oid) {
    ASSERT_EQ(rados_write_full(rados.io(), oid.c_str(), "x", 1), 0) << oid;
  };
  // An unfinished PUT's data objects (a version no record names), in a live bucket.
  Segment orphan;
  orphan.writer = 0x1234;
  orphan.data_id = 7;
  orphan.extent_bytes = kObjectBytes;
  put_raw(rados::DataOid(ref->id, orphan, 0));
  put_raw(rados::DataOid(ref->id, orphan, 1));
  // Data and an index shard of a bucket that is no longer registered.
  put_raw(rados::DataOid(0xdead, orphan, 0));
  put_raw(rados::IndexOid(0xdead, 0));
  // A part whose upload is gone (completed while the part was committed).
  Segment part_seg;
  part_seg.writer = 0x5678;
  part_seg.data_id = 9;
  part_seg.size = 1;
  part_seg.extent_bytes = kObjectBytes;
  put_raw(rados::DataOid(ref->id, part_seg, 0));
  const std::string ghost_id(32, 'e');
  const std::string mp_shard = rados::IndexOid(ref->id, rados::ShardOf("mp", ref->shards));
  {
    rados::WriteOp op;
    PartRecord part{part_seg, {}, 1};
    op.OmapSet({{rados::PartOmapKey(ghost_id, 1), EncodePartRecord(part)}});
    ASSERT_EQ(op.Operate(rados.io(), mp_shard), 0);
  }
  ASSERT_EQ(DataObjects(), referenced + 4);

  // Too young for a scrub that waits an hour: nothing goes.
  {
    std::unique_ptr<Store> cautious = OpenNs(std::chrono::milliseconds(0), std::chrono::hours(1));
    ASSERT_NE(cautious, nullptr);
    store_.reset();  // hand over the lead
    Result<RadosStore::ScrubReport> r = R(*cautious).RunScrubOnce();
    ASSERT_TRUE(r.has_value()) << r.error();
    EXPECT_EQ(r->data_objects, 0u);
    EXPECT_EQ(r->index_objects, 0u);
    // A part whose upload is gone needs no age: its upload id never comes back.
    EXPECT_EQ(r->parts, 1u);
  }
  store_ = OpenNs(std::chrono::milliseconds(0));
  ASSERT_NE(store_, nullptr);
  ASSERT_EQ(DataObjects(), referenced + 4);
  Result<RadosStore::ScrubReport> r = R(*store_).RunScrubOnce();
  ASSERT_TRUE(r.has_value()) << r.error();
  EXPECT_EQ(r->data_objects, 3u);  // the unfinished PUT's two, the gone bucket's one
  EXPECT_EQ(r->index_objects, 1u);
  EXPECT_EQ(r->parts, 0u);                   // handed to the GC by the first scrub
  EXPECT_EQ(DataObjects(), referenced + 1);  // the part's data: named by its g/ entry now
  EXPECT_EQ(Gc(*store_), 1u + 1u);           // the ghost part and the replaced "old"
  EXPECT_EQ(DataObjects(), referenced - 1);
  uint64_t size = 0;
  time_t mtime = 0;
  EXPECT_EQ(rados_stat(R(*store_).io(), rados::IndexOid(0xdead, 0).c_str(), &size, &mtime),
            -ENOENT);
  // Everything referenced still reads back.
  EXPECT_TRUE(*GetString(*store_, {"bkt", "live"}) == Bytes(1, 100'000));
  EXPECT_TRUE(*GetString(*store_, {"bkt", "old"}) == Bytes(3, 10));
  Result<ListPartsResult> parts = store_->ListParts({"bkt", "mp"}, *id, 0, 10);
  ASSERT_TRUE(parts.has_value());
  ASSERT_EQ(parts->parts.size(), 1u);
  EXPECT_EQ(parts->parts[0].size, 70'000u);
}

}  // namespace
}  // namespace oc::storage::test
