// Multipart uploads: ETag, part checks, ordering, minimum size, abort, part listing, and
// that completion reuses the parts' bytes.

#include <gtest/gtest.h>

#include "records/md5.h"
#include "rocks/rocks_store.h"
#include "store_test_util.h"

namespace oc::storage::test {
namespace {

constexpr uint64_t kPart = kMinPartBytes;

class MultipartTest : public ::testing::TestWithParam<ExtentLayout> {
 protected:
  void SetUp() override {
    StoreOptions o = SmallOptions(dir_.path(), GetParam());
    o.default_extent_bytes = 1 << 20;
    o.write_batch_bytes = 4 << 20;
    Result<std::unique_ptr<Store>> s = OpenLocalStore(o);
    ASSERT_TRUE(s.has_value()) << s.error();
    store_ = std::move(*s);
    ASSERT_TRUE(store_->CreateBucket("bkt", "me").ok());
  }
  Result<ObjectMeta> UploadPart(const std::string& id, uint32_t n, std::string_view data,
                                const std::string& key = "mp") {
    OC_ASSIGN_OR_RETURN(std::unique_ptr<ObjectWriter> w,
                        store_->UploadPart({"bkt", key}, id, n, {}));
    for (size_t pos = 0; pos < data.size(); pos += 1 << 20) {
      OC_RETURN_IF_ERROR(w->Append(AsBytes(data.substr(pos, 1 << 20))));
    }
    return w->Commit();
  }
  uint64_t Extents() { return *dynamic_cast<RocksStore&>(*store_).CountExtents(); }

