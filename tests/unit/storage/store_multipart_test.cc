// Over 600 lines: one case per multipart rule, each on all four backends, sharing upload helpers.
// Multipart uploads: ETag, part checks, ordering, minimum size, abort, part listing, and
// that completion reuses the parts' bytes. On RocksDB (both extent layouts) and RADOS; on
// RADOS replaced data waits for the GC, so counting data objects runs a GC pass first
// (gc_min_wait = 0), and extents are 1 MiB data objects.

#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include "composed_store.h"
#include "rados/rados_store.h"
#include "records/md5.h"
#include "rocks/rocks_store.h"
#include "store_test_util.h"

namespace oc::storage::test {
namespace {

constexpr uint64_t kPart = kMinPartBytes;

class MultipartTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    StoreOptions o = SmallOptions(dir_.path(), LayoutOf(GetParam()));
    o.default_extent_bytes = 1 << 20;
    o.write_batch_bytes = 4 << 20;
    Result<std::unique_ptr<Store>> s = Open(o);
    ASSERT_TRUE(s.has_value()) << s.error();
    store_ = std::move(*s);
    ASSERT_TRUE(store_->CreateBucket("bkt", "me").ok());
  }
  Result<std::unique_ptr<Store>> Open(StoreOptions o) {
    if (GetParam() != Backend::kRados) {
      return OpenTestStore(GetParam(), std::move(o), "");
    }
    OC_ASSIGN_OR_RETURN(o, RadosTestOptions(std::move(o), RandomRadosNamespace()));
    o.rados.object_extent_bytes = 1 << 20;
    o.rados.gc = false;  // the test collects (RunGcOnce)
    o.rados.gc_min_wait = std::chrono::milliseconds(0);
    return OpenStore(o);
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
  // Extent records (RocksDB) or data objects after a GC pass (RADOS).
  uint64_t Extents() {
    if (GetParam() != Backend::kRados) {
      return *dynamic_cast<RocksStore&>(*BackendOf(*store_)).CountExtents();
    }
    RadosStore& rados = dynamic_cast<RadosStore&>(*BackendOf(*store_));
    Result<uint64_t> gc = rados.RunGcOnce();
    EXPECT_TRUE(gc.has_value()) << gc.error();
    Result<uint64_t> n = rados.CountDataObjects();
    EXPECT_TRUE(n.has_value()) << n.error();
    return n.has_value() ? *n : 0;
  }

  testutil::TempDir dir_;
  std::unique_ptr<Store> store_;
};

INSTANTIATE_TEST_SUITE_P(Backends, MultipartTest,
                         ::testing::Values(Backend::kRocksSst, Backend::kRocksBlob,
                                           Backend::kRocksData, Backend::kRados),
                         BackendName);

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
  Result<ObjectMeta> done = store_->CompleteMultipartUpload({"bkt", "mp"}, *id, parts, {});
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
    Result<ObjectMeta> r = store_->CompleteMultipartUpload({"bkt", "mp"}, *id, row.parts, {});
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), row.code) << r.error();
    EXPECT_EQ(r.error().subject(), row.subject);
  }
  EXPECT_EQ(store_
                ->CompleteMultipartUpload({"bkt", "mp"}, "0123456789abcdef0123456789abcdef",
                                          std::vector<CompletedPart>{{1, m1->etag}}, {})
                .error()
                .subject(),
            Subject::kUpload);
  EXPECT_EQ(store_
                ->CompleteMultipartUpload({"bkt", "other"}, *id,
                                          std::vector<CompletedPart>{{1, m1->etag}}, {})
                .error()
                .subject(),
            Subject::kUpload);
  // A subset of the parts (the last may be small); the unused part's bytes are freed.
  const std::vector<CompletedPart> ok = {{1, m1->etag}, {3, m3->etag}};
  Result<ObjectMeta> done = store_->CompleteMultipartUpload({"bkt", "mp"}, *id, ok, {});
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

  ASSERT_TRUE(store_->AbortMultipartUpload({"bkt", "mp"}, *id).ok());
  EXPECT_EQ(Extents(), 0u);
  EXPECT_EQ(store_->ListParts({"bkt", "mp"}, *id, 0, 10).error().subject(), Subject::kUpload);
  EXPECT_EQ(UploadPart(*id, 1, "late").error().subject(), Subject::kUpload);
  EXPECT_TRUE(store_->DeleteBucket("bkt").ok());
}

