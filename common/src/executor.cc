#include "oc/common/executor.h"

#include <algorithm>
#include <exception>
#include <system_error>
#include <utility>

#include <pthread.h>

#include "fmt/format.h"
#include "oc/common/check.h"
#include "oc/common/log.h"

namespace oc {
namespace {

const Logger kLog{"executor"};

}  // namespace

BoundedExecutor::BoundedExecutor(Options options) : options_(std::move(options)) {
  OC_CHECK(options_.threads > 0);
  if (options_.start_all) {
    std::lock_guard lock(mu_);
    for (uint32_t i = 0; i < options_.threads; ++i) {
      workers_.emplace_back([this] { WorkerLoop(); });
    }
  }
}

BoundedExecutor::~BoundedExecutor() { Shutdown(); }

Status BoundedExecutor::Submit(std::function<void()> task) {
  return Admit(Queued{std::move(task), nullptr, {}}, /*now_only=*/false);
}

Status BoundedExecutor::Submit(std::function<void()> task,
                               std::function<void(const Status&)> expired) {
  Queued q{std::move(task), std::move(expired), {}};
  if (options_.queue_timeout.count() > 0) {
    q.deadline = Clock::now() + options_.queue_timeout;
  } else {
    q.expired = nullptr;  // no limit: it cannot expire
  }
  return Admit(std::move(q), /*now_only=*/false);
}

Status BoundedExecutor::SubmitNow(std::function<void()> task) {
  return Admit(Queued{std::move(task), nullptr, {}}, /*now_only=*/true);
}

Status BoundedExecutor::Refusal() const {
  if (options_.max_queued == 0) {
    return Status::ResourceExhausted(options_.field,
                                     fmt::format("all {} workers are busy", options_.threads));
  }
  return Status::ResourceExhausted(
      options_.field,
      fmt::format("the admission queue is full ({} requests wait for {} busy workers)",
                  queue_.size(), options_.threads));
}

Status BoundedExecutor::Admit(Queued q, bool now_only) {
  std::lock_guard lock(mu_);
  if (stopping_) {
    return Status::Unavailable("shutting down");
  }
  const uint64_t admitted = uint64_t{running_} + queue_.size();
  if (now_only && admitted >= options_.threads) {
    return Status::ResourceExhausted(options_.field,
                                     fmt::format("all {} workers are busy", options_.threads));
  }
  if (admitted >= uint64_t{options_.threads} + options_.max_queued) {
    return Refusal();
  }
  const bool can_expire = q.expired != nullptr;
  if (can_expire && !timer_.joinable()) {
    try {
      timer_ = std::thread([this] { TimerLoop(); });
    } catch (const std::system_error& e) {
      return Status::ResourceExhausted(options_.field,
                                       fmt::format("cannot start the queue timer: {}", e.what()));
    }
  }
  queue_.push_back(std::move(q));
  // Every queued task needs a worker that will take it: an idle one (woken below) or a new
  // one while the bound allows; else a busy worker takes it when its task ends.
  if (queue_.size() > idle_ && workers_.size() < options_.threads) {
    try {
      workers_.emplace_back([this] { WorkerLoop(); });
    } catch (const std::system_error& e) {
      queue_.pop_back();
      return Status::ResourceExhausted(options_.field,
                                       fmt::format("cannot start a worker: {}", e.what()));
    }
  }
  cv_.notify_one();
  if (can_expire) {
    timer_cv_.notify_one();
  }
  return Status::Ok();
}

void BoundedExecutor::WorkerLoop() {
  if (!options_.thread_name.empty()) {
    (void)pthread_setname_np(pthread_self(), options_.thread_name.substr(0, 15).c_str());
  }
  std::unique_lock lock(mu_);
  for (;;) {
    ++idle_;
    cv_.wait(lock, [&] { return !queue_.empty() || stopping_; });
    --idle_;
    if (queue_.empty()) {
      return;  // stopping, and nothing left to run
    }
    std::function<void()> task = std::move(queue_.front().task);
    queue_.pop_front();
    ++running_;
    lock.unlock();
    // A task that throws must not end the process from a worker (nothing on the data path
    // throws, but a bug should cost its own request only).
    try {
      task();
    } catch (const std::exception& e) {
      kLog.Error("a task threw: {}", e.what());
    } catch (...) {
      kLog.Error("a task threw an unknown exception");
    }
    task = nullptr;  // what it captured is released before the task counts as ended
    lock.lock();
    --running_;
  }
}

// Drops queued tasks whose deadline passed. Every expiring task has the same queue_timeout
// and the queue is in submission order, so the first expiring task in it has the earliest
// deadline.
void BoundedExecutor::TimerLoop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    auto first = std::find_if(queue_.begin(), queue_.end(),
                              [](const Queued& q) { return q.expired != nullptr; });
    if (first == queue_.end()) {
      timer_cv_.wait(lock);
      continue;
    }
    // A copy: wait_until reads its time point again after waking, when a worker may have
    // taken (and freed) this entry meanwhile (ASan found it in client_test).
    const Clock::time_point deadline = first->deadline;
    if (Clock::now() < deadline) {
      timer_cv_.wait_until(lock, deadline);
      continue;
    }
    std::function<void(const Status&)> expired = std::move(first->expired);
    const size_t ahead = static_cast<size_t>(first - queue_.begin());
    queue_.erase(first);
    ++expired_;
    lock.unlock();
    expired(Status::ResourceExhausted(
        options_.field,
        fmt::format("the request waited the admission timeout ({} ms) without a free worker "
                    "({} requests were ahead of it, {} workers)",
                    options_.queue_timeout.count(), ahead, options_.threads)));
    expired = nullptr;
    lock.lock();
  }
}

void BoundedExecutor::Shutdown() {
  std::lock_guard join_lock(join_mu_);
  std::vector<std::thread> workers;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_all();
    timer_cv_.notify_all();
    workers.swap(workers_);
    if (timer_.joinable()) {
      workers.push_back(std::move(timer_));
    }
  }
  for (std::thread& t : workers) {
    OC_CHECK(t.get_id() != std::this_thread::get_id());
    t.join();
  }
}

uint32_t BoundedExecutor::in_flight() const {
  std::lock_guard lock(mu_);
  return running_ + static_cast<uint32_t>(queue_.size());
}

uint32_t BoundedExecutor::queued() const {
  std::lock_guard lock(mu_);
  return static_cast<uint32_t>(queue_.size());
}

uint64_t BoundedExecutor::expired() const {
  std::lock_guard lock(mu_);
  return expired_;
}

uint32_t BoundedExecutor::workers() const {
  std::lock_guard lock(mu_);
  return static_cast<uint32_t>(workers_.size());
}

}  // namespace oc
