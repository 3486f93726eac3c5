#include "records/meta_codec.h"

#include <gtest/gtest.h>

#include <xxhash.h>

#include <vector>

#include "records/chunk_etag.h"
#include "records/multipart_complete.h"

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

// Extension fields (formats 3 and 4): written only when set, so a record without them keeps its
// format 1/2 bytes (RADOS commits compare records byte for byte); unknown field ids are skipped.
TEST(MetaCodec, ExtensionFieldsRoundTripAndAreWrittenOnlyWhenSet) {
  ObjectRecord r = SampleObject();
  EXPECT_EQ(EncodeObjectRecord(r)[0], 1);
  r.completed_upload_id = "0123456789abcdef0123456789abcdef";
  const std::string bytes = EncodeObjectRecord(r);
  EXPECT_EQ(bytes[0], 3);
  Result<ObjectRecord> back = DecodeObjectRecord(bytes);
  ASSERT_TRUE(back.has_value()) << back.error();
  EXPECT_EQ(back->completed_upload_id, r.completed_upload_id);
  EXPECT_EQ(back->meta.etag, r.meta.etag);
  EXPECT_EQ(EncodeObjectRecord(*back), bytes);
  for (size_t n = 0; n < bytes.size(); ++n) {
    SCOPED_TRACE(n);
    EXPECT_FALSE(DecodeObjectRecord(std::string_view(bytes).substr(0, n)).has_value());
  }
  r.segments[0].writer = 5;
  Result<ObjectRecord> with_writer = DecodeObjectRecord(EncodeObjectRecord(r));
  ASSERT_TRUE(with_writer.has_value()) << with_writer.error();
  EXPECT_EQ(EncodeObjectRecord(r)[0], 4);
  EXPECT_EQ(with_writer->segments[0].writer, 5u);
  EXPECT_EQ(with_writer->completed_upload_id, r.completed_upload_id);
  // The field id sits right before the id's u32 length at the end of the record.
  std::string unknown = bytes;
  unknown[unknown.size() - r.completed_upload_id.size() - 5] = 99;
  Result<ObjectRecord> skipped = DecodeObjectRecord(unknown);
  ASSERT_TRUE(skipped.has_value()) << skipped.error();
  EXPECT_EQ(skipped->completed_upload_id, "");
}

// Extension field 2: the object's tags (S3 object tagging). A record without tags keeps its
// bytes; one with tags and a completed upload id carries both; an upload record with tags is
// format 3 (format 1 and the same extension block), without them format 1 as before.
TEST(MetaCodec, TagsAreAnExtensionFieldOfObjectAndUploadRecords) {
  ObjectRecord r = SampleObject();
  const std::string plain = EncodeObjectRecord(r);
  r.meta.tags = {{"project", "kv"}, {"empty", ""}};
  const std::string tagged = EncodeObjectRecord(r);
  EXPECT_EQ(tagged[0], 3);
  EXPECT_EQ(tagged.substr(1, plain.size() - 1), plain.substr(1));  // the format-1 body as is
  Result<ObjectRecord> back = DecodeObjectRecord(tagged);
  ASSERT_TRUE(back.has_value()) << back.error();
  EXPECT_EQ(back->meta.tags, r.meta.tags);
  EXPECT_EQ(back->completed_upload_id, "");
  r.completed_upload_id = "u-1";
  back = DecodeObjectRecord(EncodeObjectRecord(r));
  ASSERT_TRUE(back.has_value()) << back.error();
  EXPECT_EQ(back->meta.tags, r.meta.tags);
  EXPECT_EQ(back->completed_upload_id, "u-1");
  for (size_t n = 0; n < tagged.size(); ++n) {
    SCOPED_TRACE(n);
    EXPECT_FALSE(DecodeObjectRecord(std::string_view(tagged).substr(0, n)).has_value());
  }

  UploadRecord u;
  u.content_type = "text/plain";
  u.initiated_unix_ms = 5;
  const std::string u_plain = EncodeUploadRecord(u);
  EXPECT_EQ(u_plain[0], 1);
  u.tags = {{"k", "v"}};
  const std::string u_tagged = EncodeUploadRecord(u);
  EXPECT_EQ(u_tagged[0], 3);
  Result<UploadRecord> ub = DecodeUploadRecord(u_tagged);
  ASSERT_TRUE(ub.has_value()) << ub.error();
  EXPECT_EQ(ub->tags, u.tags);
  EXPECT_EQ(ub->content_type, "text/plain");
  Result<UploadRecord> untagged = DecodeUploadRecord(u_plain);
  ASSERT_TRUE(untagged.has_value()) << untagged.error();
  EXPECT_TRUE(untagged->tags.empty());
  for (size_t n = 0; n < u_tagged.size(); ++n) {
    SCOPED_TRACE(n);
    EXPECT_FALSE(DecodeUploadRecord(std::string_view(u_tagged).substr(0, n)).has_value());
  }
}

