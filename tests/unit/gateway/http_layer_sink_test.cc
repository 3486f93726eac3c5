// HttpLayerSink (gateway/src/http_layer_sink.h), the HTTP body of a descriptor GET: the body
// reader hands out the staging buffers' own bytes (Lend) in order, each buffer going back to
// the pool at the reader's next call, so a producer with a single buffer still gets through a
// payload many buffers long; Read and Lend may be mixed; the producer's error reaches the
// reader after the bytes queued before it.

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace oc::gateway
