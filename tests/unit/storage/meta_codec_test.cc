#include "records/meta_codec.h"

#include <gtest/gtest.h>

namespace oc::storage {
namespace {

ObjectRecord SampleObject() {
  ObjectRecord r;
  r.meta.size = 30;
  r.meta.etag = "0123456789abcdef0123456789abcdef-2";
  r.meta.content_type = "application/x-kv";
  r.meta.user_meta = {{"b", "2"}, {"a", "1"}};
  r.meta.headers = {{"cache-control", "no-cache"}};
  r.meta.mtime_unix_ms = 1700000000123;
  r.meta.parts_count = 2;
  r.meta.chunk = ChunkShape{descriptor::StoredLayout::k2LTD, 32, 1 << 20};
  r.segments = {{7, 10, 4, 0}, {9, 20, 8, kSegmentExtentHash}};
  return r;
}

TEST(MetaCodec, ObjectRecordRoundTrips) {
  const ObjectRecord r = SampleObject();
  Result<ObjectRecord> back = DecodeObjectRecord(EncodeObjectRecord(r));
  ASSERT_TRUE(back.has_value()) << back.error();
  EXPECT_EQ(back->meta.size, r.meta.size);
  EXPECT_EQ(back->meta.etag, r.meta.etag);
  EXPECT_EQ(back->meta.content_type, r.meta.content_type);
  EXPECT_EQ(back->meta.user_meta, r.meta.user_meta);
  EXPECT_EQ(back->meta.headers, r.meta.headers);
  EXPECT_EQ(back->meta.mtime_unix_ms, r.meta.mtime_unix_ms);
  EXPECT_EQ(back->meta.parts_count, 2u);
  ASSERT_TRUE(back->meta.chunk.has_value());
  EXPECT_EQ(back->meta.chunk->layout, descriptor::StoredLayout::k2LTD);
  EXPECT_EQ(back->meta.chunk->num_layers, 32u);
  EXPECT_EQ(back->meta.chunk->layer_bytes, 1u << 20);
  ASSERT_EQ(back->segments.size(), 2u);
  EXPECT_EQ(back->segments[1].data_id, 9u);
  EXPECT_EQ(back->segments[1].size, 20u);
  EXPECT_EQ(back->segments[1].extent_bytes, 8u);
  EXPECT_EQ(back->segments[1].flags, kSegmentExtentHash);
}

TEST(MetaCodec, EveryTruncationIsCorruption) {
  const std::string bytes = EncodeObjectRecord(SampleObject());
  for (size_t n = 0; n < bytes.size(); ++n) {
    SCOPED_TRACE(n);
    Result<ObjectRecord> r = DecodeObjectRecord(std::string_view(bytes).substr(0, n));
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), Code::kCorruption);
  }
  EXPECT_FALSE(DecodeObjectRecord(bytes + "x").has_value());
  std::string bad_version = bytes;
  bad_version[0] = 9;
  EXPECT_FALSE(DecodeObjectRecord(bad_version).has_value());
}

TEST(MetaCodec, SegmentSizesMustAddUpToObjectSize) {
  ObjectRecord r = SampleObject();
  r.meta.size = 31;
  EXPECT_FALSE(DecodeObjectRecord(EncodeObjectRecord(r)).has_value());
}

TEST(MetaCodec, BucketUploadAndPartRecordsRoundTrip) {
  Result<BucketRecord> b = DecodeBucketRecord(EncodeBucketRecord({"AKIDEXAMPLE", 42}));
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->owner, "AKIDEXAMPLE");
  EXPECT_EQ(b->created_unix_ms, 42);

  UploadRecord u;
  u.content_type = "text/plain";
  u.user_meta = {{"k", "v"}};
  u.extent_bytes = 4096;
  u.initiated_unix_ms = 77;
  Result<UploadRecord> ub = DecodeUploadRecord(EncodeUploadRecord(u));
  ASSERT_TRUE(ub.has_value());
  EXPECT_EQ(ub->content_type, "text/plain");
  EXPECT_EQ(ub->user_meta, u.user_meta);
  EXPECT_EQ(ub->extent_bytes, 4096u);
  EXPECT_FALSE(ub->chunk.has_value());
  EXPECT_EQ(ub->initiated_unix_ms, 77);

  PartRecord p;
  p.segment = {5, 100, 64, 0};
  p.md5[0] = std::byte{0xab};
  p.md5[15] = std::byte{0xcd};
  p.mtime_unix_ms = 9;
  const std::string pe = EncodePartRecord(p);
  Result<PartRecord> pb = DecodePartRecord(pe);
  ASSERT_TRUE(pb.has_value());
  EXPECT_EQ(pb->segment.data_id, 5u);
  EXPECT_EQ(pb->segment.size, 100u);
  EXPECT_EQ(pb->md5, p.md5);
  EXPECT_EQ(pb->mtime_unix_ms, 9);
  EXPECT_FALSE(DecodePartRecord(pe.substr(0, pe.size() - 1)).has_value());
  EXPECT_FALSE(DecodeBucketRecord("").has_value());
  EXPECT_FALSE(DecodeUploadRecord("\x01").has_value());
}

}  // namespace
}  // namespace oc::storage
