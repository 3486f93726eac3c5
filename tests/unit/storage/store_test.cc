// Buckets and single-object operations of the local stores: RocksDB with both extent layouts,
// and RADOS (store_test_util.h). RocksDB-only cases (extent accounting, compaction, engine
// figures) run on RocksStoreTest.

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>
#include <tuple>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/table_properties.h>

#include "composed_store.h"
#include "oc/common/config.h"
#include "rados/rados_store.h"
#include "records/md5.h"
#include "rocks/rocks_store.h"
#include "store_test_util.h"

namespace oc::storage::test {
namespace {

class StoreTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override { Open(); }
  bool IsRados() const { return GetParam() == Backend::kRados; }
  // Opens (again) the same store: the same directory or RADOS namespace.
  void Open() {
    Result<std::unique_ptr<Store>> s =
        OpenTestStore(GetParam(), SmallOptions(dir_.path(), LayoutOf(GetParam())), ns_);
    ASSERT_TRUE(s.has_value()) << s.error();
    store_ = std::move(*s);
    if (!store_->HeadBucket("bkt").has_value()) {
      ASSERT_TRUE(store_->CreateBucket("bkt", "owner").ok());
    }
  }
  RocksStore& rocks() { return dynamic_cast<RocksStore&>(*BackendOf(*store_)); }
  // Extent records (RocksDB) or data objects (RADOS) stored now.
  uint64_t Extents() {
    Result<uint64_t> n = IsRados()
                             ? dynamic_cast<RadosStore&>(*BackendOf(*store_)).CountDataObjects()
                             : rocks().CountExtents();
    EXPECT_TRUE(n.has_value());
    return n.has_value() ? *n : 0;
  }

  testutil::TempDir dir_;
  const std::string ns_ = RandomRadosNamespace();
  std::unique_ptr<Store> store_;
};

INSTANTIATE_TEST_SUITE_P(Backends, StoreTest,
                         ::testing::Values(Backend::kRocksSst, Backend::kRocksBlob,
                                           Backend::kRocksData, Backend::kRados),
                         BackendName);

// Cases about RocksDB's own machinery (extent records, compaction, its figures).
class RocksStoreTest : public StoreTest {};
INSTANTIATE_TEST_SUITE_P(Layouts, RocksStoreTest,
                         ::testing::Values(Backend::kRocksSst, Backend::kRocksBlob,
                                           Backend::kRocksData),
                         BackendName);

TEST_P(StoreTest, BucketLifecycle) {
  EXPECT_TRUE(store_->CreateBucket("alpha", "me").ok());
  Status again = store_->CreateBucket("alpha", "someone");
  EXPECT_EQ(again.code(), Code::kAlreadyExists);
  EXPECT_EQ(again.subject(), Subject::kBucket);
  Result<BucketInfo> info = store_->HeadBucket("alpha");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->owner, "me");
  EXPECT_GT(info->created_unix_ms, 0);
  Result<std::vector<BucketInfo>> all = store_->ListBuckets();
  ASSERT_TRUE(all.has_value());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].name, "alpha");
  EXPECT_EQ((*all)[1].name, "bkt");

  ASSERT_TRUE(PutString(*store_, {"alpha", "k"}, "v").has_value());
  Status busy = store_->DeleteBucket("alpha");
  EXPECT_EQ(busy.code(), Code::kFailedPrecondition);
  EXPECT_EQ(busy.subject(), Subject::kBucket);
  ASSERT_TRUE(store_->Delete({"alpha", "k"}).ok());
  EXPECT_TRUE(store_->DeleteBucket("alpha").ok());
  EXPECT_EQ(store_->HeadBucket("alpha").error().subject(), Subject::kBucket);
  EXPECT_EQ(store_->DeleteBucket("alpha").code(), Code::kNotFound);
  EXPECT_EQ(store_->CreateBucket("Bad_Name", "me").code(), Code::kInvalidArgument);
}