  testutil::TempDir dir_;
  std::unique_ptr<Store> store_;
};

INSTANTIATE_TEST_SUITE_P(Layouts, MultipartTest,
                         ::testing::Values(ExtentLayout::kSstBlocks, ExtentLayout::kBlobFiles),
                         LayoutName);

TEST_P(MultipartTest, CompletesWithS3EtagAndNoCopy) {
  PutOptions o;
  o.content_type = "video/mp4";
  o.user_meta = {{"owner", "me"}};
  Result<std::string> id = store_->CreateMultipartUpload({"bkt", "mp"}, o);
  ASSERT_TRUE(id.has_value());
  const std::string p1 = Bytes(1, kPart);
  const std::string p2 = Bytes(2, kPart + 12345);
  const std::string p3 = Bytes(3, 777);
  Result<ObjectMeta> m3 = UploadPart(*id, 3, p3);  // out of order upload is fine
  Result<ObjectMeta> m1 = UploadPart(*id, 1, p1);
  Result<ObjectMeta> m2 = UploadPart(*id, 2, p2);
  ASSERT_TRUE(m1.has_value() && m2.has_value() && m3.has_value());
  EXPECT_EQ(m1->etag, HexEncode(Md5::Of(AsBytes(p1))));
  const uint64_t extents_before = Extents();

  // Not visible before completion.
  EXPECT_EQ(store_->Head({"bkt", "mp"}).error().code(), Code::kNotFound);
  const std::vector<CompletedPart> parts = {
      {1, m1->etag}, {2, "\"" + m2->etag + "\""}, {3, m3->etag}};
  Result<ObjectMeta> done = store_->CompleteMultipartUpload({"bkt", "mp"}, *id, parts);
  ASSERT_TRUE(done.has_value()) << done.error();
  std::string md5s;
  for (const auto& m : {*m1, *m2, *m3}) {
    md5s += AsText(*HexDecode(m.etag));
  }
  EXPECT_EQ(done->etag, HexEncode(Md5::Of(AsBytes(md5s))) + "-3");
  EXPECT_EQ(done->size, p1.size() + p2.size() + p3.size());
  EXPECT_EQ(done->parts_count, 3u);
  EXPECT_EQ(done->content_type, "video/mp4");
  EXPECT_EQ(done->user_meta, o.user_meta);
  EXPECT_EQ(Extents(), extents_before) << "completion copied or dropped part bytes";

  const std::string all = p1 + p2 + p3;
  Result<std::string> got = GetString(*store_, {"bkt", "mp"}, ByteRange::All(), 300000);
  ASSERT_TRUE(got.has_value()) << got.error();
  EXPECT_TRUE(*got == all);
  // A range across the part boundary.
  Result<std::string> across = GetString(*store_, {"bkt", "mp"}, {kPart - 10, 30});
  ASSERT_TRUE(across.has_value());
  EXPECT_TRUE(*across == all.substr(kPart - 10, 30));
  // The upload is gone.
  EXPECT_EQ(store_->ListParts({"bkt", "mp"}, *id, 0, 100).error().subject(), Subject::kUpload);
  EXPECT_EQ(store_->AbortMultipartUpload({"bkt", "mp"}, *id).subject(), Subject::kUpload);
  // Deleting the object frees the parts' extents.
  ASSERT_TRUE(store_->Delete({"bkt", "mp"}).ok());
  EXPECT_EQ(Extents(), 0u);
}

TEST_P(MultipartTest, CompletionChecksPartsEtagsOrderAndSize) {
  Result<std::string> id = store_->CreateMultipartUpload({"bkt", "mp"}, {});
  ASSERT_TRUE(id.has_value());
  Result<ObjectMeta> m1 = UploadPart(*id, 1, Bytes(1, kPart));
  Result<ObjectMeta> m2 = UploadPart(*id, 2, Bytes(2, 1000));
  Result<ObjectMeta> m3 = UploadPart(*id, 3, Bytes(3, 1000));
  ASSERT_TRUE(m1.has_value() && m2.has_value() && m3.has_value());
  struct Row {
    std::string what;
    std::vector<CompletedPart> parts;
    Code code;
    Subject subject;
  };
  const Row rows[] = {
      {"missing part", {{1, m1->etag}, {4, m2->etag}}, Code::kInvalidArgument, Subject::kPart},
      {"wrong etag", {{1, m2->etag}, {2, m2->etag}}, Code::kInvalidArgument, Subject::kPart},
      {"descending", {{2, m2->etag}, {1, m1->etag}}, Code::kFailedPrecondition, Subject::kPart},
      {"repeated", {{1, m1->etag}, {1, m1->etag}}, Code::kFailedPrecondition, Subject::kPart},
      {"small middle part",
       {{1, m1->etag}, {2, m2->etag}, {3, m3->etag}},
       Code::kOutOfRange,
       Subject::kPart},
      {"empty list", {}, Code::kInvalidArgument, Subject::kPart},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    Result<ObjectMeta> r = store_->CompleteMultipartUpload({"bkt", "mp"}, *id, row.parts);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), row.code) << r.error();
    EXPECT_EQ(r.error().subject(), row.subject);
  }
  EXPECT_EQ(store_
                ->CompleteMultipartUpload({"bkt", "mp"}, "0123456789abcdef0123456789abcdef",
                                          std::vector<CompletedPart>{{1, m1->etag}})
                .error()
                .subject(),
            Subject::kUpload);
  EXPECT_EQ(store_
                ->CompleteMultipartUpload({"bkt", "other"}, *id,
                                          std::vector<CompletedPart>{{1, m1->etag}})
                .error()
                .subject(),
            Subject::kUpload);
  // A subset of the parts (the last may be small); the unused part's bytes are freed.
  const std::vector<CompletedPart> ok = {{1, m1->etag}, {3, m3->etag}};
  Result<ObjectMeta> done = store_->CompleteMultipartUpload({"bkt", "mp"}, *id, ok);
  ASSERT_TRUE(done.has_value()) << done.error();
  EXPECT_EQ(done->size, kPart + 1000);
  Result<std::string> got = GetString(*store_, {"bkt", "mp"}, ByteRange::All(), 1 << 20);
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(*got == Bytes(1, kPart) + Bytes(3, 1000));
  EXPECT_EQ(Extents(), 5u + 1u);
}

