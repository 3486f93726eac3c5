#pragma once
// CopyEngine: the threads that copy the bytes of in-place writes (UcxLayerSink into a target
// attached in this process), so a request's assembler finds and pins the next slices while the
// previous ones are being copied: the shared-memory stand-in for an RDMA NIC's DMA engine.
// With several threads one request's writes are copied on several cores at once, and a copy of
// at least 2 x kSplitBytes is cut into pieces (one per thread at most, none below kSplitBytes)
// so a single large write is spread too (docs/decisions/one-descriptor-get-several-cores.md). Tasks
// start in submission order (one shared FIFO, so concurrent requests share the threads in turn) but
// may end out of order; each task's `done` runs once, on the thread that copied its last piece. The
// destructor runs every task already submitted, then stops.
// Thread safety: Submit may be called from any thread.

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <pthread.h>

namespace oc::storage {

class CopyEngine {
 public:
  // Smallest piece a copy is cut into: below ~1 MiB a piece's hand-off to another thread costs
  // more than the copy it spreads (a 1 MiB memcpy takes ~130 µs here).
  static constexpr size_t kSplitBytes = 1 << 20;

  // `threads` copy threads (at least 1), named "oc-copy".
  explicit CopyEngine(uint32_t threads) {
    const uint32_t n = std::max<uint32_t>(threads, 1);
    threads_.reserve(n);
    for (uint32_t i = 0; i < n; ++i) {
      threads_.emplace_back([this] { Run(); });
    }
  }
  ~CopyEngine() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) {
      t.join();
    }
  }
  CopyEngine(const CopyEngine&) = delete;
  CopyEngine& operator=(const CopyEngine&) = delete;

  uint32_t threads() const { return static_cast<uint32_t>(threads_.size()); }

  // Copies `n` bytes from `src` to `dst` (which stay valid until `done` runs), then runs `done`.
  void Submit(std::byte* dst, const std::byte* src, size_t n, std::function<void()> done) {
    const size_t pieces = std::max<size_t>(1, std::min<size_t>(threads_.size(), n / kSplitBytes));
    auto job = std::make_shared<Job>(static_cast<uint32_t>(pieces), std::move(done));
    const size_t step = n / pieces;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (size_t i = 0; i < pieces; ++i) {
        const size_t at = i * step;
        const size_t len = i + 1 == pieces ? n - at : step;
        tasks_.push_back(Task{dst + at, src + at, len, job});
      }
    }
    if (pieces == 1) {
      cv_.notify_one();
    } else {
      cv_.notify_all();
    }
  }

 private:
  struct Job {
    Job(uint32_t pieces, std::function<void()> d) : left(pieces), done(std::move(d)) {}
    std::atomic<uint32_t> left;  // pieces not copied yet
    std::function<void()> done;
  };
  struct Task {
    std::byte* dst;
    const std::byte* src;
    size_t n;
    std::shared_ptr<Job> job;
  };

  void Run() {
    (void)pthread_setname_np(pthread_self(), "oc-copy");
    for (;;) {
      Task t;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
        if (tasks_.empty()) {
          return;  // stopped, and nothing left
        }
        t = std::move(tasks_.front());
        tasks_.pop_front();
      }
      std::memcpy(t.dst, t.src, t.n);
      if (t.job->left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        t.job->done();
      }
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> tasks_;            // guarded by mu_
  bool stop_ = false;                 // guarded by mu_
  std::vector<std::thread> threads_;  // last: start once the members above exist
};

}  // namespace oc::storage
