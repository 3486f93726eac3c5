// The body checks of every writer (object/checking_writer.h) over an in-memory raw writer: the
// errors and the fields they name, their order, what the raw writer is asked (Finish, then
// Commit or exactly one Discard), both lends (the raw writer's memory and the scratch), and
// AddHeader. store_test.cc, store_multipart_test.cc and store_group_test.cc check the same
// rules through every real backend's writers.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "object/checking_writer.h"

namespace oc::storage::test {
namespace {

struct RawLog {
  std::string bytes;  // everything written or lent, in order
  int finishes = 0;
  int commits = 0;
  int discards = 0;
  uint64_t committed_size = 0;
  Md5Digest committed_md5{};
  std::vector<std::pair<std::string, std::string>> committed_headers;
};

class MemRaw final : public RawBodyWriter {
 public:
  MemRaw(RawLog* log, uint64_t lend_bytes) : log_(log), lend_(lend_bytes, '\0') {}
  Status Write(ByteSpan data) override {
    OC_RETURN_IF_ERROR(fail_write);
    log_->bytes.append(reinterpret_cast<const char*>(data.data()), data.size());
    return Status::Ok();
  }
  MutableByteSpan Lend(uint64_t min_bytes, uint64_t max_bytes) override {
    if (lend_.size() < min_bytes) {
      return {};
    }
    return MutableByteSpan(reinterpret_cast<std::byte*>(lend_.data()),
                           std::min<uint64_t>(lend_.size(), max_bytes));
  }
  Status Lent(uint64_t n) override {
    log_->bytes.append(lend_.data(), n);
    return Status::Ok();
  }
  Status Finish() override {
    ++log_->finishes;
    return fail_finish;
  }
  Result<ObjectMeta> Commit(const PutOptions& options, const BodyCheck& check) override {
    ++log_->commits;
    log_->committed_size = check.size();
    log_->committed_md5 = check.md5();
    log_->committed_headers = options.headers;
    ObjectMeta meta;
    meta.size = check.size();
    return meta;
  }
  void Discard() override { ++log_->discards; }

  Status fail_write;
  Status fail_finish;

 private:
  RawLog* const log_;
  std::string lend_;
};

std::unique_ptr<CheckingWriter> Writer(RawLog* log, PutOptions options, uint64_t lend = 0,
                                       MemRaw** raw_out = nullptr) {
  auto raw = std::make_unique<MemRaw>(log, lend);
  if (raw_out != nullptr) {
    *raw_out = raw.get();
  }
  return std::make_unique<CheckingWriter>(std::move(options), /*etag_md5=*/true, std::move(raw));
}

TEST(CheckingWriterTest, CommitsWithSizeAndMd5) {
  RawLog log;
  PutOptions o;
  o.expected_size = 11;
  o.content_md5 = Md5::Of(AsBytes("hello world"));
  auto w = Writer(&log, o);
  ASSERT_TRUE(w->Append(AsBytes("hello ")).ok());
  ASSERT_TRUE(w->Append(AsBytes("world")).ok());
  ASSERT_TRUE(w->AddHeader("x-amz-checksum-crc32", "abc").ok());
  Result<ObjectMeta> meta = w->Commit();
  ASSERT_TRUE(meta.has_value()) << meta.error();
  EXPECT_EQ(log.bytes, "hello world");
  EXPECT_EQ(log.committed_size, 11u);
  EXPECT_EQ(log.committed_md5, Md5::Of(AsBytes("hello world")));
  ASSERT_EQ(log.committed_headers.size(), 1u);
  EXPECT_EQ(log.committed_headers[0].first, "x-amz-checksum-crc32");
  EXPECT_EQ(log.finishes, 1);
  EXPECT_EQ(log.discards, 0);
  // Spent: every call refuses, and destruction discards nothing more.
  EXPECT_EQ(w->Append(AsBytes("x")).code(), Code::kFailedPrecondition);
  EXPECT_EQ(w->AddHeader("a", "b").code(), Code::kFailedPrecondition);
  EXPECT_EQ(w->Commit().error().code(), Code::kFailedPrecondition);
  w.reset();
  EXPECT_EQ(log.discards, 0);
}

TEST(CheckingWriterTest, SizeIsCheckedBeforeDigestAndNamesItsField) {
  for (const uint64_t expected : {10u, 12u}) {
    RawLog log;
    PutOptions o;
    o.expected_size = expected;
    o.content_md5 = Md5::Of(AsBytes("other"));
    auto w = Writer(&log, o);
    ASSERT_TRUE(w->Append(AsBytes("hello world")).ok());
    Result<ObjectMeta> r = w->Commit();
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), Code::kInvalidArgument);
    EXPECT_EQ(r.error().subject(), Subject::kEntity);
    EXPECT_EQ(r.error().field(), "Content-Length");
    EXPECT_EQ(r.error().message(), "body has 11 bytes, expected " + std::to_string(expected));
    EXPECT_EQ(log.commits, 0);
    EXPECT_EQ(log.discards, 1);
    w.reset();
    EXPECT_EQ(log.discards, 1);  // once
  }
  RawLog log;
  PutOptions o;
  o.content_md5 = Md5::Of(AsBytes("other"));
  auto w = Writer(&log, o);
  ASSERT_TRUE(w->Append(AsBytes("hello world")).ok());
  Result<ObjectMeta> r = w->Commit();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.error().subject(), Subject::kDigest);
  EXPECT_EQ(r.error().field(), "Content-MD5");
  EXPECT_EQ(log.discards, 1);
}