// S3 counts only objects: DeleteBucket aborts the unfinished uploads (and frees their parts)
// of a bucket that holds no object; an object still refuses it, uploads and all kept.
TEST_P(MultipartTest, DeleteBucketAbortsUnfinishedUploads) {
  Result<std::string> a = store_->CreateMultipartUpload({"bkt", "a"}, {});
  Result<std::string> b = store_->CreateMultipartUpload({"bkt", "dir/b"}, {});
  Result<std::string> c = store_->CreateMultipartUpload({"bkt", "a"}, {});
  ASSERT_TRUE(a.has_value() && b.has_value() && c.has_value());
  ASSERT_TRUE(UploadPart(*a, 1, Bytes(1, 3 << 20), "a").has_value());
  ASSERT_TRUE(UploadPart(*a, 2, Bytes(2, 1000), "a").has_value());
  ASSERT_TRUE(UploadPart(*b, 7, Bytes(3, 5000), "dir/b").has_value());
  ASSERT_TRUE(PutString(*store_, {"bkt", "obj"}, "x").has_value());
  EXPECT_EQ(store_->DeleteBucket("bkt").code(), Code::kFailedPrecondition);
  Result<ListUploadsResult> kept = store_->ListMultipartUploads("bkt", {});
  ASSERT_TRUE(kept.has_value()) << kept.error();
  EXPECT_EQ(kept->uploads.size(), 3u);
  ASSERT_TRUE(store_->Delete({"bkt", "obj"}).ok());
  const uint64_t before = Extents();
  EXPECT_GE(before, 3u);
  ASSERT_TRUE(store_->DeleteBucket("bkt").ok());
  EXPECT_EQ(store_->HeadBucket("bkt").error().subject(), Subject::kBucket);
  // Re-created, the bucket has no upload and the parts' bytes are gone.
  ASSERT_TRUE(store_->CreateBucket("bkt", "me").ok());
  Result<ListUploadsResult> none = store_->ListMultipartUploads("bkt", {});
  ASSERT_TRUE(none.has_value()) << none.error();
  EXPECT_TRUE(none->uploads.empty());
  EXPECT_EQ(store_->ListParts({"bkt", "a"}, *a, 0, 10).error().subject(), Subject::kUpload);
  EXPECT_EQ(UploadPart(*a, 3, "late", "a").error().subject(), Subject::kUpload);
  EXPECT_EQ(Extents(), 0u);
}

// S3 answers a retried completion 200 with the same ETag; once the object changed, the upload
// is gone.
TEST_P(MultipartTest, RetriedCompletionAnswersWithTheObjectItMade) {
  Result<std::string> id = store_->CreateMultipartUpload({"bkt", "mp"}, {});
  ASSERT_TRUE(id.has_value());
  Result<ObjectMeta> p1 = UploadPart(*id, 1, Bytes(1, kPart));
  Result<ObjectMeta> p2 = UploadPart(*id, 2, Bytes(2, 10));
  ASSERT_TRUE(p1.has_value() && p2.has_value());
  const std::vector<CompletedPart> parts = {{1, p1->etag}, {2, p2->etag}};
  Result<ObjectMeta> done = store_->CompleteMultipartUpload({"bkt", "mp"}, *id, parts, {});
  ASSERT_TRUE(done.has_value()) << done.error();
  Result<ObjectMeta> again = store_->CompleteMultipartUpload({"bkt", "mp"}, *id, parts, {});
  ASSERT_TRUE(again.has_value()) << again.error();
  EXPECT_EQ(again->etag, done->etag);
  EXPECT_EQ(again->size, done->size);
  EXPECT_EQ(store_->CompleteMultipartUpload({"bkt", "other"}, *id, parts, {}).error().subject(),
            Subject::kUpload);
  Result<std::string> other = store_->CreateMultipartUpload({"bkt", "mp"}, {});
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(store_->CompleteMultipartUpload({"bkt", "mp"}, *other, parts, {}).error().subject(),
            Subject::kPart);  // a live upload: its own (missing) parts decide
  ASSERT_TRUE(PutString(*store_, {"bkt", "mp"}, "replaced").has_value());
  EXPECT_EQ(store_->CompleteMultipartUpload({"bkt", "mp"}, *id, parts, {}).error().subject(),
            Subject::kUpload);
}

