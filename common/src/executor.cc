#include "oc/common/executor.h"

#include <exception>
#include <system_error>
#include <utility>

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
  std::lock_guard lock(mu_);
  if (stopping_) {
    return Status::Unavailable("shutting down");
  }
  const uint64_t admitted = uint64_t{running_} + queue_.size();
  if (admitted >= uint64_t{options_.threads} + options_.max_queued) {
    return Status::ResourceExhausted(
        options_.field, fmt::format("all {} workers busy and {} tasks queued", options_.threads,
                                    options_.max_queued));
  }
  queue_.push_back(std::move(task));
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
  return Status::Ok();
}

void BoundedExecutor::WorkerLoop() {
  std::unique_lock lock(mu_);
  for (;;) {
    ++idle_;
    cv_.wait(lock, [&] { return !queue_.empty() || stopping_; });
    --idle_;
    if (queue_.empty()) {
      return;  // stopping, and nothing left to run
    }
    std::function<void()> task = std::move(queue_.front());
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

void BoundedExecutor::Shutdown() {
  std::lock_guard join_lock(join_mu_);
  std::vector<std::thread> workers;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_all();
    workers.swap(workers_);
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

uint32_t BoundedExecutor::workers() const {
  std::lock_guard lock(mu_);
  return static_cast<uint32_t>(workers_.size());
}

}  // namespace oc
