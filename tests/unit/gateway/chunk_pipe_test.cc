// ChunkPipe (gateway/src/chunk_pipe.h): a descriptor PUT's body from the session to
// PutChunks in lent buffers. The bytes PutChunks peeks are the very buffer the session's
// parser filled (no copy inside the pipe), memory stays within the bound, and every way the
// body can end (committed, abandoned, refused by PutChunks) reaches the other side.

#include "chunk_pipe.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>

#include "oc/testutil/testutil.h"

namespace oc::gateway {
namespace {

using namespace std::chrono_literals;

std::string Pattern(uint64_t seed, uint64_t size) {
  std::vector<std::byte> b = testutil::PatternBytes(seed, size);
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

// PutChunks' side: peeks (at most `piece` at a time) and consumes until the end or an error.
Status Drain(ChunkPipe& pipe, uint64_t piece, std::string* got) {
  for (;;) {
    OC_ASSIGN_OR_RETURN(ByteSpan p, pipe.Peek(piece));
    if (p.empty()) {
      return Status::Ok();
    }
    got->append(AsText(p));
    OC_RETURN_IF_ERROR(pipe.Consume(p.size()));
  }
}

TEST(ChunkPipe, PeekReturnsTheLentBufferInPlace) {
  ChunkPipe pipe(10s, /*buffer_bytes=*/1024, /*max_bytes=*/4096);
  const std::string data = Pattern(1, 700);
  Result<MutableByteSpan> space = pipe.Lend(5000);
  ASSERT_TRUE(space.has_value()) << space.error();
  EXPECT_EQ(space->size(), 1024u) << "a lend is at most one buffer";
  std::memcpy(space->data(), data.data(), data.size());
  ASSERT_TRUE(pipe.Queue(data.size()).ok());
  Result<ByteSpan> p = pipe.Peek(100);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->data(), space->data()) << "the pipe copied the bytes";
  EXPECT_EQ(p->size(), 100u);
  ASSERT_TRUE(pipe.Consume(60).ok());
  p = pipe.Peek(5000);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->data(), space->data() + 60);
  EXPECT_EQ(p->size(), 640u);
  EXPECT_EQ(pipe.Consume(641).code(), Code::kFailedPrecondition);
  EXPECT_EQ(AsText(*p), std::string_view(data).substr(60));
  ASSERT_TRUE(pipe.Consume(640).ok());
  // The consumed buffer is lent again: no second allocation.
  space = pipe.Lend(10);
  ASSERT_TRUE(space.has_value());
  EXPECT_EQ(space->size(), 10u);
  ASSERT_TRUE(pipe.Queue(0).ok());
  EXPECT_EQ(pipe.buffers_allocated(), 1u);
}

TEST(ChunkPipe, BodyArrivesWholeThroughLendsAndAppends) {
  auto pipe = std::make_shared<ChunkPipe>(10s, 4096, 16384);
  const std::string data = Pattern(2, 100000);
  std::string got;
  Status drained;
  std::thread task([&] {
    drained = Drain(*pipe, 3000, &got);
    pipe->Done(drained);
  });
  {
    ChunkPipeWriter writer(pipe);
    uint64_t at = 0;
    for (uint64_t i = 0; at < data.size(); ++i) {
      const uint64_t step = std::min<uint64_t>(data.size() - at, 1 + i * 997 % 9000);
      if (i % 3 == 0) {
        ASSERT_TRUE(writer.Append(AsBytes(std::string_view(data).substr(at, step))).ok());
        at += step;
        continue;
      }
      // More than a buffer at least: the scratch lend; else a pipe buffer, partly filled.
      Result<MutableByteSpan> space = writer.AppendSpace(i % 5 == 0 ? 5000 : 1, step);
      ASSERT_TRUE(space.has_value()) << space.error();
      const uint64_t n = std::min<uint64_t>(space->size(), step) / (i % 4 == 1 ? 2 : 1);
      std::memcpy(space->data(), data.data() + at, n);
      ASSERT_TRUE(writer.Appended(n).ok());
      at += n;
    }
    Result<storage::ObjectMeta> m = writer.Commit();
    ASSERT_TRUE(m.has_value()) << m.error();
    EXPECT_EQ(m->size, data.size());
  }
  task.join();
  EXPECT_TRUE(drained.ok()) << drained;
  EXPECT_TRUE(got == data);
  EXPECT_LE(pipe->buffers_allocated(), 4u);
}

TEST(ChunkPipe, MemoryStaysWithinTheBound) {
  ChunkPipe pipe(50ms, 1024, 4096);
  for (int i = 0; i < 4; ++i) {
    Result<MutableByteSpan> space = pipe.Lend(1024);
    ASSERT_TRUE(space.has_value());
    ASSERT_TRUE(pipe.Queue(1024).ok());
  }
  // Every buffer is queued and nobody consumes: the next lend waits, then gives up.
  Result<MutableByteSpan> full = pipe.Lend(1024);
  ASSERT_FALSE(full.has_value());
  EXPECT_EQ(full.error().code(), Code::kUnavailable);
  EXPECT_EQ(pipe.Append(AsBytes("x")).code(), Code::kUnavailable);
  EXPECT_EQ(pipe.buffers_allocated(), 4u);
  // Consuming one buffer frees it for the next lend.
  Result<ByteSpan> p = pipe.Peek(4096);
  ASSERT_TRUE(p.has_value());
  ASSERT_TRUE(pipe.Consume(p->size()).ok());
  EXPECT_TRUE(pipe.Lend(1024).has_value());
  EXPECT_EQ(pipe.buffers_allocated(), 4u);
}

TEST(ChunkPipe, AnAbandonedBodyCancelsTheSource) {
  auto pipe = std::make_shared<ChunkPipe>(10s, 1024, 4096);
  ASSERT_TRUE(pipe->Append(AsBytes(Pattern(3, 1500))).ok());
  std::string got;
  Status drained;
  std::thread task([&] {
    drained = Drain(*pipe, 4096, &got);
    pipe->Done(drained);
  });
  {
    ChunkPipeWriter writer(pipe);
    Result<MutableByteSpan> space = writer.AppendSpace(1, 1024);  // outstanding at the end
    ASSERT_TRUE(space.has_value());
  }  // destroyed without Commit: abandoned, waits for the task
  task.join();
  EXPECT_EQ(drained.code(), Code::kCancelled);
  EXPECT_EQ(got.size(), 1500u) << "queued bytes before the abandon are still handed over";
}

TEST(ChunkPipe, TheTaskEndingFirstAnswersTheSession) {
  {
    ChunkPipe pipe(10s, 1024, 4096);
    pipe.Done(Status::NotFound(Subject::kBucket, "bkt"));
    Result<MutableByteSpan> space = pipe.Lend(10);
    ASSERT_FALSE(space.has_value());
    EXPECT_EQ(space.error().subject(), Subject::kBucket);
    Result<uint64_t> closed = pipe.Close(true);
    ASSERT_FALSE(closed.has_value());
    EXPECT_EQ(closed.error().subject(), Subject::kBucket);
  }
  {
    // PutChunks took every byte it needed and succeeded: more body is too long.
    ChunkPipe pipe(10s, 1024, 4096);
    Result<MutableByteSpan> space = pipe.Lend(10);
    ASSERT_TRUE(space.has_value());
    pipe.Done(Status::Ok());
    const Status queued = pipe.Queue(10);
    EXPECT_EQ(queued.code(), Code::kInvalidArgument);
    EXPECT_EQ(queued.field(), "Content-Length");
    EXPECT_EQ(pipe.Lend(10).error().field(), "Content-Length");
  }
  {
    ChunkPipe pipe(10s, 1024, 4096);
    EXPECT_EQ(pipe.Queue(1).code(), Code::kFailedPrecondition) << "no lend";
    ASSERT_TRUE(pipe.Lend(10).has_value());
    EXPECT_EQ(pipe.Lend(10).error().code(), Code::kFailedPrecondition) << "lend outstanding";
    EXPECT_EQ(pipe.Queue(11).code(), Code::kFailedPrecondition) << "more than lent";
    EXPECT_EQ(pipe.Lend(0).error().code(), Code::kInvalidArgument);
  }
}

}  // namespace
}  // namespace oc::gateway