// ByteRange::Part: the listed parts in order, part 1 of a single PUT is the whole object.
TEST_P(MultipartTest, GetByPartNumberReadsThatPart) {
  Result<std::string> id = store_->CreateMultipartUpload({"bkt", "mp"}, {});
  ASSERT_TRUE(id.has_value());
  const std::string a = Bytes(1, kPart + 3);
  const std::string b = Bytes(2, kPart);
  const std::string c = Bytes(3, 4321);
  Result<ObjectMeta> p2 = UploadPart(*id, 2, a);
  Result<ObjectMeta> p5 = UploadPart(*id, 5, b);
  Result<ObjectMeta> p9 = UploadPart(*id, 9, c);
  ASSERT_TRUE(p2.has_value() && p5.has_value() && p9.has_value());
  const std::vector<CompletedPart> listed = {{2, p2->etag}, {5, p5->etag}, {9, p9->etag}};
  ASSERT_TRUE(store_->CompleteMultipartUpload({"bkt", "mp"}, *id, listed, {}).has_value());
  uint64_t offset = 0;
  for (const auto& [n, want] : {std::pair{1u, &a}, std::pair{2u, &b}, std::pair{3u, &c}}) {
    SCOPED_TRACE(n);
    Result<std::unique_ptr<ObjectReader>> r = store_->Get({"bkt", "mp"}, ByteRange::Part(n));
    ASSERT_TRUE(r.has_value()) << r.error();
    EXPECT_EQ((*r)->offset(), offset);
    EXPECT_EQ((*r)->length(), want->size());
    EXPECT_EQ((*r)->meta().parts_count, 3u);
    EXPECT_TRUE(*GetString(*store_, {"bkt", "mp"}, ByteRange::Part(n), 1 << 20) == *want);
    offset += want->size();
  }
  for (uint32_t past : {4u, 9u}) {
    Result<std::unique_ptr<ObjectReader>> r = store_->Get({"bkt", "mp"}, ByteRange::Part(past));
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), Code::kOutOfRange);
    EXPECT_EQ(r.error().subject(), Subject::kPart);
    EXPECT_EQ(r.error().field(), "partNumber");
  }
  ASSERT_TRUE(PutString(*store_, {"bkt", "one"}, "single").has_value());
  EXPECT_EQ(*GetString(*store_, {"bkt", "one"}, ByteRange::Part(1), 1 << 20), "single");
  EXPECT_EQ(store_->Get({"bkt", "one"}, ByteRange::Part(2)).error().subject(), Subject::kPart);
}

TEST_P(MultipartTest, CompletionReplacesAnExistingObject) {
  ASSERT_TRUE(PutString(*store_, {"bkt", "mp"}, Bytes(9, 3 << 20)).has_value());
  Result<std::unique_ptr<ObjectReader>> old = store_->Get({"bkt", "mp"}, ByteRange::All());
  ASSERT_TRUE(old.has_value());
  Result<std::string> id = store_->CreateMultipartUpload({"bkt", "mp"}, {});
  ASSERT_TRUE(id.has_value());
  Result<ObjectMeta> m1 = UploadPart(*id, 1, "only part");
  ASSERT_TRUE(m1.has_value());
  ASSERT_TRUE(store_
                  ->CompleteMultipartUpload({"bkt", "mp"}, *id,
                                            std::vector<CompletedPart>{{1, m1->etag}}, {})
                  .has_value());
  EXPECT_EQ(*GetString(*store_, {"bkt", "mp"}), "only part");
  Result<std::string> old_bytes = ReadAll(**old, 1 << 20);
  ASSERT_TRUE(old_bytes.has_value());
  EXPECT_TRUE(*old_bytes == Bytes(9, 3 << 20));
  old->reset();
  EXPECT_EQ(Extents(), 1u);
}