// PutOptions::if_none_match / if_match (S3 conditional writes) are decided at Commit against
// the record then current, atomically with the write: a writer opened while the key was absent
// loses to one that committed first, and of many racing create-only writers exactly one wins.
TEST_P(StoreTest, ConditionalWritesAreDecidedAtCommit) {
  PutOptions create_only;
  create_only.if_none_match = true;
  const uint64_t baseline = Extents();
  Result<std::unique_ptr<ObjectWriter>> late = store_->Put({"bkt", "k"}, create_only);
  ASSERT_TRUE(late.has_value()) << late.error();
  ASSERT_TRUE((*late)->Append(AsBytes(Bytes(1, 200000))).ok());
  Result<ObjectMeta> first = PutString(*store_, {"bkt", "k"}, "first", create_only);
  ASSERT_TRUE(first.has_value()) << first.error();
  Result<ObjectMeta> lost = (*late)->Commit();
  ASSERT_FALSE(lost.has_value());
  EXPECT_EQ(lost.error().code(), Code::kFailedPrecondition);
  EXPECT_EQ(lost.error().subject(), Subject::kKey);
  EXPECT_EQ(lost.error().field(), "If-None-Match");
  EXPECT_EQ(Extents(), baseline + 1);  // "first"'s one extent: the refused bytes are freed
  EXPECT_EQ(*GetString(*store_, {"bkt", "k"}), "first");

  PutOptions match;
  match.if_match = "\"0123456789abcdef0123456789abcdef\"";
  Result<ObjectMeta> wrong = PutString(*store_, {"bkt", "k"}, "x", match);
  ASSERT_FALSE(wrong.has_value());
  EXPECT_EQ(wrong.error().code(), Code::kFailedPrecondition);
  EXPECT_EQ(wrong.error().field(), "If-Match");
  match.if_match = "\"" + first->etag + "\"";
  ASSERT_TRUE(PutString(*store_, {"bkt", "k"}, "second", match).has_value());
  EXPECT_EQ(*GetString(*store_, {"bkt", "k"}), "second");
  Result<ObjectMeta> absent = PutString(*store_, {"bkt", "absent"}, "x", match);
  ASSERT_FALSE(absent.has_value());
  EXPECT_EQ(absent.error().code(), Code::kNotFound);
  EXPECT_EQ(absent.error().subject(), Subject::kKey);

  constexpr int kWriters = 8;
  std::atomic<int> won{0};
  std::atomic<int> refused{0};
  std::vector<std::thread> writers;
  for (int i = 0; i < kWriters; ++i) {
    writers.emplace_back([&, i] {
      Result<ObjectMeta> r = PutString(*store_, {"bkt", "race"}, Bytes(i, 70000), create_only);
      if (r.has_value()) {
        won.fetch_add(1);
      } else if (r.error().code() == Code::kFailedPrecondition) {
        refused.fetch_add(1);
      }
    });
  }
  for (std::thread& t : writers) {
    t.join();
  }
  EXPECT_EQ(won.load(), 1);
  EXPECT_EQ(refused.load(), kWriters - 1);
}

TEST_P(StoreTest, MissingBucketAndKeyAreNotFound) {
  Result<ObjectMeta> h = store_->Head({"nobucket", "k"});
  ASSERT_FALSE(h.has_value());
  EXPECT_EQ(h.error().subject(), Subject::kBucket);
  EXPECT_EQ(store_->Put({"nobucket", "k"}, {}).error().subject(), Subject::kBucket);
  EXPECT_EQ(store_->Get({"nobucket", "k"}, {}).error().subject(), Subject::kBucket);
  Result<ObjectMeta> k = store_->Head({"bkt", "absent"});
  ASSERT_FALSE(k.has_value());
  EXPECT_EQ(k.error().code(), Code::kNotFound);
  EXPECT_EQ(k.error().subject(), Subject::kKey);
  EXPECT_EQ(store_->Get({"bkt", "absent"}, {}).error().subject(), Subject::kKey);
  EXPECT_EQ(store_->Delete({"bkt", "absent"}).subject(), Subject::kKey);
}

TEST_P(StoreTest, RoundTripsEverySizeWithMd5Etag) {
  for (uint64_t size : {0ull, 1ull, 4095ull, 4096ull, 4097ull, 12288ull, 16384ull, 16385ull,
                        100000ull, 1ull << 20}) {
    SCOPED_TRACE(size);
    const std::string data = Bytes(size, size);
    const ObjectKey key{"bkt", "obj-" + std::to_string(size)};
    Result<ObjectMeta> meta = PutString(*store_, key, data);
    ASSERT_TRUE(meta.has_value()) << meta.error();
    EXPECT_EQ(meta->size, size);
    EXPECT_EQ(meta->etag, HexEncode(Md5::Of(AsBytes(data))));
    EXPECT_EQ(meta->parts_count, 0u);
    Result<std::string> back = GetString(*store_, key);
    ASSERT_TRUE(back.has_value()) << back.error();
    EXPECT_TRUE(*back == data);
    Result<ObjectMeta> head = store_->Head(key);
    ASSERT_TRUE(head.has_value());
    EXPECT_EQ(head->etag, meta->etag);
    EXPECT_EQ(head->size, size);
  }
  EXPECT_EQ(PutString(*store_, {"bkt", "e"}, "")->etag, "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(PutString(*store_, {"bkt", "abc"}, "abc")->etag, "900150983cd24fb0d6963f7d28e17f72");
}

TEST_P(StoreTest, RangesResolveAndClamp) {
  const std::string data = Bytes(7, 10000);
  const ObjectKey key{"bkt", "ranged"};
  ASSERT_TRUE(PutString(*store_, key, data).has_value());
  struct Row {
    ByteRange range;
    uint64_t offset, length;
  };
  const Row rows[] = {
      {ByteRange::All(), 0, 10000},
      {{5, 10}, 5, 10},
      {{4090, 20}, 4090, 20},
      {{4000, 5000}, 4000, 5000},
      {{9990, 100}, 9990, 10},
      {{9999, ByteRange::kToEnd}, 9999, 1},
      {ByteRange::Suffix(3), 9997, 3},
      {ByteRange::Suffix(20000), 0, 10000},
      {{5, 0}, 5, 0},
      {ByteRange::Suffix(0), 10000, 0},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(std::to_string(row.range.offset) + "+" + std::to_string(row.range.length));
    Result<std::unique_ptr<ObjectReader>> r = store_->Get(key, row.range);
    ASSERT_TRUE(r.has_value()) << r.error();
    EXPECT_EQ((*r)->offset(), row.offset);
    EXPECT_EQ((*r)->length(), row.length);
    Result<std::string> got = ReadAll(**r, 7);
    ASSERT_TRUE(got.has_value()) << got.error();
    EXPECT_TRUE(*got == data.substr(row.offset, row.length));
  }
  for (ByteRange past :
       {ByteRange{10000, 1}, ByteRange{10000, ByteRange::kToEnd}, ByteRange{1ull << 40, 5}}) {
    Result<std::unique_ptr<ObjectReader>> r = store_->Get(key, past);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), Code::kOutOfRange);
  }
  ASSERT_TRUE(PutString(*store_, {"bkt", "empty"}, "").has_value());
  for (ByteRange any :
       {ByteRange::All(), ByteRange{0, 0}, ByteRange{5, 10}, ByteRange::Suffix(4)}) {
    Result<std::string> got = GetString(*store_, {"bkt", "empty"}, any);
    ASSERT_TRUE(got.has_value()) << got.error();
    EXPECT_TRUE(got->empty());
  }
}

