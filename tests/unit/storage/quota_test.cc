// Bucket quotas (docs/decisions/bucket-quotas.md) over a real store from OpenStore: RocksDB
// (data files) and RADOS (the test cluster). Each case checks the refusal (403's Status:
// kResourceExhausted, field "quota", a message naming the bucket and the limit), that a refused
// write stored nothing, and that the usage the store shows in Stats equals what a listing of
// the bucket adds up to. The [quota] table's parsing is tested at the end.

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "oc/common/config.h"
#include "oc/storage/config_tables.h"
#include "oc/storage/options.h"
#include "oc/storage/quota.h"
#include "store_test_util.h"

namespace oc::storage::test {
namespace {

constexpr std::string_view kQuota = "quota-b";   // max 10000 bytes, 3 objects
constexpr std::string_view kParts = "quota-mp";  // max 12 MiB, 1 object
constexpr std::string_view kFree = "free-b";     // no quota
constexpr uint64_t kMaxBytes = 10000;
constexpr uint64_t kMpMaxBytes = 12ull << 20;

struct Seen {
  uint64_t bytes = 0;
  uint64_t objects = 0;
  uint64_t upload_bytes = 0;
  bool operator==(const Seen&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Seen& s) {
  return os << "{bytes " << s.bytes << ", objects " << s.objects << ", upload_bytes "
            << s.upload_bytes << "}";
}

class QuotaTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    Open();
    for (std::string_view b : {kQuota, kParts, kFree}) {
      ASSERT_TRUE(store_->CreateBucket(b, "me").ok());
    }
  }
  void Open() {
    store_.reset();
    StoreOptions o = SmallOptions(dir_.path(), ExtentLayout::kDataFiles);
    o.default_extent_bytes = 1 << 20;
    o.write_batch_bytes = 4 << 20;
    o.quota.buckets.emplace(std::string(kQuota), BucketQuota{kMaxBytes, 3});
    o.quota.buckets.emplace(std::string(kParts), BucketQuota{kMpMaxBytes, 1});
    o.quota.recount_interval = std::chrono::milliseconds(0);
    Result<std::unique_ptr<Store>> s = OpenTestStore(GetParam(), o, ns_);
    ASSERT_TRUE(s.has_value()) << s.error();
    store_ = std::move(*s);
  }

  // What the store's Stats say of `bucket`.
  Seen Shown(std::string_view bucket) {
    Result<StoreStats> stats = store_->Stats();
    EXPECT_TRUE(stats.has_value());
    std::map<std::string, uint64_t> f(stats->figures.begin(), stats->figures.end());
    const std::string p = "quota." + std::string(bucket) + ".";
    return Seen{f[p + "used_bytes"], f[p + "used_objects"], f[p + "upload_bytes"]};
  }
  // What a listing of `bucket` (objects, and the parts of its uploads) adds up to.
  Seen Listed(std::string_view bucket) {
    Seen seen;
    ListOptions lo;
    for (;;) {
      Result<ListResult> page = store_->List(bucket, lo);
      EXPECT_TRUE(page.has_value());
      for (const ListEntry& e : page->objects) {
        seen.bytes += e.meta.size;
        ++seen.objects;
      }
      if (!page->truncated) {
        break;
      }
      lo.start_after = page->next_start_after;
    }
    Result<ListUploadsResult> uploads = store_->ListMultipartUploads(bucket, {});
    EXPECT_TRUE(uploads.has_value());
    for (const UploadInfo& u : uploads->uploads) {
      Result<ListPartsResult> parts =
          store_->ListParts({std::string(bucket), u.key}, u.upload_id, 0, 1000);
      EXPECT_TRUE(parts.has_value());
      for (const PartInfo& p : parts->parts) {
        seen.upload_bytes += p.size;
      }
    }
    return seen;
  }
  void ExpectShownIsListed(std::string_view bucket) {
    SCOPED_TRACE(bucket);
    EXPECT_EQ(Shown(bucket), Listed(bucket));
  }
  Result<ObjectMeta> Put(std::string_view bucket, std::string_view key, uint64_t size,
                         bool size_known = true) {
    PutOptions o;
    if (size_known) {
      o.expected_size = size;
    }
    return PutString(*store_, {std::string(bucket), std::string(key)}, Bytes(size, size), o);
  }
  Result<ObjectMeta> Part(std::string_view key, const std::string& id, uint32_t n, uint64_t size) {
    PutOptions o;
    o.expected_size = size;
    OC_ASSIGN_OR_RETURN(std::unique_ptr<ObjectWriter> w,
                        store_->UploadPart({std::string(kParts), std::string(key)}, id, n, o));
    const std::string data = Bytes(n, size);
    for (size_t pos = 0; pos < data.size(); pos += 1 << 20) {
      OC_RETURN_IF_ERROR(w->Append(AsBytes(std::string_view(data).substr(pos, 1 << 20))));
    }
    return w->Commit();
  }
  bool Exists(std::string_view bucket, std::string_view key) {
    return store_->Head({std::string(bucket), std::string(key)}).has_value();
  }