TEST_P(MultipartTest, UploadListingKeepsKeyThenIdOrderAcrossShards) {
  // Keys around 0x01 and the byte after it: an escaped 0x01 must still sort as the raw byte.
  const std::vector<std::string> keys = {"a",
                                         "a\x01",
                                         "a\x01\x01",
                                         "a\x01"
                                         "b",
                                         "a\x02",
                                         "a b",
                                         "b/1",
                                         "b/2",
                                         "b/x/1",
                                         "c",
                                         "c\x01/",
                                         "\x01lead",
                                         "zz"};
  std::vector<std::pair<std::string, std::string>> model;  // (key, id), listing order
  for (int round = 0; round < 3; ++round) {
    for (const std::string& k : keys) {
      if (round > 0 && k.size() % 2 == 0) {
        continue;  // some keys hold several uploads
      }
      Result<std::string> id = store_->CreateMultipartUpload({"bkt", k}, {});
      ASSERT_TRUE(id.has_value()) << id.error();
      model.emplace_back(k, *id);
    }
  }
  std::sort(model.begin(), model.end());
  for (uint32_t page : {1u, 4u, 1000u}) {
    SCOPED_TRACE(page);
    ListUploadsOptions o;
    o.max_uploads = page;
    std::vector<std::pair<std::string, std::string>> seen;
    for (int guard = 0; guard < 100; ++guard) {
      Result<ListUploadsResult> r = store_->ListMultipartUploads("bkt", o);
      ASSERT_TRUE(r.has_value()) << r.error();
      for (const UploadInfo& u : r->uploads) {
        seen.emplace_back(u.key, u.upload_id);
      }
      if (!r->truncated) {
        break;
      }
      EXPECT_EQ(r->uploads.size(), page);
      o.key_marker = r->next_key_marker;
      o.upload_id_marker = r->next_upload_id_marker;
    }
    EXPECT_EQ(seen, model);
  }
  // A key marker alone skips every upload of that key, 0x01 keys included.
  ListUploadsOptions after;
  after.key_marker = "a\x01";
  Result<ListUploadsResult> r = store_->ListMultipartUploads("bkt", after);
  ASSERT_TRUE(r.has_value());
  ASSERT_FALSE(r->uploads.empty());
  EXPECT_EQ(r->uploads[0].key, "a\x01\x01");
  // Prefix and delimiter, the prefix holding 0x01.
  ListUploadsOptions grouped;
  grouped.prefix = "a\x01";
  grouped.delimiter = "\x01";
  r = store_->ListMultipartUploads("bkt", grouped);
  ASSERT_TRUE(r.has_value());
  size_t direct = 0;  // uploads of "a\x01" and "a\x01" "b": no 0x01 after the prefix
  for (const auto& [k, id] : model) {
    direct += k == "a\x01" || k == "a\x01"
                                   "b"
                  ? 1
                  : 0;
  }
  EXPECT_EQ(r->uploads.size(), direct);
  for (const UploadInfo& u : r->uploads) {
    EXPECT_TRUE(u.key == "a\x01" || u.key ==
                                        "a\x01"
                                        "b")
        << u.key;
  }
  EXPECT_EQ(r->common_prefixes, std::vector<std::string>{"a\x01\x01"});
  ListUploadsOptions slash;
  slash.delimiter = "/";
  r = store_->ListMultipartUploads("bkt", slash);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->common_prefixes, (std::vector<std::string>{"b/", "c\x01/"}));
  // Completing or aborting takes an upload off the listing.
  const auto& [key0, id0] = model.front();
  ASSERT_TRUE(store_->AbortMultipartUpload({"bkt", key0}, id0).ok());
  r = store_->ListMultipartUploads("bkt", {});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->uploads.size(), model.size() - 1);
  EXPECT_EQ(store_->ListMultipartUploads("nobucket", {}).error().subject(), Subject::kBucket);
}