TEST_P(StoreTest, KeysWithUnicodeSpecialCharactersAndTheLengthLimit) {
  const std::string keys[] = {"日本語/キー",     "ключ",
                              "emoji-🙂-🚀", "spaces and+plus%20&?=#",
                              "tab\tnew\nline",  "../../etc/passwd",
                              "a//b///c",        std::string(1024, 'x'),
                              "\x7f\x01\xff",    "/leading"};
  for (const std::string& name : keys) {
    SCOPED_TRACE(name.substr(0, 40));
    ASSERT_TRUE(PutString(*store_, {"bkt", name}, name).has_value());
    Result<std::string> got = GetString(*store_, {"bkt", name});
    ASSERT_TRUE(got.has_value()) << got.error();
    EXPECT_EQ(*got, name);
  }
  for (const std::string& bad :
       {std::string(1025, 'x'), std::string(), std::string("nul\0byte", 8)}) {
    Result<std::unique_ptr<ObjectWriter>> w = store_->Put({"bkt", bad}, {});
    ASSERT_FALSE(w.has_value());
    EXPECT_EQ(w.error().code(), Code::kInvalidArgument);
    EXPECT_EQ(w.error().subject(), Subject::kKey);
    EXPECT_EQ(store_->Head({"bkt", bad}).error().code(), Code::kInvalidArgument);
  }
}

TEST_P(StoreTest, MetadataIsStoredAsGiven) {
  PutOptions o;
  o.content_type = "text/plain; charset=utf-8";
  o.user_meta = {{"zeta", "1"}, {"alpha", "two words"}};
  o.headers = {{"cache-control", "max-age=60"}, {"content-encoding", "gzip"}};
  o.chunk = ChunkShape{descriptor::StoredLayout::kL2TD, 4, 1024};
  ASSERT_TRUE(PutString(*store_, {"bkt", "m"}, Bytes(1, 4096), o).has_value());
  Result<ObjectMeta> m = store_->Head({"bkt", "m"});
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->content_type, o.content_type);
  EXPECT_EQ(m->user_meta, o.user_meta);
  EXPECT_EQ(m->headers, o.headers);
  ASSERT_TRUE(m->chunk.has_value());
  EXPECT_EQ(m->chunk->num_layers, 4u);
  EXPECT_EQ(m->chunk->layer_bytes, 1024u);
  EXPECT_GT(m->mtime_unix_ms, 0);
}

TEST_P(RocksStoreTest, ChunkObjectsUseOneExtentPerLayerRange) {
  const uint64_t before = Extents();
  PutOptions l2td;
  l2td.chunk = ChunkShape{descriptor::StoredLayout::kL2TD, 8, 1000};
  ASSERT_TRUE(PutString(*store_, {"bkt", "c1"}, Bytes(2, 8000), l2td).has_value());
  EXPECT_EQ(Extents(), before + 8);
  PutOptions two;
  two.chunk = ChunkShape{descriptor::StoredLayout::k2LTD, 8, 1000};
  ASSERT_TRUE(PutString(*store_, {"bkt", "c2"}, Bytes(3, 8000), two).has_value());
  EXPECT_EQ(Extents(), before + 8 + 16);
  PutOptions odd;
  odd.chunk = ChunkShape{descriptor::StoredLayout::k2LTD, 8, 999};
  EXPECT_EQ(store_->Put({"bkt", "c3"}, odd).error().code(), Code::kInvalidArgument);
  PutOptions huge;
  huge.extent_bytes = kMaxExtentBytes + 1;
  EXPECT_EQ(store_->Put({"bkt", "c4"}, huge).error().code(), Code::kInvalidArgument);
}