  testutil::TempDir dir_;
  const std::string ns_ = RandomRadosNamespace();
  std::unique_ptr<Store> store_;
};

void ExpectQuotaExceeded(const Status& s, std::string_view limit) {
  EXPECT_TRUE(IsQuotaExceeded(s)) << s;
  EXPECT_EQ(s.subject(), Subject::kBucket);
  EXPECT_NE(s.message().find("Bucket "), std::string_view::npos) << s;
  EXPECT_NE(s.message().find(limit), std::string_view::npos) << s;
}

TEST_P(QuotaTest, BytesLimitRefusesBeforeTheBodyAndStoresNothing) {
  ASSERT_TRUE(Put(kQuota, "a", 6000).has_value());
  // Content-Length known: refused when the writer is asked for, before any byte.
  Result<std::unique_ptr<ObjectWriter>> w =
      store_->Put({std::string(kQuota), "b"}, PutOptions{.expected_size = 5000});
  ASSERT_FALSE(w.has_value());
  ExpectQuotaExceeded(w.error(), "max_bytes");
  EXPECT_NE(w.error().message().find(kQuota), std::string_view::npos);
  // A streamed body of unknown size: refused once it cannot fit, and nothing is visible.
  Result<ObjectMeta> streamed = Put(kQuota, "b", 5000, /*size_known=*/false);
  ASSERT_FALSE(streamed.has_value());
  ExpectQuotaExceeded(streamed.error(), "max_bytes");
  EXPECT_FALSE(Exists(kQuota, "b"));
  EXPECT_EQ(Shown(kQuota), (Seen{6000, 1, 0}));
  ExpectShownIsListed(kQuota);
  // Exactly up to the limit fits.
  ASSERT_TRUE(Put(kQuota, "b", kMaxBytes - 6000).has_value());
  EXPECT_EQ(Shown(kQuota), (Seen{kMaxBytes, 2, 0}));
  ExpectShownIsListed(kQuota);
}

TEST_P(QuotaTest, ObjectsLimitCountsNewKeysOnly) {
  for (std::string_view k : {"1", "2", "3"}) {
    ASSERT_TRUE(Put(kQuota, k, 10).has_value());
  }
  Result<ObjectMeta> fourth = Put(kQuota, "4", 10);
  ASSERT_FALSE(fourth.has_value());
  ExpectQuotaExceeded(fourth.error(), "max_objects");
  EXPECT_FALSE(Exists(kQuota, "4"));
  // Overwriting a key adds no object.
  ASSERT_TRUE(Put(kQuota, "2", 100).has_value());
  EXPECT_EQ(Shown(kQuota), (Seen{120, 3, 0}));
  ExpectShownIsListed(kQuota);
}

TEST_P(QuotaTest, OverwriteIsCountedAsTheDifference) {
  ASSERT_TRUE(Put(kQuota, "k", 6000).has_value());
  // 9000 replaces 6000: the bucket goes to 9000, under the limit, though 6000 + 9000 is not.
  ASSERT_TRUE(Put(kQuota, "k", 9000).has_value());
  EXPECT_EQ(Shown(kQuota), (Seen{9000, 1, 0}));
  ASSERT_TRUE(Put(kQuota, "k", 2000, /*size_known=*/false).has_value());
  EXPECT_EQ(Shown(kQuota), (Seen{2000, 1, 0}));
  ExpectShownIsListed(kQuota);
  // 11000 replacing 2000 does not fit; the old object stays.
  Result<ObjectMeta> big = Put(kQuota, "k", 11000);
  ASSERT_FALSE(big.has_value());
  Result<ObjectMeta> head = store_->Head({std::string(kQuota), "k"});
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->size, 2000u);
}

