#pragma once
// A fixed pool of worker threads running queued tasks in FIFO order. Used by RocksStore::ReadSlices
// to spread extent reads over StoreOptions::read_threads threads. Thread safety: Submit may be
// called from any thread; the destructor runs the queued tasks' remainder and joins.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "oc/common/thread_annotations.h"

namespace oc::storage {

class ThreadPool {
 public:
  explicit ThreadPool(uint32_t threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  uint32_t size() const { return static_cast<uint32_t>(workers_.size()); }
  void Submit(std::function<void()> task);

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_ OC_GUARDED_BY(mu_);
  bool stopping_ OC_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

// Counts outstanding tasks; Wait() returns once every Done() has been called.
class CountDown {
 public:
  explicit CountDown(uint32_t count) : count_(count) {}
  void Done();
  void Wait();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  uint32_t count_ OC_GUARDED_BY(mu_);
};

}  // namespace oc::storage