TEST_P(MultipartTest, ReadsStartingInsideEveryPartAreByteExact) {
  // Parts of different sizes with a small last part: a GET starting inside each part.
  Result<std::string> id = store_->CreateMultipartUpload({"bkt", "mp"}, {});
  ASSERT_TRUE(id.has_value());
  const std::string p1 = Bytes(11, kPart + 1);
  const std::string p2 = Bytes(12, kPart + 3 * (1 << 20) + 7);
  const std::string p3 = Bytes(13, 1);
  std::vector<CompletedPart> parts;
  for (const auto& [n, body] : {std::pair{1u, &p1}, std::pair{2u, &p2}, std::pair{3u, &p3}}) {
    Result<ObjectMeta> m = UploadPart(*id, n, *body);
    ASSERT_TRUE(m.has_value()) << m.error();
    parts.push_back({n, m->etag});
  }
  ASSERT_TRUE(store_->CompleteMultipartUpload({"bkt", "mp"}, *id, parts, {}).has_value());
  const std::string all = p1 + p2 + p3;
  for (uint64_t at : {uint64_t{0}, kPart, kPart + 1, 2 * kPart + 3, all.size() - 1}) {
    SCOPED_TRACE(at);
    Result<std::string> got = GetString(*store_, {"bkt", "mp"}, {at, 5 << 20}, 700000);
    ASSERT_TRUE(got.has_value()) << got.error();
    EXPECT_TRUE(*got == all.substr(at, 5 << 20));
  }
}

// Part checksums (issue 17): kept with the part whether given at UploadPart (a header) or by
// AddHeader (a trailer), listed by ListParts, compared at completion with the listed ones,
// required for every part when the upload names an algorithm, and the completion's checksum
// of checksums stored with the object. The completion's write conditions apply to the key.
TEST_P(MultipartTest, PartChecksumsAreKeptComparedAndTheCompositeStored) {
  const std::string kHeader = "x-amz-checksum-crc32";
  PutOptions create;
  create.upload_checksum_header = kHeader;
  Result<std::string> id = store_->CreateMultipartUpload({"bkt", "mp"}, create);
  ASSERT_TRUE(id.has_value()) << id.error();
  PutOptions p1;
  p1.headers = {{kHeader, "AAAAAQ=="}, {"x-other", "ignored"}};
  Result<std::unique_ptr<ObjectWriter>> w1 = store_->UploadPart({"bkt", "mp"}, *id, 1, p1);
  ASSERT_TRUE(w1.has_value()) << w1.error();
  ASSERT_TRUE((*w1)->Append(AsBytes(Bytes(1, kPart))).ok());
  Result<ObjectMeta> m1 = (*w1)->Commit();
  ASSERT_TRUE(m1.has_value()) << m1.error();
  Result<std::unique_ptr<ObjectWriter>> w2 = store_->UploadPart({"bkt", "mp"}, *id, 2, {});
  ASSERT_TRUE(w2.has_value()) << w2.error();
  ASSERT_TRUE((*w2)->Append(AsBytes(Bytes(2, 100))).ok());
  ASSERT_TRUE((*w2)->AddHeader(kHeader, "AAAAAg==").ok());
  Result<ObjectMeta> m2 = (*w2)->Commit();
  ASSERT_TRUE(m2.has_value()) << m2.error();

  Result<ListPartsResult> listed = store_->ListParts({"bkt", "mp"}, *id, 0, 10);
  ASSERT_TRUE(listed.has_value()) << listed.error();
  EXPECT_EQ(listed->checksum_header, kHeader);
  ASSERT_EQ(listed->parts.size(), 2u);
  EXPECT_EQ(listed->parts[0].checksum, (ObjectChecksum{kHeader, "AAAAAQ=="}));
  EXPECT_EQ(listed->parts[1].checksum, (ObjectChecksum{kHeader, "AAAAAg=="}));

  const ObjectChecksum c1{kHeader, "AAAAAQ=="};
  const ObjectChecksum c2{kHeader, "AAAAAg=="};
  struct Row {
    const char* what;
    std::vector<CompletedPart> parts;
    Code code;
    Subject subject;
  };
  const Row rows[] = {
      {"a listed checksum differs",
       {{1, m1->etag, c2}, {2, m2->etag, c2}},
       Code::kInvalidArgument,
       Subject::kPart},
      {"another algorithm",
       {{1, m1->etag, {"x-amz-checksum-sha1", "AAAAAQ=="}}},
       Code::kInvalidArgument,
       Subject::kUpload},
      {"a part lists none",
       {{1, m1->etag, c1}, {2, m2->etag, {}}},
       Code::kInvalidArgument,
       Subject::kUpload},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    Result<ObjectMeta> r = store_->CompleteMultipartUpload({"bkt", "mp"}, *id, row.parts, {});
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), row.code) << r.error();
    EXPECT_EQ(r.error().subject(), row.subject) << r.error();
  }
  const std::vector<CompletedPart> good = {{1, m1->etag, c1}, {2, m2->etag, c2}};
  CompleteOptions options;
  options.checksum = {kHeader, "composite-2"};
  options.conditions.if_match = "\"0123456789abcdef0123456789abcdef\"";
  Result<ObjectMeta> refused = store_->CompleteMultipartUpload({"bkt", "mp"}, *id, good, options);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), Code::kNotFound) << refused.error();  // If-Match, no object
  options.conditions = {};
  options.conditions.if_none_match = true;
  Result<ObjectMeta> done = store_->CompleteMultipartUpload({"bkt", "mp"}, *id, good, options);
  ASSERT_TRUE(done.has_value()) << done.error();
  EXPECT_EQ(done->headers,
            (std::vector<std::pair<std::string, std::string>>{{kHeader, "composite-2"}}));
  Result<ObjectMeta> head = store_->Head({"bkt", "mp"});
  ASSERT_TRUE(head.has_value()) << head.error();
  EXPECT_EQ(head->headers, done->headers);
  EXPECT_EQ(head->size, kPart + 100);
}

