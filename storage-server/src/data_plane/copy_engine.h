#pragma once
// CopyEngine: one thread that copies the bytes of in-place writes (UcxLayerSink into a target
// attached in this process), so a request's assembler finds and pins the next slices while the
// previous ones are being copied: the shared-memory stand-in for an RDMA NIC's DMA engine.
// Tasks run in submission order; each task's `done` runs on the engine's thread right after
// its copy. The destructor runs every task already submitted, then stops.
// Thread safety: Submit may be called from any thread.

#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace oc::storage {

class CopyEngine {
 public:
  CopyEngine() : thread_([this] { Run(); }) {}
  ~CopyEngine() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  CopyEngine(const CopyEngine&) = delete;
  CopyEngine& operator=(const CopyEngine&) = delete;

  // Copies `n` bytes from `src` to `dst` (which stay valid until `done` runs), then runs `done`.
  void Submit(std::byte* dst, const std::byte* src, size_t n, std::function<void()> done) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      tasks_.push_back(Task{dst, src, n, std::move(done)});
    }
    cv_.notify_one();
  }

 private:
  struct Task {
    std::byte* dst;
    const std::byte* src;
    size_t n;
    std::function<void()> done;
  };

  void Run() {
    std::deque<Task> batch;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
        if (tasks_.empty()) {
          return;  // stopped, and nothing left
        }
        batch.swap(tasks_);
      }
      for (Task& t : batch) {
        std::memcpy(t.dst, t.src, t.n);
        t.done();
      }
      batch.clear();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> tasks_;  // guarded by mu_
  bool stop_ = false;       // guarded by mu_
  std::thread thread_;      // last: starts once the members above exist
};

}  // namespace oc::storage