TEST(MetaCodec, SegmentSizesMustAddUpToObjectSize) {
  ObjectRecord r = SampleObject();
  r.meta.size = 31;
  EXPECT_FALSE(DecodeObjectRecord(EncodeObjectRecord(r)).has_value());
}

// Found by store_records_fuzz: segment sizes whose sum wraps around 2^64 to the object's size.
TEST(MetaCodec, SegmentSizesThatOverflowAreCorruption) {
  ObjectRecord r = SampleObject();
  r.meta.size = 30;
  r.segments = {{7, 1ull << 63, 4, 0}, {9, (1ull << 63) + 30, 8, 0}};
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

// Part checksums and the upload's checksum algorithm (issue 17) are extension fields, written
// only when set: records without them keep the bytes of formats 1 and 2.
TEST(MetaCodec, ChecksumsAreExtensionFieldsOfPartAndUploadRecords) {
  for (const uint64_t writer : {uint64_t{0}, uint64_t{77}}) {
    SCOPED_TRACE(writer);
    PartRecord p;
    p.segment = {5, 100, 64, 0, writer};
    p.md5[3] = std::byte{0x42};
    p.mtime_unix_ms = 9;
    const std::string plain = EncodePartRecord(p);
    EXPECT_EQ(plain[0], writer == 0 ? '\x01' : '\x02');
    p.checksum = {"x-amz-checksum-crc32", "AAAAAQ=="};
    const std::string with = EncodePartRecord(p);
    EXPECT_EQ(with[0], writer == 0 ? '\x03' : '\x04');
    EXPECT_EQ(with.substr(1, plain.size() - 1), plain.substr(1));  // the old fields, then the block
    Result<PartRecord> back = DecodePartRecord(with);
    ASSERT_TRUE(back.has_value()) << back.error();
    EXPECT_EQ(back->checksum, p.checksum);
    EXPECT_EQ(back->segment.writer, writer);
    EXPECT_EQ(back->md5, p.md5);
    EXPECT_EQ(back->mtime_unix_ms, 9);
    Result<PartRecord> old = DecodePartRecord(plain);
    ASSERT_TRUE(old.has_value());
    EXPECT_TRUE(old->checksum.empty());
    for (size_t n = 0; n < with.size(); ++n) {
      EXPECT_FALSE(DecodePartRecord(std::string_view(with).substr(0, n)).has_value()) << n;
    }
  }
  UploadRecord u;
  const std::string plain = EncodeUploadRecord(u);
  u.checksum_header = "x-amz-checksum-sha256";
  u.tags = {{"a", "b"}};
  const std::string with = EncodeUploadRecord(u);
  Result<UploadRecord> back = DecodeUploadRecord(with);
  ASSERT_TRUE(back.has_value()) << back.error();
  EXPECT_EQ(back->checksum_header, "x-amz-checksum-sha256");
  EXPECT_EQ(back->tags, u.tags);
  EXPECT_TRUE(DecodeUploadRecord(plain)->checksum_header.empty());
  EXPECT_EQ(back->checksum_type, ChecksumType::kComposite);
  EXPECT_EQ(DecodeUploadRecord(plain)->checksum_type, ChecksumType::kComposite);
  // FULL_OBJECT is extension field 3; a COMPOSITE record keeps the bytes it had before.
  u.checksum_type = ChecksumType::kFullObject;
  const std::string full = EncodeUploadRecord(u);
  EXPECT_NE(full, with);
  Result<UploadRecord> full_back = DecodeUploadRecord(full);
  ASSERT_TRUE(full_back.has_value()) << full_back.error();
  EXPECT_EQ(full_back->checksum_type, ChecksumType::kFullObject);
  EXPECT_EQ(full_back->checksum_header, "x-amz-checksum-sha256");
  for (size_t n = 0; n < full.size(); ++n) {
    EXPECT_FALSE(DecodeUploadRecord(std::string_view(full).substr(0, n)).has_value()) << n;
  }
}

// Stored parts 1, 2 and 3 of an upload: 1 and 2 of the minimum size, 3 small; MD5s of
// repeated bytes 0x11, 0x22, 0xcc.
std::vector<NumberedPart> StoredParts() {
  std::vector<NumberedPart> stored;
  for (uint32_t n = 1; n <= 3; ++n) {
    NumberedPart p;
    p.number = n;
    p.part.segment = {100 + n, n < 3 ? kMinPartBytes : 10, 1 << 20, 0, 7};
    p.part.md5.fill(std::byte(n < 3 ? 0x11 * n : 0xcc));
    stored.push_back(p);
  }
  return stored;
}

const std::string kEtag1(32, '1');
const std::string kEtag2(32, '2');
const std::string kEtag3(32, 'c');
const std::string kEtag3Upper(32, 'C');

TEST(CompleteUpload, StitchesListedPartsInOrderWithTheS3Etag) {
  UploadRecord upload;
  upload.content_type = "video/mp4";
  upload.user_meta = {{"owner", "me"}};
  upload.headers = {{"cache-control", "no-cache"}};
  upload.chunk = ChunkShape{descriptor::StoredLayout::k2LTD, 4, 1 << 20};
  const std::vector<NumberedPart> stored = StoredParts();
  // Part 2 is left out; the client's ETags may come quoted and in upper case.
  const std::vector<CompletedPart> listed = {{1, "\"" + kEtag1 + "\""}, {3, kEtag3Upper}};
  Result<CompletedUpload> done = CompleteUpload(listed, stored, upload, {}, 1234);
  ASSERT_TRUE(done.has_value()) << done.error();
  const ObjectRecord& r = done->record;
  ASSERT_EQ(r.segments.size(), 2u);
  EXPECT_EQ(r.segments[0].data_id, 101u);
  EXPECT_EQ(r.segments[1].data_id, 103u);
  EXPECT_EQ(r.segments[1].writer, 7u);
  EXPECT_EQ(r.meta.size, kMinPartBytes + 10);
  // MD5 of the 32 bytes 0x11 x16, 0xcc x16 (Python hashlib), then the part count.
  EXPECT_EQ(r.meta.etag, "95b2fa698bdd8bb9b1a705a25f68bfde-2");
  EXPECT_EQ(r.meta.parts_count, 2u);
  EXPECT_EQ(r.meta.mtime_unix_ms, 1234);
  EXPECT_EQ(r.meta.content_type, "video/mp4");
  EXPECT_EQ(r.meta.user_meta, upload.user_meta);
  EXPECT_EQ(r.meta.headers, upload.headers);
  ASSERT_TRUE(r.meta.chunk.has_value());
  EXPECT_EQ(r.meta.chunk->num_layers, 4u);
  EXPECT_EQ(done->stitched, (std::vector<bool>{true, false, true}));
}

// Listed checksums are compared with the stored ones; an upload with an algorithm needs one
// under it for every listed part; the completion's checksum becomes a header of the object.
TEST(CompleteUpload, ComparesPartChecksumsAndStoresTheComposite) {
  std::vector<NumberedPart> stored = StoredParts();
  const ObjectChecksum c1{"x-amz-checksum-crc32", "AAAAAQ=="};
  const ObjectChecksum c2{"x-amz-checksum-crc32", "AAAAAg=="};
  stored[0].part.checksum = c1;
  stored[1].part.checksum = c2;
  UploadRecord upload;
  upload.headers = {{"cache-control", "x"}};
  CompleteOptions options;
  options.checksum = {"x-amz-checksum-crc32", "Zm9vYg==-2"};
  Result<CompletedUpload> done = CompleteUpload(
      std::vector<CompletedPart>{{1, kEtag1, c1}, {2, kEtag2, c2}}, stored, upload, options, 5);
  ASSERT_TRUE(done.has_value()) << done.error();
  EXPECT_EQ(done->record.meta.headers,
            (std::vector<std::pair<std::string, std::string>>{
                {"cache-control", "x"}, {"x-amz-checksum-crc32", "Zm9vYg==-2"}}));
  // Part 3 has no stored checksum: listing one for it is a mismatch.
  Result<CompletedUpload> bad =
      CompleteUpload(std::vector<CompletedPart>{{1, kEtag1, c2}}, stored, upload, {}, 5);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().subject(), Subject::kPart);
  bad = CompleteUpload(std::vector<CompletedPart>{{3, kEtag3, c1}}, stored, upload, {}, 5);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().subject(), Subject::kPart);
  // Listing none is fine for an upload without an algorithm, refused for one with it.
  EXPECT_TRUE(
      CompleteUpload(std::vector<CompletedPart>{{1, kEtag1}}, stored, upload, {}, 5).has_value());
  upload.checksum_header = "x-amz-checksum-crc32";
  bad = CompleteUpload(std::vector<CompletedPart>{{1, kEtag1, c1}, {2, kEtag2}}, stored, upload, {},
                       5);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), Code::kInvalidArgument);
  EXPECT_EQ(bad.error().subject(), Subject::kUpload);
  EXPECT_EQ(bad.error().field(), "x-amz-checksum-crc32");
  EXPECT_NE(bad.error().message().find("missing for part 2"), std::string::npos);
}

