// Store conformance: the same behaviour checks for every Store operation, run against the
// local RocksDB store, a remote store over the RPC to one server, and a remote store
// spreading buckets over two servers (docs/design.md: "the gateway cannot tell them apart;
// tests run both"); and the same for RADOS: the local RadosStore and a server over it
// (multipart: RocksDB only until RADOS has it).

#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include <fmt/core.h>

#include "records/md5.h"
#include "rpc/wire.h"
#include "rpc_test_util.h"
#include "served_store_fixture.h"

namespace oc::storage::test {
namespace {

class StoreConformance : public ServedStoreTest {};

INSTANTIATE_TEST_SUITE_P(Backends, StoreConformance,
                         ::testing::Values(Served::kLocal, Served::kRemote,
                                           Served::kRemoteTwoServers, Served::kRados,
                                           Served::kRemoteRados),
                         ServedName);

class RocksConformance : public StoreConformance {};
INSTANTIATE_TEST_SUITE_P(Backends, RocksConformance,
                         ::testing::Values(Served::kLocal, Served::kRemote,
                                           Served::kRemoteTwoServers),
                         ServedName);

TEST_P(StoreConformance, BucketLifecycleAndListingAcrossServers) {
  const std::vector<std::string> names = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta"};
  for (const std::string& b : names) {
    ASSERT_TRUE(store().CreateBucket(b, "me").ok()) << b;
  }
  const Status again = store().CreateBucket("alpha", "someone");
  EXPECT_EQ(again.code(), Code::kAlreadyExists);
  EXPECT_EQ(again.subject(), Subject::kBucket);
  Result<BucketInfo> info = store().HeadBucket("gamma");
  ASSERT_TRUE(info.has_value()) << info.error();
  EXPECT_EQ(info->name, "gamma");
  EXPECT_EQ(info->owner, "me");
  EXPECT_GT(info->created_unix_ms, 0);

  Result<std::vector<BucketInfo>> all = store().ListBuckets();
  ASSERT_TRUE(all.has_value()) << all.error();
  std::vector<std::string> listed;
  for (const BucketInfo& b : *all) {
    listed.push_back(b.name);
  }
  EXPECT_EQ(listed, (std::vector<std::string>{"alpha", "beta", "bkt", "delta", "epsilon", "gamma",
                                              "zeta"}));

  ASSERT_TRUE(PutString(store(), {"beta", "k"}, "v").has_value());
  const Status busy = store().DeleteBucket("beta");
  EXPECT_EQ(busy.code(), Code::kFailedPrecondition);
  EXPECT_EQ(busy.subject(), Subject::kBucket);
  ASSERT_TRUE(store().Delete({"beta", "k"}).ok());
  EXPECT_TRUE(store().DeleteBucket("beta").ok());
  EXPECT_EQ(store().HeadBucket("beta").error().subject(), Subject::kBucket);
  EXPECT_EQ(store().DeleteBucket("beta").code(), Code::kNotFound);
  EXPECT_EQ(store().CreateBucket("Bad_Name", "me").code(), Code::kInvalidArgument);
}

// The lend API (store.h AppendSpace/Appended) on every store: the remote writer takes it
// through the base class's scratch. Lends of 300 KiB filled partly, and an empty one.
TEST_P(StoreConformance, LentAppendsRoundTrip) {
  const std::string data = Bytes(11, 3 * rpc::kStreamChunkBytes + 12345);
  Result<std::unique_ptr<ObjectWriter>> w = store().Put({"bkt", "lent"}, {});
  ASSERT_TRUE(w.has_value()) << w.error();
  uint64_t at = 0;
  for (uint64_t i = 0; at < data.size(); ++i) {
    Result<MutableByteSpan> space = (*w)->AppendSpace(1, 300 << 10);
    ASSERT_TRUE(space.has_value()) << space.error();
    const uint64_t fill = space->size() > i % 7 ? space->size() - i % 7 : space->size();
    const uint64_t n = i == 1 ? 0 : std::min<uint64_t>(data.size() - at, fill);
    std::memcpy(space->data(), data.data() + at, n);
    ASSERT_TRUE((*w)->Appended(n).ok());
    at += n;
  }
  Result<ObjectMeta> meta = (*w)->Commit();
  ASSERT_TRUE(meta.has_value()) << meta.error();
  EXPECT_EQ(meta->etag, HexEncode(Md5::Of(AsBytes(data))));
  Result<std::string> back = GetString(store(), {"bkt", "lent"}, ByteRange::All(), 1 << 20);
  ASSERT_TRUE(back.has_value()) << back.error();
  EXPECT_TRUE(*back == data);
}

TEST_P(StoreConformance, ObjectsRoundTripAcrossStreamFrameBoundaries) {
  constexpr uint64_t kFrame = rpc::kStreamChunkBytes;
  for (uint64_t size :
       std::vector<uint64_t>{0, 1, 4097, kFrame - 1, kFrame, kFrame + 1, 3 * kFrame + 5}) {
    SCOPED_TRACE(size);
    const std::string data = Bytes(size, size);
    const ObjectKey key{"bkt", "obj-" + std::to_string(size)};
    // Appends of 700 KiB and reads of 77 KiB: neither lines up with the 1 MiB frames.
    Result<ObjectMeta> meta = PutString(store(), key, data, {}, 700 << 10);
    ASSERT_TRUE(meta.has_value()) << meta.error();
    EXPECT_EQ(meta->size, size);
    EXPECT_EQ(meta->etag, HexEncode(Md5::Of(AsBytes(data))));
    Result<std::string> back = GetString(store(), key, ByteRange::All(), 77 << 10);
    ASSERT_TRUE(back.has_value()) << back.error();
    EXPECT_TRUE(*back == data);
    Result<ObjectMeta> head = store().Head(key);
    ASSERT_TRUE(head.has_value()) << head.error();
    EXPECT_EQ(head->etag, meta->etag);
    EXPECT_EQ(head->size, size);
    EXPECT_EQ(head->mtime_unix_ms, meta->mtime_unix_ms);
  }
}

TEST_P(StoreConformance, RangesResolveAndClamp) {
  const std::string data = Bytes(7, 3 << 20);
  const uint64_t size = data.size();
  const ObjectKey key{"bkt", "ranged"};
  ASSERT_TRUE(PutString(store(), key, data, {}, 1 << 20).has_value());
  struct Row {
    ByteRange range;
    uint64_t offset, length;
  };
  const Row rows[] = {
      {ByteRange::All(), 0, size},
      {{5, 10}, 5, 10},
      {{(1 << 20) - 3, 7}, (1 << 20) - 3, 7},
      {{size - 10, 100}, size - 10, 10},
      {{size - 1, ByteRange::kToEnd}, size - 1, 1},
      {ByteRange::Suffix(3), size - 3, 3},
      {ByteRange::Suffix(size * 2), 0, size},
      {{5, 0}, 5, 0},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(std::to_string(row.range.offset) + "+" + std::to_string(row.range.length));
    Result<std::unique_ptr<ObjectReader>> r = store().Get(key, row.range);
    ASSERT_TRUE(r.has_value()) << r.error();
    EXPECT_EQ((*r)->offset(), row.offset);
    EXPECT_EQ((*r)->length(), row.length);
    EXPECT_EQ((*r)->meta().size, size);
    Result<std::string> got = ReadAll(**r, 100000);
    ASSERT_TRUE(got.has_value()) << got.error();
    EXPECT_TRUE(*got == data.substr(row.offset, row.length));
  }
  for (ByteRange past : {ByteRange{size, 1}, ByteRange{1ull << 40, 5}}) {
    Result<std::unique_ptr<ObjectReader>> r = store().Get(key, past);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), Code::kOutOfRange);
    EXPECT_EQ(r.error().subject(), Subject::kRange);
  }
  ASSERT_TRUE(PutString(store(), {"bkt", "empty"}, "").has_value());
  for (ByteRange any : {ByteRange::All(), ByteRange{5, 10}, ByteRange::Suffix(4)}) {
    Result<std::string> got = GetString(store(), {"bkt", "empty"}, any);
    ASSERT_TRUE(got.has_value()) << got.error();
    EXPECT_TRUE(got->empty());
  }
}