TEST_P(QuotaTest, DeleteFreesQuota) {
  ASSERT_TRUE(Put(kQuota, "a", 8000).has_value());
  ASSERT_TRUE(Put(kQuota, "b", 2000).has_value());
  ASSERT_FALSE(Put(kQuota, "c", 1).has_value());
  ASSERT_TRUE(store_->Delete({std::string(kQuota), "a"}).ok());
  EXPECT_EQ(Shown(kQuota), (Seen{2000, 1, 0}));
  ASSERT_TRUE(Put(kQuota, "c", 8000).has_value());
  // The lifecycle worker's conditional delete gives room back too.
  Result<ObjectMeta> c = store_->Head({std::string(kQuota), "c"});
  ASSERT_TRUE(c.has_value());
  ASSERT_TRUE(store_->DeleteIf({std::string(kQuota), "c"}, {c->etag, c->mtime_unix_ms}).ok());
  EXPECT_EQ(Shown(kQuota), (Seen{2000, 1, 0}));
  ExpectShownIsListed(kQuota);
}

TEST_P(QuotaTest, CopyIntoAQuotaBucketIsChecked) {
  ASSERT_TRUE(Put(kFree, "big", 6000).has_value());
  ASSERT_TRUE(Put(kFree, "small", 3000).has_value());
  ASSERT_TRUE(Put(kQuota, "a", 6000).has_value());
  Result<ObjectMeta> refused =
      store_->Copy({std::string(kFree), "big"}, {std::string(kQuota), "copy"}, std::nullopt, {});
  ASSERT_FALSE(refused.has_value());
  ExpectQuotaExceeded(refused.error(), "max_bytes");
  EXPECT_FALSE(Exists(kQuota, "copy"));
  ASSERT_TRUE(
      store_->Copy({std::string(kFree), "small"}, {std::string(kQuota), "copy"}, std::nullopt, {})
          .has_value());
  // A copy over an existing key counts the difference: 6000 over "a"'s 6000 adds nothing.
  ASSERT_TRUE(
      store_->Copy({std::string(kFree), "big"}, {std::string(kQuota), "a"}, std::nullopt, {})
          .has_value());
  EXPECT_EQ(Shown(kQuota), (Seen{9000, 2, 0}));
  ExpectShownIsListed(kQuota);
  // The bucket without a quota takes anything.
  ASSERT_TRUE(Put(kFree, "huge", 50000).has_value());
}

TEST_P(QuotaTest, MultipartPartsCountAndCompletionChecksObjects) {
  const uint64_t mib = 1 << 20;
  Result<std::string> id = store_->CreateMultipartUpload({std::string(kParts), "mp"}, {});
  ASSERT_TRUE(id.has_value());
  ASSERT_TRUE(Part("mp", *id, 1, 6 * mib).has_value());
  ASSERT_TRUE(Part("mp", *id, 2, 6 * mib).has_value());
  EXPECT_EQ(Shown(kParts), (Seen{0, 0, 12 * mib}));
  // A part past the limit is refused before its body; a part written again counts the
  // difference.
  Result<ObjectMeta> third = Part("mp", *id, 3, 1);
  ASSERT_FALSE(third.has_value());
  EXPECT_TRUE(IsQuotaExceeded(third.error())) << third.error();
  ASSERT_TRUE(Part("mp", *id, 2, 5 * mib).has_value());
  ASSERT_TRUE(Part("mp", *id, 3, 1000).has_value());  // listed nowhere: freed at completion
  ExpectShownIsListed(kParts);
  Result<ListPartsResult> parts = store_->ListParts({std::string(kParts), "mp"}, *id, 0, 10);
  ASSERT_TRUE(parts.has_value());
  std::vector<CompletedPart> listed = {{1, parts->parts[0].etag}, {2, parts->parts[1].etag}};
  Result<ObjectMeta> done =
      store_->CompleteMultipartUpload({std::string(kParts), "mp"}, *id, listed, {});
  ASSERT_TRUE(done.has_value()) << done.error();
  EXPECT_EQ(Shown(kParts), (Seen{11 * mib, 1, 0}));
  ExpectShownIsListed(kParts);
  // A second object does not fit max_objects = 1: refused at completion, the upload stays, and
  // aborting it frees its part.
  Result<std::string> id2 = store_->CreateMultipartUpload({std::string(kParts), "mp2"}, {});
  ASSERT_TRUE(id2.has_value());
  ASSERT_TRUE(Part("mp2", *id2, 1, 1000).has_value());
  Result<ListPartsResult> parts2 = store_->ListParts({std::string(kParts), "mp2"}, *id2, 0, 10);
  ASSERT_TRUE(parts2.has_value());
  std::vector<CompletedPart> listed2 = {{1, parts2->parts[0].etag}};
  Result<ObjectMeta> refused =
      store_->CompleteMultipartUpload({std::string(kParts), "mp2"}, *id2, listed2, {});
  ASSERT_FALSE(refused.has_value());
  EXPECT_TRUE(IsQuotaExceeded(refused.error())) << refused.error();
  EXPECT_NE(refused.error().message().find("max_objects"), std::string_view::npos);
  EXPECT_FALSE(Exists(kParts, "mp2"));
  EXPECT_EQ(Shown(kParts), (Seen{11 * mib, 1, 1000}));
  ASSERT_TRUE(store_->AbortMultipartUpload({std::string(kParts), "mp2"}, *id2).ok());
  EXPECT_EQ(Shown(kParts), (Seen{11 * mib, 1, 0}));
  ExpectShownIsListed(kParts);
}

