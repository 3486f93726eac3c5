// Buckets and single-object operations of the local stores: RocksDB with every extent layout,
// and RADOS (store_fixture.h). Overwrites, reclaim, copies and engine figures are in
// store_versions_test.cc, options and config tables in store_options_test.cc.

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

INSTANTIATE_TEST_SUITE_P(Backends, StoreTest,
                         ::testing::Values(Backend::kRocksSst, Backend::kRocksBlob,
                                           Backend::kRocksData, Backend::kRados),
                         BackendName);
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

}  // namespace
}  // namespace oc::storage::test