TEST_P(StoreTest, OverwriteIsAtomicForReadersOpenedBefore) {
  const ObjectKey key{"bkt", "doc"};
  const std::string v1 = Bytes(1, 50000);
  const std::string v2 = Bytes(2, 23456);
  ASSERT_TRUE(PutString(*store_, key, v1).has_value());
  Result<std::unique_ptr<ObjectReader>> old_reader = store_->Get(key, ByteRange::All());
  ASSERT_TRUE(old_reader.has_value());
  std::string first(100, '\0');  // read a little of v1 before the overwrite
  ASSERT_EQ(*(*old_reader)->Read(MutableByteSpan(reinterpret_cast<std::byte*>(first.data()), 100)),
            100u);

  // The overwrite streams (several flushes), so its extents exist before it commits.
  Result<std::unique_ptr<ObjectWriter>> w = store_->Put(key, {});
  ASSERT_TRUE(w.has_value());
  ASSERT_TRUE((*w)->Append(AsBytes(v2)).ok());
  Result<std::string> mid = GetString(*store_, key);
  ASSERT_TRUE(mid.has_value());
  EXPECT_TRUE(*mid == v1) << "an uncommitted overwrite is visible";
  ASSERT_TRUE((*w)->Commit().has_value());

  Result<std::string> rest = ReadAll(**old_reader);
  ASSERT_TRUE(rest.has_value()) << rest.error();
  EXPECT_TRUE(first + *rest == v1);
  EXPECT_EQ((*old_reader)->meta().size, v1.size());
  Result<std::string> now = GetString(*store_, key);
  ASSERT_TRUE(now.has_value());
  EXPECT_TRUE(*now == v2);
}

TEST_P(StoreTest, ReaderOpenedBeforeDeleteStillReads) {
  const std::string v = Bytes(5, 30000);
  ASSERT_TRUE(PutString(*store_, {"bkt", "gone"}, v).has_value());
  Result<std::unique_ptr<ObjectReader>> r = store_->Get({"bkt", "gone"}, ByteRange::All());
  ASSERT_TRUE(r.has_value());
  ASSERT_TRUE(store_->Delete({"bkt", "gone"}).ok());
  Result<std::string> got = ReadAll(**r);
  ASSERT_TRUE(got.has_value()) << got.error();
  EXPECT_TRUE(*got == v);
  EXPECT_EQ(store_->Head({"bkt", "gone"}).error().code(), Code::kNotFound);
}

TEST_P(StoreTest, AbandonedOrRejectedWritesLeaveNothing) {
  const uint64_t before = Extents();
  {
    Result<std::unique_ptr<ObjectWriter>> w = store_->Put({"bkt", "abandoned"}, {});
    ASSERT_TRUE(w.has_value());
    ASSERT_TRUE((*w)->Append(AsBytes(Bytes(1, 100000))).ok());  // flushed several times
  }
  EXPECT_EQ(store_->Head({"bkt", "abandoned"}).error().code(), Code::kNotFound);
  EXPECT_EQ(Extents(), before);

  PutOptions sized;
  sized.expected_size = 50000;
  Result<ObjectMeta> short_body = PutString(*store_, {"bkt", "short"}, Bytes(1, 40000), sized);
  ASSERT_FALSE(short_body.has_value());
  EXPECT_EQ(short_body.error().subject(), Subject::kEntity);
  Result<ObjectMeta> long_body = PutString(*store_, {"bkt", "short"}, Bytes(1, 50001), sized);
  ASSERT_FALSE(long_body.has_value());
  EXPECT_EQ(long_body.error().subject(), Subject::kEntity);

  const std::string data = Bytes(9, 20000);
  PutOptions digest;
  digest.content_md5 = Md5::Of(AsBytes("something else"));
  Result<ObjectMeta> bad_md5 = PutString(*store_, {"bkt", "md5"}, data, digest);
  ASSERT_FALSE(bad_md5.has_value());
  EXPECT_EQ(bad_md5.error().code(), Code::kInvalidArgument);
  EXPECT_EQ(bad_md5.error().subject(), Subject::kDigest);
  EXPECT_EQ(store_->Head({"bkt", "short"}).error().code(), Code::kNotFound);
  EXPECT_EQ(store_->Head({"bkt", "md5"}).error().code(), Code::kNotFound);
  EXPECT_EQ(Extents(), before);

  digest.content_md5 = Md5::Of(AsBytes(data));
  digest.expected_size = data.size();
  EXPECT_TRUE(PutString(*store_, {"bkt", "md5"}, data, digest).has_value());
}

TEST_P(StoreTest, WriterIsSpentAfterCommit) {
  Result<std::unique_ptr<ObjectWriter>> w = store_->Put({"bkt", "once"}, {});
  ASSERT_TRUE(w.has_value());
  ASSERT_TRUE((*w)->Append(AsBytes("abc")).ok());
  ASSERT_TRUE((*w)->Commit().has_value());
  EXPECT_EQ((*w)->Append(AsBytes("x")).code(), Code::kFailedPrecondition);
  EXPECT_FALSE((*w)->Commit().has_value());
}

TEST_P(RocksStoreTest, DeleteAndOverwriteReclaimExtents) {
  const uint64_t before = Extents();
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(
        PutString(*store_, {"bkt", "big" + std::to_string(i)}, Bytes(i, 200000)).has_value());
  }
  EXPECT_EQ(Extents(), before + 8 * 49);  // ceil(200000 / 4096)
  ASSERT_TRUE(PutString(*store_, {"bkt", "big0"}, Bytes(99, 4096)).has_value());
  EXPECT_EQ(Extents(), before + 7 * 49 + 1);
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(store_->Delete({"bkt", "big" + std::to_string(i)}).ok());
  }
  EXPECT_EQ(Extents(), before);

  // Compaction drops the covered extents from disk.
  ASSERT_TRUE(rocks().CompactExtents().ok());
  Result<StoreStats> stats = store_->Stats();
  ASSERT_TRUE(stats.has_value());
  uint64_t on_disk = 0;
  for (const auto& [name, value] : stats->figures) {
    if (name == "extent_sst_bytes" || name == "extent_blob_bytes" || name == "data_file_bytes") {
      on_disk += value;
    }
  }
  EXPECT_LT(on_disk, 200000u) << "deleted extents still occupy the disk";
}