TEST_P(QuotaTest, GroupIsRefusedWholeAndCounted) {
  ASSERT_TRUE(Put(kQuota, "x", 10).has_value());
  Result<std::unique_ptr<ObjectGroupWriter>> g = store_->PutGroup(kQuota);
  ASSERT_TRUE(g.has_value());
  for (std::string_view name : {"g1", "g2", "g3"}) {  // 1 + 3 objects > 3
    ASSERT_TRUE((*g)->Begin(name, {}).ok());
    ASSERT_TRUE((*g)->Append(AsBytes(std::string_view("abc"))).ok());
  }
  Result<std::vector<GroupCommitted>> refused = (*g)->Commit();
  ASSERT_FALSE(refused.has_value());
  EXPECT_TRUE(IsQuotaExceeded(refused.error())) << refused.error();
  EXPECT_FALSE(Exists(kQuota, "g1"));
  Result<std::unique_ptr<ObjectGroupWriter>> g2 = store_->PutGroup(kQuota);
  ASSERT_TRUE(g2.has_value());
  for (std::string_view name : {"x", "g1"}) {  // "x" is overwritten: one new object
    ASSERT_TRUE((*g2)->Begin(name, {}).ok());
    ASSERT_TRUE((*g2)->Append(AsBytes(std::string_view("abcd"))).ok());
  }
  ASSERT_TRUE((*g2)->Commit().has_value());
  EXPECT_EQ(Shown(kQuota), (Seen{8, 2, 0}));
  ExpectShownIsListed(kQuota);
}

TEST_P(QuotaTest, UsageIsCountedAgainAtOpen) {
  ASSERT_TRUE(Put(kQuota, "a", 4000).has_value());
  ASSERT_TRUE(Put(kQuota, "b", 5000).has_value());
  Result<std::string> id = store_->CreateMultipartUpload({std::string(kParts), "mp"}, {});
  ASSERT_TRUE(id.has_value());
  ASSERT_TRUE(Part("mp", *id, 1, 3000).has_value());
  Open();
  EXPECT_EQ(Shown(kQuota), (Seen{9000, 2, 0}));
  EXPECT_EQ(Shown(kParts), (Seen{0, 0, 3000}));
  ExpectShownIsListed(kQuota);
  ExpectShownIsListed(kParts);
  // ... and enforced from that count.
  ASSERT_FALSE(Put(kQuota, "c", 1001).has_value());
  ASSERT_TRUE(Put(kQuota, "c", 1000).has_value());
  // Deleting the bucket's objects and the bucket leaves nothing counted.
  for (std::string_view k : {"a", "b", "c"}) {
    ASSERT_TRUE(store_->Delete({std::string(kQuota), std::string(k)}).ok());
  }
  ASSERT_TRUE(store_->DeleteBucket(kQuota).ok());
  EXPECT_EQ(Shown(kQuota), (Seen{}));
}

