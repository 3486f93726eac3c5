// Versions of the local stores (store_fixture.h): overwrites and deletes reclaiming their
// space, concurrent commits, reopening, copies, HeadMany and the engine's figures.

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
#include "store_fixture.h"
#include "store_test_util.h"

namespace oc::storage::test {
namespace {

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

}  // namespace
}  // namespace oc::storage::test