TEST(CheckingWriterTest, RawErrorsComeFirstAndDiscard) {
  RawLog log;
  PutOptions o;
  o.expected_size = 1;  // would fail too
  MemRaw* raw = nullptr;
  auto w = Writer(&log, o, 0, &raw);
  raw->fail_write = Status::IOError("disk");
  EXPECT_EQ(w->Append(AsBytes("abc")).code(), Code::kIOError);
  raw->fail_write = Status::Ok();
  EXPECT_EQ(w->Append(AsBytes("abc")).code(), Code::kIOError);  // the first error for good
  Result<ObjectMeta> r = w->Commit();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kIOError);
  EXPECT_EQ(log.finishes, 0);
  EXPECT_EQ(log.discards, 1);

  RawLog log2;
  auto w2 = Writer(&log2, {}, 0, &raw);
  raw->fail_finish = Status::Unavailable("busy");
  ASSERT_TRUE(w2->Append(AsBytes("abc")).ok());
  EXPECT_EQ(w2->Commit().error().code(), Code::kUnavailable);
  EXPECT_EQ(log2.discards, 1);
}

TEST(CheckingWriterTest, AbandonedWriterDiscardsOnce) {
  RawLog log;
  {
    auto w = Writer(&log, {});
    ASSERT_TRUE(w->Append(AsBytes("abc")).ok());
  }
  EXPECT_EQ(log.discards, 1);
  EXPECT_EQ(log.commits, 0);
}

TEST(CheckingWriterTest, BothLendsCountAndHash) {
  for (const uint64_t raw_lend : {0u, 64u}) {  // 0: the scratch lend, through Write
    SCOPED_TRACE(raw_lend);
    RawLog log;
    PutOptions o;
    o.expected_size = 9;
    o.content_md5 = Md5::Of(AsBytes("abcdefghi"));
    auto w = Writer(&log, o, raw_lend);
    ASSERT_TRUE(w->Append(AsBytes("abc")).ok());
    Result<MutableByteSpan> space = w->AppendSpace(4, 16);
    ASSERT_TRUE(space.has_value());
    ASSERT_GE(space->size(), 4u);
    std::memcpy(space->data(), "defgXXXX", 4);
    if (raw_lend != 0) {  // the raw writer's own memory: Append waits for Appended
      EXPECT_EQ(w->Append(AsBytes("z")).code(), Code::kFailedPrecondition);
      EXPECT_EQ(w->Appended(space->size() + 1).code(), Code::kFailedPrecondition);
      space = w->AppendSpace(4, 16);
      ASSERT_TRUE(space.has_value());
      std::memcpy(space->data(), "defg", 4);
    }
    ASSERT_TRUE(w->Appended(4).ok());
    ASSERT_TRUE(w->Append(AsBytes("hi")).ok());
    EXPECT_EQ(w->AppendSpace(1, 0).error().code(), Code::kInvalidArgument);
    Result<ObjectMeta> r = w->Commit();
    ASSERT_TRUE(r.has_value()) << r.error();
    EXPECT_EQ(log.bytes, "abcdefghi");
    EXPECT_EQ(log.committed_md5, Md5::Of(AsBytes("abcdefghi")));
  }
}

TEST(BodyCheckTest, GroupMemberMessageAndMd5OnlyWhenNeeded) {
  PutOptions o;
  o.expected_size = 3;
  BodyCheck check(o, /*etag_md5=*/false);
  check.Update(AsBytes("abcd"));
  const Status s = check.Finish("chunk-7");
  EXPECT_EQ(s.field(), "Content-Length");
  EXPECT_EQ(s.message(), "object chunk-7 has 4 bytes, expected 3");

  PutOptions digest;
  digest.content_md5 = Md5::Of(AsBytes("abcd"));
  BodyCheck with_md5(digest, /*etag_md5=*/false);
  with_md5.Update(AsBytes("ab"));
  with_md5.Update(AsBytes("cd"));
  EXPECT_TRUE(with_md5.Finish("m").ok());
  EXPECT_EQ(with_md5.md5(), Md5::Of(AsBytes("abcd")));
  EXPECT_EQ(with_md5.size(), 4u);
}

}  // namespace
}  // namespace oc::storage::test