// FULL_OBJECT uploads (issue 17): the type is kept with the upload and listed; a completion
// listing part sizes is refused when one is not the part's (a part replaced after the
// gateway read the sizes it combined the CRCs with), storing nothing, and otherwise stores
// the given checksum as it is (no "-N").
TEST_P(MultipartTest, FullObjectTypeIsKeptAndListedSizesCompared) {
  const std::string kHeader = "x-amz-checksum-crc64nvme";
  PutOptions create;
  create.upload_checksum_header = kHeader;
  create.upload_checksum_type = ChecksumType::kFullObject;
  Result<std::string> id = store_->CreateMultipartUpload({"bkt", "mp"}, create);
  ASSERT_TRUE(id.has_value()) << id.error();
  std::vector<ObjectMeta> metas;
  const ObjectChecksum c1{kHeader, "AAAAAAAAAAE="};
  const ObjectChecksum c2{kHeader, "AAAAAAAAAAI="};
  for (const auto& [n, size, c] : {std::tuple{1u, kPart, c1}, std::tuple{2u, uint64_t{100}, c2}}) {
    PutOptions p;
    p.headers = {{kHeader, c.value}};
    p.part_checksum_header = kHeader;
    Result<std::unique_ptr<ObjectWriter>> w = store_->UploadPart({"bkt", "mp"}, *id, n, p);
    ASSERT_TRUE(w.has_value()) << w.error();
    ASSERT_TRUE((*w)->Append(AsBytes(Bytes(n, size))).ok());
    Result<ObjectMeta> m = (*w)->Commit();
    ASSERT_TRUE(m.has_value()) << m.error();
    metas.push_back(*m);
  }
  Result<ListPartsResult> listed = store_->ListParts({"bkt", "mp"}, *id, 0, 10);
  ASSERT_TRUE(listed.has_value()) << listed.error();
  EXPECT_EQ(listed->checksum_header, kHeader);
  EXPECT_EQ(listed->checksum_type, ChecksumType::kFullObject);
  CompleteOptions options;
  options.checksum = {kHeader, "ZnVsbG9iag=="};
  std::vector<CompletedPart> parts = {{1, metas[0].etag, c1, kPart}, {2, metas[1].etag, c2, 99}};
  Result<ObjectMeta> refused = store_->CompleteMultipartUpload({"bkt", "mp"}, *id, parts, options);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), Code::kInvalidArgument) << refused.error();
  EXPECT_EQ(refused.error().subject(), Subject::kPart) << refused.error();
  EXPECT_EQ(store_->Head({"bkt", "mp"}).error().code(), Code::kNotFound);
  parts[1].size = 100;
  Result<ObjectMeta> done = store_->CompleteMultipartUpload({"bkt", "mp"}, *id, parts, options);
  ASSERT_TRUE(done.has_value()) << done.error();
  EXPECT_EQ(done->headers,
            (std::vector<std::pair<std::string, std::string>>{{kHeader, "ZnVsbG9iag=="}}));
  // A COMPOSITE upload lists as one.
  Result<std::string> composite = store_->CreateMultipartUpload({"bkt", "c"}, PutOptions{});
  ASSERT_TRUE(composite.has_value()) << composite.error();
  EXPECT_EQ(store_->ListParts({"bkt", "c"}, *composite, 0, 10)->checksum_type,
            ChecksumType::kComposite);
}