// A replaced or deleted version of a few extents is freed by point deletes, not a range
// tombstone: each range tombstone in the mutable memtable is re-fragmented by every later
// iterator, which made overwrites of small objects cost O(overwrites) per PUT and read. A
// version of more than 256 extents still takes one DeleteRange.
TEST_P(RocksStoreTest, SmallVersionsAreFreedByPointDeletes) {
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(PutString(*store_, {"bkt", "hot"}, Bytes(i, 10000)).has_value());  // 3 extents
  }
  ASSERT_TRUE(PutString(*store_, {"bkt", "big"}, Bytes(1, 300 * 4096)).has_value());
  ASSERT_TRUE(store_->Delete({"bkt", "big"}).ok());
  ASSERT_TRUE(store_->Delete({"bkt", "hot"}).ok());
  rocksdb::FlushOptions flush;
  flush.wait = true;
  ASSERT_TRUE(rocks().db()->Flush(flush, rocks().extents_cf()).ok());
  rocksdb::TablePropertiesCollection tables;
  ASSERT_TRUE(rocks().db()->GetPropertiesOfAllTables(rocks().extents_cf(), &tables).ok());
  uint64_t deletions = 0;
  uint64_t range_deletions = 0;
  for (const auto& [file, props] : tables) {
    deletions += props->num_deletions;
    range_deletions += props->num_range_deletions;
  }
  EXPECT_EQ(range_deletions, 1u) << "only the 300-extent version takes a DeleteRange";
  EXPECT_GE(deletions, 20u * 3 + range_deletions) << "20 versions of 3 extents";
  Result<std::string> gone = GetString(*store_, {"bkt", "hot"});
  EXPECT_EQ(gone.error().code(), Code::kNotFound);
}

TEST_P(StoreTest, ManySmallObjects) {
  constexpr int kCount = 2000;
  for (int i = 0; i < kCount; ++i) {
    ASSERT_TRUE(
        PutString(*store_, {"bkt", "s/" + std::to_string(i)}, Bytes(i, i % 200)).has_value());
  }
  for (int i = 0; i < kCount; i += 7) {
    Result<std::string> got = GetString(*store_, {"bkt", "s/" + std::to_string(i)});
    ASSERT_TRUE(got.has_value());
    EXPECT_TRUE(*got == Bytes(i, i % 200)) << i;
  }
}

// Commits overlap in the group sync (the key lock is released before the sync): writers of
// one key and of their own keys all succeed, the one key ends as one whole version with
// its own ETag, every replaced version's extents are freed, and all of it survives reopen.
TEST_P(StoreTest, ConcurrentCommitsShareSyncsAndKeepOneVersionPerKey) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 12;
  const uint64_t before = Extents();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        const uint64_t seed = static_cast<uint64_t>(t * 1000 + r);
        if (!PutString(*store_, {"bkt", "shared"}, Bytes(seed, 10000)).has_value() ||
            !PutString(*store_, {"bkt", "own" + std::to_string(t)}, Bytes(seed, 5000))
                 .has_value()) {
          ++failures;
        }
      }
    });
  }
  for (std::thread& th : threads) {
    th.join();
  }
  ASSERT_EQ(failures.load(), 0);
  // shared: 3 extents of 4096; own: 2 extents each; nothing else is left (RADOS keeps
  // replaced versions for its GC: rados_store_test.cc).
  if (!IsRados()) {
    EXPECT_EQ(Extents(), before + 3 + 2 * kThreads);
  }
  store_.reset();
  Open();
  Result<ObjectMeta> meta = store_->Head({"bkt", "shared"});
  ASSERT_TRUE(meta.has_value()) << meta.error();
  Result<std::string> shared = GetString(*store_, {"bkt", "shared"});
  ASSERT_TRUE(shared.has_value()) << shared.error();
  EXPECT_EQ(meta->etag, HexEncode(Md5::Of(AsBytes(*shared))));
  for (int t = 0; t < kThreads; ++t) {
    const uint64_t last = static_cast<uint64_t>(t * 1000 + kRounds - 1);
    Result<std::string> own = GetString(*store_, {"bkt", "own" + std::to_string(t)});
    ASSERT_TRUE(own.has_value()) << own.error();
    EXPECT_TRUE(*own == Bytes(last, 5000)) << t;
  }
}

TEST_P(StoreTest, ReopenKeepsObjectsAndNeverReusesDataIds) {
  const std::string a = Bytes(1, 30000);
  ASSERT_TRUE(PutString(*store_, {"bkt", "a"}, a).has_value());
  store_.reset();
  Open();
  const std::string b = Bytes(2, 30000);
  ASSERT_TRUE(PutString(*store_, {"bkt", "b"}, b).has_value());
  store_.reset();
  Open();
  EXPECT_TRUE(*GetString(*store_, {"bkt", "a"}) == a);
  EXPECT_TRUE(*GetString(*store_, {"bkt", "b"}) == b);
}

