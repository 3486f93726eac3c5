// The read-ahead windows' loads ahead (src/kv/read_ahead.h) over a real backend: with a worker
// pool, each window's next load runs on a worker while the request reads the window before
// it (from the first window on: layer 0's slice and layers 1-2 are read as before); the loads
// are the ones a request without workers makes (1, 2, 4, 8, 16 slices and the rest: 6 reads
// per 32-layer chunk), byte-exact; a pool that cannot take them leaves them to
// the request's thread; a chunk deleted under the request reads kMissing once what was
// loaded before is spent; a request that ends with loads in flight waits for them and gives
// its memory back.

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "composed_store.h"
#include "kv/read_ahead.h"
#include "kv/slice_source.h"
#include "oc/common/executor.h"
#include "store_test_util.h"

namespace oc::storage::test {
namespace {

using kv::SliceRead;
using kv::SliceStatus;

constexpr uint32_t kLayers = 32;
constexpr uint64_t kS = 4096;
constexpr int kChunks = 3;
constexpr uint64_t kWindow = 64 << 10;  // 16 slices
constexpr uint64_t kBudget = 8 << 20;

// Waits until a worker has taken every load started ahead (each is claimed once; the request
// thread takes any still unclaimed when it needs it, so this is what proves workers ran them).
void WaitForWorkers(const kv::ReadAhead& ra) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (ra.loads_ahead_by_workers() < ra.loads_ahead()) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline)
        << ra.loads_ahead_by_workers() << " of " << ra.loads_ahead() << " loads on workers";
    std::this_thread::yield();
  }
}

class LoadsAheadTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<Store>> s = OpenTestStore(
        GetParam(), SmallOptions(dir_.path(), LayoutOf(GetParam())), RandomRadosNamespace());
    ASSERT_TRUE(s.has_value()) << s.error();
    store_ = std::move(*s);
    ASSERT_TRUE(store_->CreateBucket("kvc", "me").ok());
    for (int j = 0; j < kChunks; ++j) {
      PutOptions o;
      o.chunk = ChunkShape{descriptor::StoredLayout::kL2TD, kLayers, kS};
      data_.push_back(Bytes(j + 11, kLayers * kS));
      ASSERT_TRUE(
          PutString(*store_, {"kvc", "c" + std::to_string(j)}, data_.back(), o).has_value());
    }
  }

  kv::SliceSource& source() { return dynamic_cast<kv::SliceSource&>(*BackendOf(*store_)); }

  // Reads layer l of every chunk through ra; the statuses, and the bytes read.
  std::pair<std::vector<SliceStatus>, std::string> ReadLayer(kv::ReadAhead& ra, uint32_t l) {
    std::string dest(kChunks * kS, '\0');
    std::vector<SliceRead> reads;
    std::vector<kv::WindowKey> keys;
    for (int j = 0; j < kChunks; ++j) {
      reads.push_back(
          SliceRead{"c" + std::to_string(j), l * kS,
                    MutableByteSpan(reinterpret_cast<std::byte*>(dest.data()) + j * kS, kS)});
      keys.push_back(kv::WindowKey{static_cast<uint64_t>(j), 0});
    }
    Result<std::vector<SliceStatus>> r = ra.Read(reads, keys);
    EXPECT_TRUE(r.has_value()) << r.error();
    return {r.has_value() ? *r : std::vector<SliceStatus>{}, dest};
  }

  // Reads every layer through ra, each byte-exact; with `wait_for_workers`, waits after each
  // layer until workers have claimed every load started ahead.
  void ReadEveryLayer(kv::ReadAhead& ra, bool wait_for_workers = false) {
    for (uint32_t l = 0; l < kLayers; ++l) {
      SCOPED_TRACE(l);
      auto [st, dest] = ReadLayer(ra, l);
      ASSERT_EQ(st, std::vector<SliceStatus>(kChunks, SliceStatus::kOk));
      for (int j = 0; j < kChunks; ++j) {
        ASSERT_TRUE(LayerIs(dest, j, l)) << j;
      }
      if (wait_for_workers) {
        ASSERT_NO_FATAL_FAILURE(WaitForWorkers(ra));
      }
    }
  }

  bool LayerIs(const std::string& dest, int j, uint32_t l) const {
    return std::string_view(dest).substr(j * kS, kS) ==
           std::string_view(data_[j]).substr(l * kS, kS);
  }

  testutil::TempDir dir_;
  std::unique_ptr<Store> store_;
  std::vector<std::string> data_;
};