TEST_P(StoreConformance, ErrorsKeepCodeSubjectAndField) {
  EXPECT_EQ(store().Head({"nobucket", "k"}).error().subject(), Subject::kBucket);
  EXPECT_EQ(store().Put({"nobucket", "k"}, {}).error().subject(), Subject::kBucket);
  EXPECT_EQ(store().Get({"nobucket", "k"}, {}).error().subject(), Subject::kBucket);
  EXPECT_EQ(store().List("nobucket", {}).error().subject(), Subject::kBucket);
  const Result<ObjectMeta> k = store().Head({"bkt", "absent"});
  ASSERT_FALSE(k.has_value());
  EXPECT_EQ(k.error().code(), Code::kNotFound);
  EXPECT_EQ(k.error().subject(), Subject::kKey);
  EXPECT_EQ(store().Get({"bkt", "absent"}, {}).error().subject(), Subject::kKey);
  EXPECT_EQ(store().Delete({"bkt", "absent"}).subject(), Subject::kKey);

  const Result<std::unique_ptr<ObjectWriter>> long_key =
      store().Put({"bkt", std::string(kMaxKeyBytes + 1, 'x')}, {});
  ASSERT_FALSE(long_key.has_value());
  EXPECT_EQ(long_key.error().code(), Code::kInvalidArgument);
  EXPECT_EQ(long_key.error().subject(), Subject::kKey);
  ASSERT_TRUE(PutString(store(), {"bkt", std::string(kMaxKeyBytes, 'x')}, "max").has_value());
  ASSERT_TRUE(PutString(store(), {"bkt", "ключ/🙂 & spaces?"}, "unicode").has_value());
  EXPECT_EQ(*GetString(store(), {"bkt", "ключ/🙂 & spaces?"}), "unicode");

  PutOptions sized;
  sized.expected_size = 10;
  const Result<ObjectMeta> short_body = PutString(store(), {"bkt", "sized"}, "123", sized);
  ASSERT_FALSE(short_body.has_value());
  EXPECT_EQ(short_body.error().code(), Code::kInvalidArgument);
  EXPECT_EQ(short_body.error().subject(), Subject::kEntity);
  EXPECT_EQ(store().Head({"bkt", "sized"}).error().code(), Code::kNotFound);

  PutOptions digest;
  digest.content_md5 = Md5::Of(AsBytes("something else"));
  const Result<ObjectMeta> bad_md5 = PutString(store(), {"bkt", "md5"}, "data", digest);
  ASSERT_FALSE(bad_md5.has_value());
  EXPECT_EQ(bad_md5.error().subject(), Subject::kDigest);
  digest.content_md5 = Md5::Of(AsBytes("data"));
  EXPECT_TRUE(PutString(store(), {"bkt", "md5"}, "data", digest).has_value());
}