TEST_P(StoreTest, CopyKeepsOrReplacesMetadata) {
  PutOptions o;
  o.content_type = "image/png";
  o.user_meta = {{"k", "v"}};
  const std::string data = Bytes(4, 70000);
  Result<ObjectMeta> src = PutString(*store_, {"bkt", "src"}, data, o);
  ASSERT_TRUE(src.has_value());
  ASSERT_TRUE(store_->CreateBucket("other", "me").ok());

  Result<ObjectMeta> copy = store_->Copy({"bkt", "src"}, {"other", "dst"}, std::nullopt, {});
  ASSERT_TRUE(copy.has_value()) << copy.error();
  EXPECT_EQ(copy->etag, src->etag);
  EXPECT_EQ(copy->content_type, "image/png");
  EXPECT_EQ(copy->user_meta, o.user_meta);
  EXPECT_TRUE(*GetString(*store_, {"other", "dst"}) == data);

  PutOptions r;
  r.content_type = "text/plain";
  Result<ObjectMeta> replaced = store_->Copy({"bkt", "src"}, {"bkt", "dst2"}, r, {});
  ASSERT_TRUE(replaced.has_value());
  EXPECT_EQ(replaced->content_type, "text/plain");
  EXPECT_TRUE(replaced->user_meta.empty());

  // Onto itself: metadata replaced, bytes untouched.
  Result<ObjectMeta> self = store_->Copy({"bkt", "src"}, {"bkt", "src"}, r, {});
  ASSERT_TRUE(self.has_value());
  EXPECT_EQ(self->content_type, "text/plain");
  EXPECT_EQ(self->etag, src->etag);
  EXPECT_TRUE(*GetString(*store_, {"bkt", "src"}) == data);

  // The copy is independent of its source.
  ASSERT_TRUE(store_->Delete({"bkt", "src"}).ok());
  EXPECT_TRUE(*GetString(*store_, {"other", "dst"}) == data);
  EXPECT_EQ(store_->Copy({"bkt", "src"}, {"bkt", "x"}, std::nullopt, {}).error().subject(),
            Subject::kKey);
  EXPECT_EQ(store_->Copy({"bkt", "dst2"}, {"nobucket", "x"}, std::nullopt, {}).error().subject(),
            Subject::kBucket);
}

// CopyObject's write conditions on the destination and the checksum a REPLACE keeps (issue 17):
// onto another key (a streamed copy) and onto the source itself (a record rewrite).
TEST_P(StoreTest, CopyChecksDestinationConditionsAndKeepsTheChecksum) {
  PutOptions o;
  o.headers = {{"x-amz-checksum-crc32", "AAAAAQ=="}, {"cache-control", "no-cache"}};
  Result<ObjectMeta> src = PutString(*store_, {"bkt", "src"}, Bytes(5, 9000), o);
  ASSERT_TRUE(src.has_value()) << src.error();
  Result<ObjectMeta> dst = PutString(*store_, {"bkt", "dst"}, "old");
  ASSERT_TRUE(dst.has_value()) << dst.error();
  for (const ObjectKey& to : {ObjectKey{"bkt", "dst"}, ObjectKey{"bkt", "src"}}) {
    SCOPED_TRACE(to.name);
    const std::string before = *GetString(*store_, to);
    WriteConditions none_match;
    none_match.if_none_match = true;
    Result<ObjectMeta> r = store_->Copy({"bkt", "src"}, to, PutOptions{}, none_match);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), Code::kFailedPrecondition) << r.error();
    EXPECT_EQ(r.error().field(), "If-None-Match");
    WriteConditions wrong;
    wrong.if_match = "ffffffffffffffffffffffffffffffff";
    r = store_->Copy({"bkt", "src"}, to, std::nullopt, wrong);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().field(), "If-Match") << r.error();
    EXPECT_EQ(*GetString(*store_, to), before);  // refused: nothing changed
    WriteConditions match;
    match.if_match = "\"" + store_->Head(to)->etag + "\"";
    PutOptions replace;
    replace.content_type = "text/plain";
    r = store_->Copy({"bkt", "src"}, to, replace, match);
    ASSERT_TRUE(r.has_value()) << r.error();
    // REPLACE takes the new metadata and keeps the source's checksum.
    EXPECT_EQ(r->content_type, "text/plain");
    EXPECT_EQ(
        r->headers,
        (std::vector<std::pair<std::string, std::string>>{{"x-amz-checksum-crc32", "AAAAAQ=="}}));
    EXPECT_EQ(store_->Head(to)->headers, r->headers);
  }
  // A checksum given with the new metadata replaces the source's.
  PutOptions replace;
  replace.headers = {{"x-amz-checksum-sha1", "new"}};
  Result<ObjectMeta> r = store_->Copy({"bkt", "src"}, {"bkt", "sha1"}, replace, {});
  ASSERT_TRUE(r.has_value()) << r.error();
  EXPECT_EQ(r->headers, replace.headers);
  WriteConditions none_match;
  none_match.if_none_match = true;
  r = store_->Copy({"bkt", "src"}, {"bkt", "fresh"}, std::nullopt, none_match);
  ASSERT_TRUE(r.has_value()) << r.error();  // absent: the copy is made
}

