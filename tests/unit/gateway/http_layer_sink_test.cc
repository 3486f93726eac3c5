// HttpLayerSink (gateway/src/http_layer_sink.h), the HTTP body of a descriptor GET: the body
// reader hands out the staging buffers' own bytes (Lend) in order, each buffer going back to
// the pool at the reader's next call, so a producer with a single buffer still gets through a
// payload many buffers long; Read and Lend may be mixed; the producer's error reaches the
// reader after the bytes queued before it. A reader that takes nothing loses its producer only
// while another request waits for the producer's worker, and then the session's close hook
// runs (docs/decisions/slow-body-readers.md).

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "http_layer_sink.h"

namespace oc::gateway {
namespace {

constexpr uint64_t kBufferBytes = 4096;

std::string Pattern(uint64_t n) {
  std::string s(n, '\0');
  for (uint64_t i = 0; i < n; ++i) {
    s[i] = static_cast<char>('a' + (i * 7 + i / 13) % 26);
  }
  return s;
}

// Writes `data` through the sink a buffer at a time, then Finish(final).
void Produce(HttpLayerSink& sink, const std::string& data, Status final) {
  uint64_t at = 0;
  while (at < data.size()) {
    Result<storage::StagingBuffer> b = sink.AcquireBuffer();
    ASSERT_TRUE(b.has_value()) << b.error();
    const uint64_t n = std::min<uint64_t>(kBufferBytes, data.size() - at);
    std::memcpy(b->bytes().data(), data.data() + at, n);
    ASSERT_TRUE(sink.Write(at, std::move(*b), n).ok());
    at += n;
  }
  ASSERT_EQ(sink.Finish(final).code(), final.code());
}

TEST(HttpLayerSinkTest, LentBuffersGoBackSoOneBufferCarriesAnyPayload) {
  const std::string data = Pattern(10 * kBufferBytes + 123);
  HttpLayerSink sink(1, kBufferBytes, std::chrono::seconds(10));
  std::unique_ptr<storage::ObjectReader> body = sink.Body(data.size());
  std::thread producer([&] { Produce(sink, data, Status::Ok()); });
  std::string got;
  bool read_turn = false;
  for (;;) {
    if (read_turn) {  // Read and Lend interleave on one reader
      std::string buf(1000, '\0');
      Result<uint64_t> n =
          body->Read(MutableByteSpan(reinterpret_cast<std::byte*>(buf.data()), buf.size()));
      ASSERT_TRUE(n.has_value()) << n.error();
      if (*n == 0) {
        break;
      }
      got.append(buf.data(), *n);
    } else {
      Result<ByteSpan> lent = body->Lend(3000);
      ASSERT_TRUE(lent.has_value()) << lent.error();
      if (lent->empty()) {
        break;
      }
      EXPECT_LE(lent->size(), 3000u);
      got.append(reinterpret_cast<const char*>(lent->data()), lent->size());
    }
    read_turn = !read_turn;
  }
  producer.join();
  EXPECT_EQ(got, data);
}

TEST(HttpLayerSinkTest, TheProducersErrorFollowsTheQueuedBytes) {
  const std::string data = Pattern(2 * kBufferBytes);
  HttpLayerSink sink(4, kBufferBytes, std::chrono::seconds(10));
  std::unique_ptr<storage::ObjectReader> body = sink.Body(3 * kBufferBytes);
  Produce(sink, data, Status::IOError("slice read failed"));
  std::string got;
  for (;;) {
    Result<ByteSpan> lent = body->Lend(kBufferBytes);
    if (!lent.has_value()) {
      EXPECT_EQ(lent.error().code(), Code::kIOError);
      break;
    }
    ASSERT_FALSE(lent->empty()) << "an error must not look like the end of the body";
    got.append(reinterpret_cast<const char*>(lent->data()), lent->size());
  }
  EXPECT_EQ(got, data);
}

// Fills the sink's every buffer with the start of `data`; returns the bytes written.
uint64_t FillAll(HttpLayerSink& sink, uint32_t buffers, const std::string& data) {
  uint64_t at = 0;
  for (uint32_t i = 0; i < buffers; ++i) {
    Result<storage::StagingBuffer> b = sink.AcquireBuffer();
    EXPECT_TRUE(b.has_value()) << b.error();
    if (!b.has_value()) {
      return at;
    }
    std::memcpy(b->bytes().data(), data.data() + at, kBufferBytes);
    EXPECT_TRUE(sink.Write(at, std::move(*b), kBufferBytes).ok());
    at += kBufferBytes;
  }
  return at;
}

TEST(HttpLayerSinkTest, AStalledReaderLosesItsProducerWhenOthersWaitAndItsConnectionCloses) {
  const std::string data = Pattern(4 * kBufferBytes);
  HttpLayerSink::StallPolicy stall;
  stall.step = std::chrono::milliseconds(10);
  stall.others_waiting = [] { return true; };
  // A timeout far beyond a step: without the stall rule the wait ends only there, with no close.
  HttpLayerSink sink(2, kBufferBytes, std::chrono::seconds(5), std::move(stall));
  std::unique_ptr<storage::ObjectReader> body = sink.Body(data.size());
  std::atomic<int> closed{0};
  sink.StallHook()([&] { ++closed; });
  FillAll(sink, 2, data);
  // The reader takes nothing: the producer's next buffer never comes back.
  Result<storage::StagingBuffer> next = sink.AcquireBuffer();
  ASSERT_FALSE(next.has_value());
  EXPECT_EQ(next.error().code(), Code::kUnavailable);
  EXPECT_EQ(closed.load(), 1);
  // A hook installed after the producer gave up runs at once.
  std::atomic<int> late{0};
  sink.StallHook()([&] { ++late; });
  EXPECT_EQ(late.load(), 1);
  // The bytes queued before are still the reader's, then the producer's error.
  ASSERT_EQ(sink.Finish(next.error()).code(), Code::kUnavailable);
  Result<ByteSpan> lent = body->Lend(kBufferBytes);
  ASSERT_TRUE(lent.has_value()) << lent.error();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(lent->data()), lent->size()),
            data.substr(0, kBufferBytes));
}