TEST_P(StoreConformance, MetadataAndChunkShapeSurvive) {
  PutOptions o;
  o.content_type = "text/plain; charset=utf-8";
  o.user_meta = {{"zeta", "1"}, {"alpha", "two words"}};
  o.headers = {{"cache-control", "max-age=60"}, {"content-encoding", "gzip"}};
  o.chunk = ChunkShape{descriptor::StoredLayout::k2LTD, 4, 2048};
  ASSERT_TRUE(PutString(store(), {"bkt", "m"}, Bytes(1, 8192), o).has_value());
  Result<ObjectMeta> m = store().Head({"bkt", "m"});
  ASSERT_TRUE(m.has_value()) << m.error();
  EXPECT_EQ(m->content_type, o.content_type);
  EXPECT_EQ(m->user_meta, o.user_meta);
  EXPECT_EQ(m->headers, o.headers);
  ASSERT_TRUE(m->chunk.has_value());
  EXPECT_EQ(m->chunk->layout, descriptor::StoredLayout::k2LTD);
  EXPECT_EQ(m->chunk->num_layers, 4u);
  EXPECT_EQ(m->chunk->layer_bytes, 2048u);
}

// ObjectWriter::AddHeader: a header known only after the body (an S3 checksum sent as an
// aws-chunked trailer) joins the stored headers at Commit; on a remote store it crosses the RPC
// as a PutHeader frame among the Data frames. A writer dropped after it stores nothing.
TEST_P(StoreConformance, HeadersAddedBeforeCommitAreStored) {
  PutOptions o;
  o.headers = {{"content-encoding", "gzip"}};
  const std::string body = Bytes(3, (2 << 20) + 5);  // several Data frames
  {
    Result<std::unique_ptr<ObjectWriter>> w = store().Put({"bkt", "late"}, o);
    ASSERT_TRUE(w.has_value()) << w.error();
    ASSERT_TRUE((*w)->Append(AsBytes(body).first(1 << 20)).ok());
    ASSERT_TRUE((*w)->AddHeader("x-amz-checksum-crc32", "AAAAAA==").ok());
    ASSERT_TRUE((*w)->Append(AsBytes(body).subspan(1 << 20)).ok());
    Result<ObjectMeta> committed = (*w)->Commit();
    ASSERT_TRUE(committed.has_value()) << committed.error();
    EXPECT_EQ(committed->headers.back().first, "x-amz-checksum-crc32");
  }
  Result<ObjectMeta> m = store().Head({"bkt", "late"});
  ASSERT_TRUE(m.has_value()) << m.error();
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"content-encoding", "gzip"}, {"x-amz-checksum-crc32", "AAAAAA=="}};
  EXPECT_EQ(m->headers, expected);
  {
    Result<std::unique_ptr<ObjectWriter>> w = store().Put({"bkt", "dropped"}, o);
    ASSERT_TRUE(w.has_value());
    ASSERT_TRUE((*w)->AddHeader("x-amz-checksum-crc32", "AAAAAA==").ok());
  }
  EXPECT_EQ(store().Head({"bkt", "dropped"}).error().code(), Code::kNotFound);
  // The connection the dropped writer used is still good for the next call.
  ASSERT_TRUE(PutString(store(), {"bkt", "after"}, "x", {}).has_value());
}