TEST_P(StoreTest, HeadManyAnswersEveryName) {
  ASSERT_TRUE(PutString(*store_, {"bkt", "h1"}, "one").has_value());
  ASSERT_TRUE(PutString(*store_, {"bkt", "h3"}, "three!").has_value());
  const std::vector<std::string> names = {"h1", "h2", "h3", "", std::string(2000, 'x')};
  Result<std::vector<std::optional<ObjectMeta>>> got = store_->HeadMany("bkt", names);
  ASSERT_TRUE(got.has_value()) << got.error();
  ASSERT_EQ(got->size(), names.size());
  ASSERT_TRUE((*got)[0].has_value());
  EXPECT_EQ((*got)[0]->size, 3u);
  EXPECT_FALSE((*got)[1].has_value());
  ASSERT_TRUE((*got)[2].has_value());
  EXPECT_EQ((*got)[2]->size, 6u);
  EXPECT_FALSE((*got)[3].has_value());
  EXPECT_FALSE((*got)[4].has_value());
  EXPECT_EQ(store_->HeadMany("nobucket", names).error().subject(), Subject::kBucket);
  Result<std::vector<std::optional<ObjectMeta>>> none = store_->HeadMany("bkt", {});
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->empty());
}

TEST_P(RocksStoreTest, StatsReportEngineFigures) {
  ASSERT_TRUE(PutString(*store_, {"bkt", "x"}, Bytes(1, 10000)).has_value());
  Result<StoreStats> stats = store_->Stats();
  ASSERT_TRUE(stats.has_value());
  std::map<std::string, uint64_t> f(stats->figures.begin(), stats->figures.end());
  for (const char* name :
       {"objects_estimated", "extent_live_data_bytes", "block_cache_usage_bytes",
        "block_cache_capacity_bytes", "pending_compaction_bytes", "writes_in_progress"}) {
    EXPECT_TRUE(f.contains(name)) << name;
  }
  EXPECT_EQ(f["block_cache_capacity_bytes"], 64u << 20);
  EXPECT_EQ(f["writes_in_progress"], 0u);
}

TEST(StoreOptions, ValidateRefusesBadValues) {
  StoreOptions o;
  EXPECT_TRUE(o.Validate().ok());
  o.default_extent_bytes = 0;
  EXPECT_EQ(o.Validate().field(), "storage.default_extent_bytes");
  o = {};
  o.data_dir = "";
  EXPECT_FALSE(o.Validate().ok());
  o = {};
  o.write_batch_bytes = 1;
  EXPECT_FALSE(o.Validate().ok());
  o = {};
  o.read_threads = 1000;
  EXPECT_FALSE(o.Validate().ok());
}

}  // namespace
}  // namespace oc::storage::test