// A listed size (FULL_OBJECT: the size the gateway combined the part's CRC with) must be the
// stored part's; unset, no size is compared.
TEST(CompleteUpload, ComparesListedSizes) {
  const std::vector<NumberedPart> stored = StoredParts();
  const uint64_t size1 = stored[0].part.segment.size;
  const uint64_t size3 = stored[2].part.segment.size;
  EXPECT_TRUE(
      CompleteUpload(std::vector<CompletedPart>{{1, kEtag1, {}, size1}, {3, kEtag3, {}, size3}},
                     stored, UploadRecord{}, {}, 5)
          .has_value());
  Result<CompletedUpload> bad =
      CompleteUpload(std::vector<CompletedPart>{{1, kEtag1, {}, size1}, {3, kEtag3, {}, size3 + 1}},
                     stored, UploadRecord{}, {}, 5);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), Code::kInvalidArgument);
  EXPECT_EQ(bad.error().subject(), Subject::kPart);
  EXPECT_NE(bad.error().message().find("part 3 has a different size"), std::string::npos);
}

// UploadPart's check: a part declaring another algorithm than the upload's is refused with
// S3's text, naming the part's header; a part or an upload without one passes.
TEST(CheckPartChecksum, RefusesAnotherAlgorithmThanTheUploads) {
  UploadRecord upload;
  PutOptions part;
  part.part_checksum_header = "x-amz-checksum-crc32c";
  EXPECT_TRUE(CheckPartChecksum(upload, part).ok());  // the upload has no algorithm
  upload.checksum_header = "x-amz-checksum-crc32";
  Status s = CheckPartChecksum(upload, part);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.subject(), Subject::kUpload);
  EXPECT_EQ(s.field(), "x-amz-checksum-crc32c");
  EXPECT_EQ(s.message(),
            "Checksum Type mismatch occurred, expected checksum Type: crc32, actual checksum "
            "Type: crc32c");
  // Declared only by the stored header (no part_checksum_header): the same check.
  PutOptions by_header;
  by_header.headers = {{"x-amz-checksum-sha256", "c2hh"}};
  EXPECT_EQ(CheckPartChecksum(upload, by_header).field(), "x-amz-checksum-sha256");
  part.part_checksum_header = "x-amz-checksum-crc32";
  EXPECT_TRUE(CheckPartChecksum(upload, part).ok());
  EXPECT_TRUE(CheckPartChecksum(upload, PutOptions{}).ok());  // the part declares none
}