TEST_P(StoreConformance, AbandonedWritersAndReadersLeaveTheStoreUsable) {
  {
    Result<std::unique_ptr<ObjectWriter>> w = store().Put({"bkt", "abandoned"}, {});
    ASSERT_TRUE(w.has_value());
    ASSERT_TRUE((*w)->Append(AsBytes(Bytes(1, 3 << 20))).ok());
  }  // destroyed without Commit
  EXPECT_EQ(store().Head({"bkt", "abandoned"}).error().code(), Code::kNotFound);

  const std::string data = Bytes(2, 3 << 20);
  ASSERT_TRUE(PutString(store(), {"bkt", "big"}, data, {}, 1 << 20).has_value());
  for (int i = 0; i < 3; ++i) {
    Result<std::unique_ptr<ObjectReader>> r = store().Get({"bkt", "big"}, ByteRange::All());
    ASSERT_TRUE(r.has_value());
    std::string some(1000, '\0');
    size_t got = 0;
    while (got < some.size()) {
      Result<uint64_t> n = (*r)->Read(
          MutableByteSpan(reinterpret_cast<std::byte*>(some.data()) + got, some.size() - got));
      ASSERT_TRUE(n.has_value()) << n.error();
      ASSERT_GT(*n, 0u);
      got += *n;
    }
    EXPECT_EQ(some, data.substr(0, 1000));
  }  // each dropped after 1000 bytes
  for (int i = 0; i < 10; ++i) {
    Result<ObjectMeta> h = store().Head({"bkt", "big"});
    ASSERT_TRUE(h.has_value()) << h.error();
  }
  Result<std::unique_ptr<ObjectWriter>> spent = store().Put({"bkt", "spent"}, {});
  ASSERT_TRUE(spent.has_value());
  ASSERT_TRUE((*spent)->Commit().has_value());
  EXPECT_FALSE((*spent)->Append(AsBytes("more")).ok());
  EXPECT_FALSE((*spent)->Commit().has_value());
  EXPECT_EQ(*GetString(store(), {"bkt", "big"}), data);
}