namespace oc::storage::test {
namespace {

TEST(StoreConfig, AppliesTheStorageTable) {
  Result<Config> c = Config::Parse(R"(
[storage]
data_dir = "/var/lib/oc"
default_extent_bytes = "256KiB"
block_cache_bytes = 1048576
sync_writes = false
read_threads = 2
extent_layout = "blob"
slice_read_mode = "parallel"
write_batch_bytes = "16MiB"
reclaim_after_bytes = 0
)");
  ASSERT_TRUE(c.has_value()) << c.error();
  StoreOptions o;
  ASSERT_TRUE(ApplyConfig(*c, &o).ok());
  EXPECT_EQ(o.data_dir, "/var/lib/oc");
  EXPECT_EQ(o.default_extent_bytes, 256u << 10);
  EXPECT_EQ(o.block_cache_bytes, 1u << 20);
  EXPECT_FALSE(o.sync_writes);
  EXPECT_EQ(o.read_threads, 2u);
  EXPECT_EQ(o.extent_layout, ExtentLayout::kBlobFiles);
  EXPECT_EQ(o.slice_read_mode, SliceReadMode::kParallelGet);
  EXPECT_EQ(o.write_batch_bytes, 16u << 20);
  EXPECT_EQ(o.reclaim_after_bytes, 0u);
  EXPECT_TRUE(c->CheckNoUnknownKeys().ok());
  EXPECT_TRUE(o.Validate().ok());

  Result<Config> data = Config::Parse(R"(
[storage]
extent_layout = "data_files"
data_file_bytes = "256MiB"
data_file_garbage_percent = 80
)");
  ASSERT_TRUE(data.has_value()) << data.error();
  ASSERT_TRUE(ApplyConfig(*data, &o).ok());
  EXPECT_EQ(o.extent_layout, ExtentLayout::kDataFiles);
  EXPECT_EQ(o.data_file_bytes, 256u << 20);
  EXPECT_EQ(o.data_file_garbage_percent, 80u);
  EXPECT_TRUE(o.Validate().ok());
  for (const auto& [bytes, percent, field] :
       {std::tuple{uint64_t{1000}, 50u, "storage.data_file_bytes"},
        std::tuple{uint64_t{1} << 30, 0u, "storage.data_file_garbage_percent"},
        std::tuple{uint64_t{1} << 30, 101u, "storage.data_file_garbage_percent"}}) {
    StoreOptions bad = o;
    bad.data_file_bytes = bytes;
    bad.data_file_garbage_percent = percent;
    EXPECT_EQ(bad.Validate().field(), field);
  }

  for (const char* bad :
       {"[storage]\nextent_layout = \"disk\"\n", "[storage]\nslice_read_mode = \"fast\"\n",
        "[storage]\nsync_writes = \"yes\"\n", "[storage]\ndefault_extent_bytes = \"lots\"\n",
        "[storage]\ndata_file_bytes = \"big\"\n"}) {
    SCOPED_TRACE(bad);
    Result<Config> b = Config::Parse(bad);
    ASSERT_TRUE(b.has_value());
    StoreOptions untouched;
    Status s = ApplyConfig(*b, &untouched);
    EXPECT_EQ(s.code(), Code::kInvalidArgument);
    EXPECT_TRUE(s.field().starts_with("storage.")) << s;
  }
}

TEST(StoreConfig, ShippedFileListsEveryKeyAtItsDefault) {
  Result<Config> c = Config::LoadFile(std::string(OC_SOURCE_DIR) + "/conf/storage-server.toml");
  ASSERT_TRUE(c.has_value()) << c.error();
  StoreOptions from_file;
  from_file.data_dir = "changed";
  from_file.read_threads = 99;
  ASSERT_TRUE(ApplyConfig(*c, &from_file).ok());
  const StoreOptions defaults;
  EXPECT_EQ(from_file.data_dir, defaults.data_dir);
  EXPECT_EQ(from_file.default_extent_bytes, defaults.default_extent_bytes);
  EXPECT_EQ(from_file.block_cache_bytes, defaults.block_cache_bytes);
  EXPECT_EQ(from_file.sync_writes, defaults.sync_writes);
  EXPECT_EQ(from_file.read_threads, defaults.read_threads);
  EXPECT_EQ(from_file.extent_layout, defaults.extent_layout);
  EXPECT_EQ(from_file.slice_read_mode, defaults.slice_read_mode);
  EXPECT_EQ(from_file.write_batch_bytes, defaults.write_batch_bytes);
  EXPECT_EQ(from_file.reclaim_after_bytes, defaults.reclaim_after_bytes);
  EXPECT_EQ(from_file.data_file_bytes, defaults.data_file_bytes);
  EXPECT_EQ(from_file.data_file_min_bytes, defaults.data_file_min_bytes);
  EXPECT_EQ(from_file.data_file_writeback_bytes, defaults.data_file_writeback_bytes);
  EXPECT_EQ(from_file.data_file_garbage_percent, defaults.data_file_garbage_percent);
  EXPECT_EQ(from_file.backend, defaults.backend);
  const RadosOptions& r = from_file.rados;
  const RadosOptions& d = defaults.rados;
  EXPECT_EQ(r.conf_file, d.conf_file);
  EXPECT_EQ(r.client_name, d.client_name);
  EXPECT_EQ(r.keyring, d.keyring);
  EXPECT_EQ(r.pool, d.pool);
  EXPECT_EQ(r.rados_namespace, d.rados_namespace);
  EXPECT_EQ(r.create_pool, d.create_pool);
  EXPECT_EQ(r.index_shards, d.index_shards);
  EXPECT_EQ(r.object_extent_bytes, d.object_extent_bytes);
  EXPECT_EQ(r.max_chunk_object_bytes, d.max_chunk_object_bytes);
  EXPECT_EQ(r.max_ops_in_flight, d.max_ops_in_flight);
  EXPECT_EQ(r.max_bytes_in_flight, d.max_bytes_in_flight);
  EXPECT_EQ(r.op_timeout, d.op_timeout);
  EXPECT_EQ(r.connect_timeout, d.connect_timeout);
  EXPECT_EQ(r.gc, d.gc);
  EXPECT_EQ(r.gc_min_wait, d.gc_min_wait);
  EXPECT_EQ(r.orphan_min_age, d.orphan_min_age);
}

TEST(StoreConfig, AppliesTheRadosTableAndRefusesBadValues) {
  Result<Config> c = Config::Parse(R"(
[storage]
backend = "rados"
[rados]
conf_file = "/etc/ceph/ceph.conf"
pool = "kv"
namespace = "team-a"
index_shards = 7
op_timeout = "5s"
gc_min_wait = "0s"
)");
  ASSERT_TRUE(c.has_value()) << c.error();
  StoreOptions o;
  ASSERT_TRUE(ApplyConfig(*c, &o).ok());
  EXPECT_EQ(o.backend, "rados");
  EXPECT_EQ(o.rados.pool, "kv");
  EXPECT_EQ(o.rados.rados_namespace, "team-a");
  EXPECT_EQ(o.rados.index_shards, 7u);
  EXPECT_EQ(o.rados.op_timeout, std::chrono::seconds(5));
  EXPECT_EQ(o.rados.gc_min_wait.count(), 0);
  EXPECT_TRUE(o.Validate().ok());
  o.rados.op_timeout = std::chrono::milliseconds(0);  // Ceph's "wait forever" is refused
  EXPECT_EQ(o.Validate().field(), "rados.op_timeout");
  o.rados = {};
  o.rados.index_shards = 0;
  EXPECT_EQ(o.Validate().field(), "rados.index_shards");
  Result<Config> bad = Config::Parse("[storage]\nbackend = \"ceph\"\n");
  ASSERT_TRUE(bad.has_value());
  StoreOptions b;
  EXPECT_EQ(ApplyConfig(*bad, &b).field(), "storage.backend");
}

}  // namespace
}  // namespace oc::storage::test