TEST(HttpLayerSinkTest, AStalledReaderKeepsItsProducerWhileNobodyWaits) {
  const std::string data = Pattern(3 * kBufferBytes);
  std::atomic<int> asked{0};
  HttpLayerSink::StallPolicy stall;
  stall.step = std::chrono::milliseconds(10);
  stall.others_waiting = [&] {
    ++asked;
    return false;
  };
  HttpLayerSink sink(2, kBufferBytes, std::chrono::minutes(10), std::move(stall));
  std::unique_ptr<storage::ObjectReader> body = sink.Body(data.size());
  std::atomic<int> closed{0};
  sink.StallHook()([&] { ++closed; });
  const uint64_t filled = FillAll(sink, 2, data);
  std::thread producer([&] {
    Result<storage::StagingBuffer> b = sink.AcquireBuffer();  // waits for the reader
    ASSERT_TRUE(b.has_value()) << b.error();
    std::memcpy(b->bytes().data(), data.data() + filled, kBufferBytes);
    ASSERT_TRUE(sink.Write(filled, std::move(*b), kBufferBytes).ok());
    ASSERT_TRUE(sink.Finish(Status::Ok()).ok());
  });
  // State, not time: the producer has found the reader stalled twice and nobody waiting.
  while (asked.load() < 2) {
    std::this_thread::yield();
  }
  std::string got;
  for (;;) {
    Result<ByteSpan> lent = body->Lend(kBufferBytes);
    ASSERT_TRUE(lent.has_value()) << lent.error();
    if (lent->empty()) {
      break;
    }
    got.append(reinterpret_cast<const char*>(lent->data()), lent->size());
  }
  producer.join();
  EXPECT_EQ(got, data);
  EXPECT_EQ(closed.load(), 0);
}

}  // namespace
}  // namespace oc::gateway