TEST_P(StoreConformance, CopyKeepsOrReplacesMetadataWithinAndAcrossBuckets) {
  PutOptions o;
  o.content_type = "image/png";
  o.user_meta = {{"k", "v"}};
  const std::string data = Bytes(4, (2 << 20) + 3);
  Result<ObjectMeta> src = PutString(store(), {"bkt", "src"}, data, o, 1 << 20);
  ASSERT_TRUE(src.has_value());
  // With two servers some of these buckets live on the other one: those copies stream
  // through the client.
  for (const std::string bucket : {"bkt", "other-1", "other-2", "other-3", "other-4"}) {
    SCOPED_TRACE(bucket);
    if (bucket != "bkt") {
      ASSERT_TRUE(store().CreateBucket(bucket, "me").ok());
    }
    Result<ObjectMeta> copy = store().Copy({"bkt", "src"}, {bucket, "dst"}, std::nullopt, {});
    ASSERT_TRUE(copy.has_value()) << copy.error();
    EXPECT_EQ(copy->etag, src->etag);
    EXPECT_EQ(copy->content_type, "image/png");
    EXPECT_EQ(copy->user_meta, o.user_meta);
    EXPECT_TRUE(*GetString(store(), {bucket, "dst"}) == data);

    PutOptions r;
    r.content_type = "text/plain";
    Result<ObjectMeta> replaced = store().Copy({"bkt", "src"}, {bucket, "dst2"}, r, {});
    ASSERT_TRUE(replaced.has_value()) << replaced.error();
    EXPECT_EQ(replaced->content_type, "text/plain");
    EXPECT_TRUE(replaced->user_meta.empty());
    EXPECT_EQ(store().Copy({"bkt", "absent"}, {bucket, "x"}, std::nullopt, {}).error().subject(),
              Subject::kKey);
  }
  EXPECT_EQ(store().Copy({"bkt", "src"}, {"nobucket", "x"}, std::nullopt, {}).error().subject(),
            Subject::kBucket);
}

// S3 object tagging (Store::PutObjectTags, PutOptions::tags), on both backends and over the
// RPC: tags given at PUT and at CreateMultipartUpload are stored with the object; replacing or
// removing them changes nothing else (ETag, mtime, metadata, bytes); a copy keeps the source's
// tags unless new ones are given, with the metadata copied or replaced.
TEST_P(StoreConformance, TagsAreStoredReplacedAndCopiedAsS3Does) {
  const Tags tags = {{"project", "kv"}, {"tier", "hot cache"}};
  PutOptions o;
  o.content_type = "text/plain";
  o.user_meta = {{"m", "1"}};
  o.tags = tags;
  const std::string data = Bytes(7, 5000);
  Result<ObjectMeta> put = PutString(store(), {"bkt", "t"}, data, o);
  ASSERT_TRUE(put.has_value()) << put.error();
  EXPECT_EQ(put->tags, tags);
  Result<ObjectMeta> head = store().Head({"bkt", "t"});
  ASSERT_TRUE(head.has_value()) << head.error();
  EXPECT_EQ(head->tags, tags);
  Result<std::unique_ptr<ObjectReader>> reader = store().Get({"bkt", "t"}, ByteRange::All());
  ASSERT_TRUE(reader.has_value()) << reader.error();
  EXPECT_EQ((*reader)->meta().tags, tags);
  reader->reset();

  const Tags other = {{"a", ""}};
  Result<ObjectMeta> tagged = store().PutObjectTags({"bkt", "t"}, other);
  ASSERT_TRUE(tagged.has_value()) << tagged.error();
  EXPECT_EQ(tagged->tags, other);
  head = store().Head({"bkt", "t"});
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->tags, other);
  EXPECT_EQ(head->etag, put->etag);
  EXPECT_EQ(head->mtime_unix_ms, put->mtime_unix_ms);
  EXPECT_EQ(head->user_meta, o.user_meta);
  EXPECT_EQ(head->content_type, "text/plain");
  EXPECT_TRUE(*GetString(store(), {"bkt", "t"}) == data);
  ASSERT_TRUE(store().PutObjectTags({"bkt", "t"}, {}).has_value());
  EXPECT_TRUE(store().Head({"bkt", "t"})->tags.empty());
  Result<ObjectMeta> absent = store().PutObjectTags({"bkt", "absent"}, other);
  ASSERT_FALSE(absent.has_value());
  EXPECT_EQ(absent.error().code(), Code::kNotFound);
  EXPECT_EQ(absent.error().subject(), Subject::kKey);
  EXPECT_EQ(store().PutObjectTags({"nobucket", "t"}, other).error().subject(), Subject::kBucket);

  // Copies: tags COPY with metadata COPY or REPLACE, tags REPLACE, and onto the same key.
  ASSERT_TRUE(store().PutObjectTags({"bkt", "t"}, tags).has_value());
  Result<ObjectMeta> copy = store().Copy({"bkt", "t"}, {"bkt", "c1"}, std::nullopt, {});
  ASSERT_TRUE(copy.has_value()) << copy.error();
  EXPECT_EQ(copy->tags, tags);
  PutOptions replace;
  replace.content_type = "image/png";
  copy = store().Copy({"bkt", "t"}, {"bkt", "c2"}, replace, {});
  ASSERT_TRUE(copy.has_value()) << copy.error();
  EXPECT_EQ(copy->tags, tags);
  EXPECT_EQ(copy->content_type, "image/png");
  replace.tags = other;
  copy = store().Copy({"bkt", "t"}, {"bkt", "c3"}, replace, {});
  ASSERT_TRUE(copy.has_value()) << copy.error();
  EXPECT_EQ(store().Head({"bkt", "c3"})->tags, other);
  copy = store().Copy({"bkt", "t"}, {"bkt", "t"}, replace, {});
  ASSERT_TRUE(copy.has_value()) << copy.error();
  EXPECT_EQ(store().Head({"bkt", "t"})->tags, other);
  EXPECT_EQ(store().Head({"bkt", "t"})->content_type, "image/png");

  // A multipart upload's tags go to the completed object.
  const ObjectKey key{"bkt", "mp"};
  PutOptions mp;
  mp.tags = tags;
  Result<std::string> id = store().CreateMultipartUpload(key, mp);
  ASSERT_TRUE(id.has_value()) << id.error();
  Result<std::unique_ptr<ObjectWriter>> w = store().UploadPart(key, *id, 1, {});
  ASSERT_TRUE(w.has_value()) << w.error();
  ASSERT_TRUE((*w)->Append(AsBytes(std::string_view(data))).ok());
  Result<ObjectMeta> part = (*w)->Commit();
  ASSERT_TRUE(part.has_value()) << part.error();
  const std::vector<CompletedPart> parts = {{1, part->etag}};
  Result<ObjectMeta> done = store().CompleteMultipartUpload(key, *id, parts, {});
  ASSERT_TRUE(done.has_value()) << done.error();
  EXPECT_EQ(done->tags, tags);
  EXPECT_EQ(store().Head(key)->tags, tags);
}