INSTANTIATE_TEST_SUITE_P(Backends, QuotaTest,
                         ::testing::Values(Backend::kRocksData, Backend::kRados), BackendName);

// --- The [quota] table ---

Result<QuotaOptions> Parse(std::string_view text) {
  OC_ASSIGN_OR_RETURN(Config c, Config::Parse(text));
  QuotaOptions o;
  OC_RETURN_IF_ERROR(ApplyConfig(c, &o));
  OC_RETURN_IF_ERROR(c.CheckNoUnknownKeys());
  OC_RETURN_IF_ERROR(o.Validate());
  return o;
}

TEST(QuotaConfig, ReadsInlineTablesWithQuotedNames) {
  Result<QuotaOptions> o = Parse(
      "[quota]\nbuckets = { photos = { max_bytes = \"10GiB\", max_objects = 5 }, "
      "\"my.logs\" = { max_objects = 7 } }\nrecount_interval = \"30s\"\n");
  ASSERT_TRUE(o.has_value()) << o.error();
  ASSERT_EQ(o->buckets.size(), 2u);
  EXPECT_EQ(o->buckets.at("photos"), (BucketQuota{10ull << 30, 5}));
  EXPECT_EQ(o->buckets.at("my.logs"), (BucketQuota{BucketQuota::kNoLimit, 7}));
  EXPECT_EQ(o->recount_interval, std::chrono::seconds(30));
  // The table prints back as it reads.
  Result<QuotaOptions> again =
      Parse("[quota]\nbuckets = " + QuotaConfigTable().rows()[0].toml(*o) + "\n");
  ASSERT_TRUE(again.has_value()) << again.error();
  EXPECT_EQ(again->buckets, o->buckets);
}

TEST(QuotaConfig, ErrorsNameTheKey) {
  struct Row {
    std::string_view text;
    std::string_view field;
  };
  for (const Row& row : {
           Row{"[quota]\nbuckets = { photos = { max_bytes = \"ten\" } }",
               "quota.buckets.photos.max_bytes"},
           Row{"[quota]\nbuckets = { photos = { max_objects = -1 } }",
               "quota.buckets.photos.max_objects"},
           Row{"[quota]\nbuckets = { photos = {} }", "quota.buckets.photos"},
           Row{"[quota]\nbuckets = { photos = 5 }", "quota.buckets.photos"},
           Row{"[quota]\nbuckets = { Bad_Name = { max_objects = 1 } }", "quota.buckets.Bad_Name"},
           Row{"[quota]\nbuckets = { photos = { max_bytes = 0 } }",
               "quota.buckets.photos.max_bytes"},
           Row{"[quota]\nbuckets = { \"a.b.c\" = { max_objects = 1, max_byte = 1 } }",
               "quota.buckets.\"a.b.c\".max_byte"},
           Row{"[quota]\nbuckets = 3", "quota.buckets"},
       }) {
    SCOPED_TRACE(row.text);
    Result<QuotaOptions> o = Parse(row.text);
    ASSERT_FALSE(o.has_value());
    EXPECT_EQ(o.error().code(), Code::kInvalidArgument) << o.error();
    EXPECT_EQ(o.error().field(), row.field) << o.error();
  }
}

// A bucket is a cache ([cache], bounded by eviction) or a quota bucket, never both.
TEST(QuotaConfig, ACacheBucketCannotAlsoHaveAQuota) {
  Result<Config> c = Config::Parse(
      "[cache]\nbuckets = { \"kv.cache\" = \"1GiB\" }\n"
      "[quota]\nbuckets = { \"kv.cache\" = { max_objects = 5 }, photos = { max_objects = 1 } }\n");
  ASSERT_TRUE(c.has_value()) << c.error();
  StoreOptions o;
  o.data_dir = "/unused";
  ASSERT_TRUE(ApplyConfig(*c, &o).ok());
  ASSERT_TRUE(c->CheckNoUnknownKeys().ok()) << c->CheckNoUnknownKeys();
  Status st = o.Validate();
  EXPECT_EQ(st.code(), Code::kInvalidArgument) << st;
  EXPECT_EQ(st.field(), "quota.buckets.\"kv.cache\"") << st;
  o.quota.buckets.erase("kv.cache");
  EXPECT_TRUE(o.Validate().ok()) << o.Validate();
}

}  // namespace
}  // namespace oc::storage::test