TEST(CompleteUpload, RefusesBadListsWithThePartErrors) {
  struct Row {
    const char* what;
    std::vector<CompletedPart> listed;
    Code code;
  };
  const std::vector<Row> rows = {
      {"empty list", {}, Code::kInvalidArgument},
      {"descending numbers", {{2, kEtag2}, {1, kEtag1}}, Code::kFailedPrecondition},
      {"a number twice", {{1, kEtag1}, {1, kEtag1}}, Code::kFailedPrecondition},
      {"missing part", {{1, kEtag1}, {5, kEtag1}}, Code::kInvalidArgument},
      {"missing first part", {{0, kEtag1}}, Code::kInvalidArgument},
      {"ETag mismatch", {{1, kEtag1}, {2, kEtag3}}, Code::kInvalidArgument},
      {"too small, not last", {{3, kEtag3}, {4, kEtag1}}, Code::kOutOfRange},
  };
  std::vector<NumberedPart> stored = StoredParts();
  NumberedPart fourth = stored[0];
  fourth.number = 4;
  stored.push_back(fourth);
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    Result<CompletedUpload> done = CompleteUpload(row.listed, stored, UploadRecord{}, {}, 0);
    ASSERT_FALSE(done.has_value());
    EXPECT_EQ(done.error().code(), row.code) << done.error();
    EXPECT_EQ(done.error().subject(), Subject::kPart);
    EXPECT_EQ(done.error().field(), "Part");
    EXPECT_EQ(CheckListedParts(row.listed).ok(),
              row.code != Code::kFailedPrecondition && row.listed.size() > 0);
  }
  // The last part may be small; earlier ones are exactly the minimum here.
  EXPECT_TRUE(CompleteUpload(std::vector<CompletedPart>{{1, kEtag1}, {2, kEtag2}, {3, kEtag3}},
                             stored, UploadRecord{}, {}, 0)
                  .has_value());
}

// The chunk ETag's worked example in docs/protocol.md ("Responses"), in appends that split
// pieces, whole, and from piece hashes given by the caller (an extent's hash reused).
TEST(ChunkEtag, MatchesTheProtocolExample) {
  std::vector<std::byte> bytes(8);
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = std::byte(i);
  }
  const std::string want = "f24b4ac3d1eb7c525bd3dd77a0269f1b-1";
  ChunkEtag split(4);
  split.Update(ByteSpan(bytes).subspan(0, 3));
  split.Update(ByteSpan(bytes).subspan(3, 5));
  EXPECT_EQ(split.Finish(), want);
  ChunkEtag given(4);
  given.Update(ByteSpan(bytes).subspan(0, 4));
  given.AddPieceHash(XXH3_64bits(bytes.data() + 4, 4));
  EXPECT_EQ(given.Finish(), want);
  EXPECT_EQ(ChunkEtag(4).Finish(), "99aa06d3014798d86001c324468d497f-1");  // no pieces
  EXPECT_EQ(ChunkEtag(0).Finish(), "66f7ee01ee4a1e7332e080078f9f652e-1");  // one empty piece
}

}  // namespace
}  // namespace oc::storage