TEST_P(StoreConformance, ListingPaginatesWithPrefixAndDelimiter) {
  std::set<std::string> expected;
  for (int i = 0; i < 120; ++i) {
    const std::string name = fmt::format("dir{}/obj{:03}", i % 3, i);
    expected.insert(name);
    ASSERT_TRUE(PutString(store(), {"bkt", name}, "x").has_value());
  }
  ASSERT_TRUE(PutString(store(), {"bkt", "top"}, "y").has_value());
  // Pages of 7 keys under a prefix, continued from next_start_after.
  ListOptions page;
  page.prefix = "dir";
  page.max_keys = 7;
  std::set<std::string> seen;
  for (int pages = 0;; ++pages) {
    ASSERT_LT(pages, 100);
    Result<ListResult> r = store().List("bkt", page);
    ASSERT_TRUE(r.has_value()) << r.error();
    for (const ListEntry& e : r->objects) {
      EXPECT_TRUE(seen.insert(e.name).second) << e.name;
      EXPECT_EQ(e.meta.size, 1u);
    }
    if (!r->truncated) {
      break;
    }
    EXPECT_EQ(r->objects.size(), 7u);
    page.start_after = r->next_start_after;
  }
  EXPECT_EQ(seen, expected);
  ListOptions grouped;
  grouped.delimiter = "/";
  Result<ListResult> g = store().List("bkt", grouped);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->common_prefixes, (std::vector<std::string>{"dir0/", "dir1/", "dir2/"}));
  ASSERT_EQ(g->objects.size(), 1u);
  EXPECT_EQ(g->objects[0].name, "top");
}

TEST_P(StoreConformance, HeadManyAnswersEveryNameInOrder) {
  ASSERT_TRUE(PutString(store(), {"bkt", "h1"}, "one").has_value());
  ASSERT_TRUE(PutString(store(), {"bkt", "h3"}, "three!").has_value());
  const std::vector<std::string> names = {"h1", "h2", "h3", ""};
  Result<std::vector<std::optional<ObjectMeta>>> got = store().HeadMany("bkt", names);
  ASSERT_TRUE(got.has_value()) << got.error();
  ASSERT_EQ(got->size(), names.size());
  ASSERT_TRUE((*got)[0].has_value());
  EXPECT_EQ((*got)[0]->size, 3u);
  EXPECT_FALSE((*got)[1].has_value());
  ASSERT_TRUE((*got)[2].has_value());
  EXPECT_EQ((*got)[2]->size, 6u);
  EXPECT_FALSE((*got)[3].has_value());
  EXPECT_EQ(store().HeadMany("nobucket", names).error().subject(), Subject::kBucket);
}

