#include "rocks/thread_pool.h"

namespace oc::storage {

ThreadPool::ThreadPool(uint32_t threads) {
  workers_.reserve(threads);
  for (uint32_t i = 0; i < threads; ++i) {
    workers_.emplace_back([this] { Run(); });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) {
    t.join();
  }
}

void ThreadPool::Submit(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void ThreadPool::Run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) {
        return;  // stopping and drained
      }
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

void CountDown::Done() {
  std::lock_guard lock(mu_);
  if (--count_ == 0) {
    cv_.notify_all();
  }
}

void CountDown::Wait() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return count_ == 0; });
}

}  // namespace oc::storage