INSTANTIATE_TEST_SUITE_P(Backends, LoadsAheadTest,
                         ::testing::Values(Backend::kRocksData, Backend::kRados), BackendName);

TEST_P(LoadsAheadTest, WorkersLoadTheNextWindowsAndTheReadsStayTheSame) {
  BoundedExecutor workers({.threads = 2, .max_queued = 16, .field = "test"});
  kv::ReadAheadBudget budget(kBudget);
  {
    const std::unique_ptr<kv::ReadSession> reads = source().OpenReads("kvc");
    kv::ReadAhead ra(*reads, {kWindow, &budget}, kChunks, 1, kLayers * kS, kS, &workers);
    ASSERT_TRUE(ra.active());
    EXPECT_EQ(ra.window_bytes(), kWindow);
    EXPECT_EQ(budget.left(), kBudget - 2 * kChunks * kWindow);  // a window and a load ahead
    ASSERT_NO_FATAL_FAILURE(ReadEveryLayer(ra, /*wait_for_workers=*/true));
    // Layer 0 read alone, layers 1-2 loaded when read, then 4, 8, 16 slices and the last one
    // loaded ahead.
    EXPECT_EQ(ra.source_reads(), kChunks * 6u);
    EXPECT_EQ(ra.loads_ahead(), kChunks * 4u);
    EXPECT_EQ(ra.loads_ahead_by_workers(), kChunks * 4u);
  }
  EXPECT_EQ(budget.left(), kBudget);
  EXPECT_EQ(budget.kept_bytes(), 2 * kChunks * kWindow);  // both buffers kept warm
}

TEST_P(LoadsAheadTest, APoolThatCannotTakeTheLoadsLeavesThemToTheRequest) {
  BoundedExecutor workers({.threads = 1, .max_queued = 0, .field = "test"});
  // The one worker is held for the whole request: every load ahead is refused.
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  bool holding = false;
  ASSERT_TRUE(workers
                  .Submit([&] {
                    std::unique_lock lock(mu);
                    holding = true;
                    cv.notify_all();
                    cv.wait(lock, [&] { return release; });
                  })
                  .ok());
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return holding; });
  }
  kv::ReadAheadBudget budget(kBudget);
  {
    const std::unique_ptr<kv::ReadSession> reads = source().OpenReads("kvc");
    kv::ReadAhead ra(*reads, {kWindow, &budget}, kChunks, 1, kLayers * kS, kS, &workers);
    ASSERT_NO_FATAL_FAILURE(ReadEveryLayer(ra));
    EXPECT_EQ(ra.source_reads(), kChunks * 6u);
    EXPECT_EQ(ra.loads_ahead(), kChunks * 4u);
    EXPECT_EQ(ra.loads_ahead_by_workers(), 0u);
  }
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  EXPECT_EQ(budget.left(), kBudget);
}