TEST_P(RocksConformance, MultipartUploadEndToEnd) {
  const ObjectKey key{"bkt", "multi"};
  PutOptions o;
  o.content_type = "application/x-multi";
  Result<std::string> id = store().CreateMultipartUpload(key, o);
  ASSERT_TRUE(id.has_value()) << id.error();
  const std::string part1 = Bytes(11, kMinPartBytes);
  const std::string part2 = Bytes(12, 1234);
  std::vector<CompletedPart> parts;
  for (const auto& [number, bytes] : {std::pair{1u, &part1}, std::pair{2u, &part2}}) {
    Result<std::unique_ptr<ObjectWriter>> w = store().UploadPart(key, *id, number, {});
    ASSERT_TRUE(w.has_value()) << w.error();
    for (size_t pos = 0; pos < bytes->size(); pos += 1 << 20) {
      ASSERT_TRUE((*w)->Append(AsBytes(std::string_view(*bytes).substr(pos, 1 << 20))).ok());
    }
    Result<ObjectMeta> pm = (*w)->Commit();
    ASSERT_TRUE(pm.has_value()) << pm.error();
    parts.push_back({number, pm->etag});
  }
  EXPECT_EQ(store().UploadPart(key, *id, 0, {}).error().subject(), Subject::kPart);
  EXPECT_EQ(store().UploadPart(key, "no-such-upload", 1, {}).error().subject(), Subject::kUpload);

  Result<ListPartsResult> listed = store().ListParts(key, *id, 0, 1000);
  ASSERT_TRUE(listed.has_value()) << listed.error();
  ASSERT_EQ(listed->parts.size(), 2u);
  EXPECT_EQ(listed->parts[0].size, kMinPartBytes);
  EXPECT_EQ(listed->parts[1].etag, parts[1].etag);
  Result<ListUploadsResult> uploads = store().ListMultipartUploads("bkt", {});
  ASSERT_TRUE(uploads.has_value()) << uploads.error();
  ASSERT_EQ(uploads->uploads.size(), 1u);
  EXPECT_EQ(uploads->uploads[0].upload_id, *id);

  Result<ObjectMeta> done = store().CompleteMultipartUpload(key, *id, parts, {});
  ASSERT_TRUE(done.has_value()) << done.error();
  EXPECT_EQ(done->size, part1.size() + part2.size());
  EXPECT_TRUE(done->etag.ends_with("-2")) << done->etag;
  EXPECT_EQ(done->parts_count, 2u);
  EXPECT_EQ(done->content_type, "application/x-multi");
  EXPECT_TRUE(*GetString(store(), key, ByteRange::All(), 1 << 20) == part1 + part2);
  // A part by number (the wire carries it) and a retried completion.
  EXPECT_TRUE(*GetString(store(), key, ByteRange::Part(2), 1 << 20) == part2);
  Result<std::unique_ptr<ObjectReader>> past = store().Get(key, ByteRange::Part(3));
  ASSERT_FALSE(past.has_value());
  EXPECT_EQ(past.error().code(), Code::kOutOfRange);
  EXPECT_EQ(past.error().subject(), Subject::kPart);
  EXPECT_EQ(past.error().field(), "partNumber");
  Result<ObjectMeta> again = store().CompleteMultipartUpload(key, *id, parts, {});
  ASSERT_TRUE(again.has_value()) << again.error();
  EXPECT_EQ(again->etag, done->etag);

  Result<std::string> other = store().CreateMultipartUpload({"bkt", "aborted"}, {});
  ASSERT_TRUE(other.has_value());
  EXPECT_TRUE(store().AbortMultipartUpload({"bkt", "aborted"}, *other).ok());
  EXPECT_EQ(store().AbortMultipartUpload({"bkt", "aborted"}, *other).subject(), Subject::kUpload);
  EXPECT_EQ(
      store().CompleteMultipartUpload({"bkt", "aborted"}, *other, parts, {}).error().subject(),
      Subject::kUpload);
}

TEST_P(StoreConformance, StatsAnswer) {
  Result<StoreStats> stats = store().Stats();
  ASSERT_TRUE(stats.has_value()) << stats.error();
  EXPECT_FALSE(stats->figures.empty());
}

}  // namespace
}  // namespace oc::storage::test