TEST_P(MultipartTest, PartNumbersAndUploadIdsAreChecked) {
  Result<std::string> id = store_->CreateMultipartUpload({"bkt", "mp"}, {});
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(id->size(), 32u);
  for (uint32_t bad : {0u, kMaxPartNumber + 1}) {
    Result<std::unique_ptr<ObjectWriter>> w = store_->UploadPart({"bkt", "mp"}, *id, bad, {});
    ASSERT_FALSE(w.has_value());
    EXPECT_EQ(w.error().subject(), Subject::kPart);
    EXPECT_EQ(w.error().field(), "partNumber");
  }
  EXPECT_TRUE(store_->UploadPart({"bkt", "mp"}, *id, kMaxPartNumber, {}).has_value());
  for (const std::string& bad_id : {std::string("nope"), std::string(32, 'f'), std::string()}) {
    EXPECT_EQ(store_->UploadPart({"bkt", "mp"}, bad_id, 1, {}).error().subject(), Subject::kUpload);
  }
  EXPECT_EQ(store_->UploadPart({"bkt", "other"}, *id, 1, {}).error().subject(), Subject::kUpload);
  EXPECT_EQ(store_->CreateMultipartUpload({"nobucket", "mp"}, {}).error().subject(),
            Subject::kBucket);
}

TEST_P(MultipartTest, PartOverwriteAbortAndListParts) {
  Result<std::string> id = store_->CreateMultipartUpload({"bkt", "mp"}, {});
  ASSERT_TRUE(id.has_value());
  for (uint32_t n = 1; n <= 25; ++n) {
    ASSERT_TRUE(UploadPart(*id, n, Bytes(n, 100 + n)).has_value());
  }
  Result<ObjectMeta> again = UploadPart(*id, 7, Bytes(700, 5000));  // replaces part 7
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(Extents(), 25u);

  std::vector<PartInfo> all;
  uint32_t marker = 0;
  for (int guard = 0; guard < 30; ++guard) {
    Result<ListPartsResult> r = store_->ListParts({"bkt", "mp"}, *id, marker, 10);
    ASSERT_TRUE(r.has_value());
    all.insert(all.end(), r->parts.begin(), r->parts.end());
    if (!r->truncated) {
      break;
    }
    EXPECT_EQ(r->parts.size(), 10u);
    marker = r->next_part_number_marker;
  }
  ASSERT_EQ(all.size(), 25u);
  for (uint32_t n = 1; n <= 25; ++n) {
    EXPECT_EQ(all[n - 1].part_number, n);
  }
  EXPECT_EQ(all[6].size, 5000u);
  EXPECT_EQ(all[6].etag, again->etag);
  Result<ListPartsResult> tail = store_->ListParts({"bkt", "mp"}, *id, 20, 100);
  ASSERT_TRUE(tail.has_value());
  EXPECT_EQ(tail->parts.size(), 5u);
  EXPECT_FALSE(tail->truncated);

  // A bucket with an upload in progress cannot be deleted.
  EXPECT_EQ(store_->DeleteBucket("bkt").code(), Code::kFailedPrecondition);
  ASSERT_TRUE(store_->AbortMultipartUpload({"bkt", "mp"}, *id).ok());
  EXPECT_EQ(Extents(), 0u);
  EXPECT_EQ(store_->ListParts({"bkt", "mp"}, *id, 0, 10).error().subject(), Subject::kUpload);
  EXPECT_EQ(UploadPart(*id, 1, "late").error().subject(), Subject::kUpload);
  EXPECT_TRUE(store_->DeleteBucket("bkt").ok());
}

TEST_P(MultipartTest, CompletionReplacesAnExistingObject) {
  ASSERT_TRUE(PutString(*store_, {"bkt", "mp"}, Bytes(9, 3 << 20)).has_value());
  Result<std::unique_ptr<ObjectReader>> old = store_->Get({"bkt", "mp"}, ByteRange::All());
  ASSERT_TRUE(old.has_value());
  Result<std::string> id = store_->CreateMultipartUpload({"bkt", "mp"}, {});
  ASSERT_TRUE(id.has_value());
  Result<ObjectMeta> m1 = UploadPart(*id, 1, "only part");
  ASSERT_TRUE(m1.has_value());
  ASSERT_TRUE(
      store_->CompleteMultipartUpload({"bkt", "mp"}, *id, std::vector<CompletedPart>{{1, m1->etag}})
          .has_value());
  EXPECT_EQ(*GetString(*store_, {"bkt", "mp"}), "only part");
  Result<std::string> old_bytes = ReadAll(**old, 1 << 20);
  ASSERT_TRUE(old_bytes.has_value());
  EXPECT_TRUE(*old_bytes == Bytes(9, 3 << 20));
  old->reset();
  EXPECT_EQ(Extents(), 1u);
}

}  // namespace
}  // namespace oc::storage::test