// UploadPart refuses, before any byte, a part whose declared checksum (as a header, or
// announced for a trailer) is of another algorithm than the upload's; nothing is stored.
TEST_P(MultipartTest, UploadPartOfAnotherAlgorithmIsRefusedAtOnce) {
  PutOptions create;
  create.upload_checksum_header = "x-amz-checksum-crc32";
  Result<std::string> id = store_->CreateMultipartUpload({"bkt", "mp"}, create);
  ASSERT_TRUE(id.has_value()) << id.error();
  PutOptions trailer;
  trailer.part_checksum_header = "x-amz-checksum-crc32c";
  PutOptions header;
  header.headers = {{"x-amz-checksum-sha1", "c2hh"}};
  for (const PutOptions& p : {trailer, header}) {
    Result<std::unique_ptr<ObjectWriter>> w = store_->UploadPart({"bkt", "mp"}, *id, 1, p);
    ASSERT_FALSE(w.has_value());
    EXPECT_EQ(w.error().code(), Code::kInvalidArgument) << w.error();
    EXPECT_EQ(w.error().subject(), Subject::kUpload) << w.error();
    EXPECT_NE(w.error().message().find("expected checksum Type: crc32,"), std::string::npos)
        << w.error();
  }
  PutOptions same;
  same.part_checksum_header = "x-amz-checksum-crc32";
  Result<std::unique_ptr<ObjectWriter>> w = store_->UploadPart({"bkt", "mp"}, *id, 2, same);
  ASSERT_TRUE(w.has_value()) << w.error();
  ASSERT_TRUE((*w)->Append(AsBytes(std::string_view("x"))).ok());
  ASSERT_TRUE((*w)->AddHeader("x-amz-checksum-crc32", "AAAAAQ==").ok());
  ASSERT_TRUE((*w)->Commit().has_value());
  Result<ListPartsResult> listed = store_->ListParts({"bkt", "mp"}, *id, 0, 10);
  ASSERT_TRUE(listed.has_value()) << listed.error();
  ASSERT_EQ(listed->parts.size(), 1u);
  EXPECT_EQ(listed->parts[0].part_number, 2u);
}

// CompleteMultipartUpload's conditions are checked against the object it would replace.
TEST_P(MultipartTest, CompletionConditionsGuardTheKey) {
  ASSERT_TRUE(PutString(*store_, {"bkt", "mp"}, "old").has_value());
  Result<ObjectMeta> old = store_->Head({"bkt", "mp"});
  ASSERT_TRUE(old.has_value());
  Result<std::string> id = store_->CreateMultipartUpload({"bkt", "mp"}, {});
  ASSERT_TRUE(id.has_value());
  Result<ObjectMeta> m1 = UploadPart(*id, 1, "new");
  ASSERT_TRUE(m1.has_value());
  const std::vector<CompletedPart> parts = {{1, m1->etag}};
  CompleteOptions none_match;
  none_match.conditions.if_none_match = true;
  Result<ObjectMeta> r = store_->CompleteMultipartUpload({"bkt", "mp"}, *id, parts, none_match);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kFailedPrecondition) << r.error();
  EXPECT_EQ(r.error().field(), "If-None-Match");
  CompleteOptions wrong;
  wrong.conditions.if_match = "ffffffffffffffffffffffffffffffff";
  r = store_->CompleteMultipartUpload({"bkt", "mp"}, *id, parts, wrong);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().field(), "If-Match");
  EXPECT_EQ(*GetString(*store_, {"bkt", "mp"}), "old");  // refused: nothing changed
  CompleteOptions match;
  match.conditions.if_match = old->etag;
  r = store_->CompleteMultipartUpload({"bkt", "mp"}, *id, parts, match);
  ASSERT_TRUE(r.has_value()) << r.error();
  EXPECT_EQ(*GetString(*store_, {"bkt", "mp"}), "new");
}

}  // namespace
}  // namespace oc::storage::test
