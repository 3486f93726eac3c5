// The records a write makes from its options (object/new_records.h), shared by both
// backends: the fields each copies, UploadPart's checks and the part writer's options; and the
// readers' shared offset location (records/object_range.h).
// store_multipart_test.cc and store_test.cc check the same through every real backend.

#include <gtest/gtest.h>

#include "object/new_records.h"
#include "records/md5.h"
#include "records/object_range.h"

namespace oc::storage::test {
namespace {

PutOptions FullOptions() {
  PutOptions o;
  o.content_type = "text/plain";
  o.user_meta = {{"a", "1"}};
  o.headers = {{"cache-control", "no-cache"}, {"x-amz-checksum-crc32", "AAAAAA=="}};
  o.tags = Tags{{"k", "v"}};
  o.expected_size = 7;
  o.content_md5 = Md5Digest{};
  o.upload_checksum_header = "x-amz-checksum-crc32";
  o.upload_checksum_type = ChecksumType::kFullObject;
  return o;
}

TEST(NewRecordsTest, ObjectMetaCopiesTheOptionsMetadata) {
  const ObjectMeta m = NewObjectMeta(FullOptions(), 7, "etag", 1234);
  EXPECT_EQ(m.size, 7u);
  EXPECT_EQ(m.etag, "etag");
  EXPECT_EQ(m.mtime_unix_ms, 1234);
  EXPECT_EQ(m.content_type, "text/plain");
  EXPECT_EQ(m.user_meta, FullOptions().user_meta);
  EXPECT_EQ(m.headers, FullOptions().headers);
  EXPECT_EQ(m.tags, (Tags{{"k", "v"}}));
  EXPECT_TRUE(NewObjectMeta(PutOptions{}, 0, "", 0).tags.empty());
}

TEST(NewRecordsTest, ReplaceKeepsTheStoredChecksumUnlessANewOneComes) {
  ObjectMeta m = NewObjectMeta(FullOptions(), 7, "etag", 1);
  PutOptions replace;
  replace.content_type = "image/png";
  replace.headers = {{"cache-control", "max-age=1"}};
  ReplaceMetadata(&m, replace);
  EXPECT_EQ(m.content_type, "image/png");
  EXPECT_TRUE(m.user_meta.empty());
  ASSERT_EQ(m.headers.size(), 2u);
  EXPECT_EQ(m.headers[1].first, "x-amz-checksum-crc32");
  EXPECT_EQ(m.tags, (Tags{{"k", "v"}}));  // no tags in the replace: kept
  EXPECT_EQ(m.etag, "etag");
  replace.tags = Tags{};
  ReplaceMetadata(&m, replace);
  EXPECT_TRUE(m.tags.empty());
}

TEST(NewRecordsTest, UploadRecordCarriesTheChecksumAlgorithm) {
  const UploadRecord r = NewUploadRecord(FullOptions(), 99);
  EXPECT_EQ(r.content_type, "text/plain");
  EXPECT_EQ(r.headers, FullOptions().headers);
  EXPECT_EQ(r.checksum_header, "x-amz-checksum-crc32");
  EXPECT_EQ(r.checksum_type, ChecksumType::kFullObject);
  EXPECT_EQ(r.initiated_unix_ms, 99);
  EXPECT_EQ(r.extent_bytes, 0u);  // the backend's choice
}

TEST(NewRecordsTest, PartChecksAndWriterOptions) {
  EXPECT_TRUE(CheckPartNumber(1).ok());
  EXPECT_TRUE(CheckPartNumber(kMaxPartNumber).ok());
  for (const uint32_t bad : {0u, kMaxPartNumber + 1}) {
    const Status s = CheckPartNumber(bad);
    EXPECT_EQ(s.code(), Code::kInvalidArgument);
    EXPECT_EQ(s.subject(), Subject::kPart);
    EXPECT_EQ(s.field(), "partNumber");
  }
  const UploadRecord upload = NewUploadRecord(FullOptions(), 1);
  Result<PutOptions> part = PartWriteOptions(upload, FullOptions());
  ASSERT_TRUE(part.has_value()) << part.error();
  EXPECT_EQ(part->expected_size, 7u);
  EXPECT_TRUE(part->content_md5.has_value());
  ASSERT_EQ(part->headers.size(), 1u);  // only the checksum; other headers are the upload's
  EXPECT_EQ(part->headers[0].first, "x-amz-checksum-crc32");
  EXPECT_TRUE(part->content_type.empty());

  PutOptions other;
  other.headers = {{"x-amz-checksum-sha256", "x"}};
  Result<PutOptions> mismatch = PartWriteOptions(upload, other);
  ASSERT_FALSE(mismatch.has_value());
  EXPECT_EQ(mismatch.error().subject(), Subject::kUpload);
}

// Both readers locate an offset with records/object_range.h: segments of 10 bytes in extents
// of 4, an empty one, then 3 bytes in extents of 8.
TEST(ObjectRangeTest, LocateExtentAcrossSegments) {
  const std::vector<Segment> segments = {Segment{1, 10, 4, 0}, Segment{2, 0, 4, 0},
                                         Segment{3, 3, 8, 0}};
  struct Row {
    uint64_t offset;
    size_t segment;
    uint64_t extent, within, bytes;
  };
  for (const Row& r : {Row{0, 0, 0, 0, 4}, Row{5, 0, 1, 1, 4}, Row{9, 0, 2, 1, 2},
                       Row{10, 2, 0, 0, 3}, Row{12, 2, 0, 2, 3}}) {
    SCOPED_TRACE(r.offset);
    const std::optional<ExtentPos> pos = LocateExtent(segments, r.offset);
    ASSERT_TRUE(pos.has_value());
    EXPECT_EQ(pos->segment, r.segment);
    EXPECT_EQ(pos->extent, r.extent);
    EXPECT_EQ(pos->within, r.within);
    EXPECT_EQ(ExtentDataBytes(segments[pos->segment], pos->extent), r.bytes);
  }
  EXPECT_FALSE(LocateExtent(segments, 13).has_value());  // past the end: a corrupt record
  EXPECT_FALSE(LocateExtent({}, 0).has_value());
}

}  // namespace
}  // namespace oc::storage::test