// A budget with room for full windows but not for their loads ahead: full windows, no loads
// ahead (smaller windows would cost reads); with less, smaller windows of whole slices (a
// window ending inside a slice costs a read more), the rest of the share given back.
TEST_P(LoadsAheadTest, WithoutRoomForLoadsAheadFullWindowsGoFirst) {
  BoundedExecutor workers({.threads = 2, .max_queued = 16, .field = "test"});
  kv::ReadAheadBudget budget(kChunks * kWindow + kWindow / 2);
  {
    const std::unique_ptr<kv::ReadSession> reads = source().OpenReads("kvc");
    kv::ReadAhead ra(*reads, {kWindow, &budget}, kChunks, 1, kLayers * kS, kS, &workers);
    EXPECT_EQ(ra.window_bytes(), kWindow);
    EXPECT_EQ(budget.left(), kWindow / 2);
    ASSERT_NO_FATAL_FAILURE(ReadEveryLayer(ra));
    EXPECT_EQ(ra.source_reads(), kChunks * 6u);
    EXPECT_EQ(ra.loads_ahead(), 0u);
  }
  kv::ReadAheadBudget small(kChunks * (kWindow / 2 + 100));
  {
    const std::unique_ptr<kv::ReadSession> reads = source().OpenReads("kvc");
    kv::ReadAhead ra(*reads, {kWindow, &small}, kChunks, 1, kLayers * kS, kS, &workers);
    EXPECT_EQ(ra.window_bytes(), kWindow / 2);
    EXPECT_EQ(small.left(), kChunks * 100u);
    for (uint32_t l = 0; l < kLayers; ++l) {
      ASSERT_EQ(ReadLayer(ra, l).first, std::vector<SliceStatus>(kChunks, SliceStatus::kOk));
    }
    // 1, 2, 4 and 8 slices, then windows of 8 (the cap): layers 15-22, 23-30, and 31.
    EXPECT_EQ(ra.source_reads(), kChunks * 7u);
  }
  EXPECT_EQ(small.left(), kChunks * (kWindow / 2 + 100));
}

// Chunk 1 deleted after layer 2: what was loaded before the delete may still be read (layers
// 3..6 were loaded ahead from layer 1 on); the load of layers 7..14 starts at layer 3, after
// it, and finds the chunk gone. The other chunks read on, byte-exact. (Each read asks the
// source afresh: a RADOS session would keep reading the version it resolved.)
TEST_P(LoadsAheadTest, AChunkDeletedUnderTheRequestReadsMissingOnceItsLoadsAreSpent) {
  BoundedExecutor workers({.threads = 2, .max_queued = 16, .field = "test"});
  kv::ReadAheadBudget budget(kBudget);
  kv::PlainReadSession reads(source(), "kvc");
  kv::ReadAhead ra(reads, {kWindow, &budget}, kChunks, 1, kLayers * kS, kS, &workers);
  for (uint32_t l = 0; l < 3; ++l) {
    ASSERT_EQ(ReadLayer(ra, l).first, std::vector<SliceStatus>(kChunks, SliceStatus::kOk));
  }
  ASSERT_TRUE(store_->Delete({"kvc", "c1"}).ok());
  for (uint32_t l = 3; l < 16; ++l) {
    SCOPED_TRACE(l);
    auto [st, dest] = ReadLayer(ra, l);
    ASSERT_EQ(st.size(), 3u);
    EXPECT_EQ(st[0], SliceStatus::kOk);
    EXPECT_EQ(st[2], SliceStatus::kOk);
    EXPECT_TRUE(LayerIs(dest, 0, l) && LayerIs(dest, 2, l));
    if (l >= 7) {
      EXPECT_EQ(st[1], SliceStatus::kMissing);
    } else if (st[1] == SliceStatus::kOk) {
      EXPECT_TRUE(LayerIs(dest, 1, l));  // loaded before the delete: the old bytes, exact
    }
  }
}

// Requests that end right after their first window, loads ahead still queued or running: each
// waits for the one a worker runs (ASan would report a write into freed windows) and gives
// every byte of its budget back.
TEST_P(LoadsAheadTest, ARequestEndingWithLoadsInFlightWaitsForThem) {
  BoundedExecutor workers({.threads = 2, .max_queued = 64, .field = "test"});
  kv::ReadAheadBudget budget(kBudget);
  for (int round = 0; round < 20; ++round) {
    const std::unique_ptr<kv::ReadSession> reads = source().OpenReads("kvc");
    kv::ReadAhead ra(*reads, {kWindow, &budget}, kChunks, 1, kLayers * kS, kS, &workers);
    for (uint32_t l = 0; l < 2; ++l) {
      ASSERT_EQ(ReadLayer(ra, l).first, std::vector<SliceStatus>(kChunks, SliceStatus::kOk));
    }
    EXPECT_EQ(ra.loads_ahead(), static_cast<uint64_t>(kChunks));  // layers 3..6
  }
  EXPECT_EQ(budget.left(), kBudget);
}

}  // namespace
}  // namespace oc::storage::test
