#pragma once
// BoundedExecutor: runs blocking tasks on at most `threads` worker threads, with at most
// `max_queued` more tasks waiting their turn (in submission order). Submit() never blocks: a
// task that finds every worker busy and the queue full is refused with kResourceExhausted
// naming the configured field, so a front end can answer "slow down" instead of holding a
// thread of its own while it waits. Workers start on demand, or all at construction
// (Options::start_all), and stay until Shutdown().
//
// It exists for work that holds a thread for a long time while mostly waiting (a descriptor
// transfer waits on sockets, bounded pipes and the data plane): one thread per request would
// let a burst of requests start unbounded threads (docs/decisions/one-bounded-executor.md).
//
// A task submitted with an `expired` callback waits in the queue at most
// Options::queue_timeout: if no worker took it by then it leaves the queue unrun and
// `expired` runs instead, on the executor's timer thread (started with the first such task),
// with a kResourceExhausted naming the field and saying that the wait timed out. A front end
// answers "slow down" from it, so a queued request that holds no thread of its own (a
// suspended coroutine, a deferred response) is bounded in number (max_queued) and in time
// (docs/decisions/many-clients-admission-queue.md).
//
// Shutdown() (also the destructor) refuses new tasks with kUnavailable, lets every admitted
// task run to its end (queued ones included), and joins the workers: what a task references
// must outlive the executor's shutdown.
//
// Thread safety: every method may be called from any thread; a task may Submit() more work.
// REQUIRES: Shutdown() and the destructor are not called from one of the executor's tasks.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "oc/common/status.h"
#include "oc/common/thread_annotations.h"

namespace oc {

class BoundedExecutor {
 public:
  struct Options {
    // Tasks running at once (each on its own worker). REQUIRES: > 0.
    uint32_t threads = 1;
    // Tasks admitted beyond `threads`, waiting for a worker; 0 admits a task only when a
    // worker can start it at once.
    uint32_t max_queued = 0;
    // The config field that sets `threads`, named by the kResourceExhausted refusal.
    std::string field;
    // Start every worker at construction (a server's pool: its thread count is fixed from
    // the start, whatever the load) instead of on demand.
    bool start_all = false;
    // Longest wait in the queue of a task submitted with an `expired` callback; 0: no limit.
    std::chrono::milliseconds queue_timeout{0};
    // Name of the worker threads as tools show them (pthread_setname_np: at most 15
    // characters); "" leaves the process's name. Profiles and the per-thread CPU the
    // benchmarks sample tell pools apart by it.
    std::string thread_name;
  };

  explicit BoundedExecutor(Options options);
  ~BoundedExecutor();  // Shutdown()
  BoundedExecutor(const BoundedExecutor&) = delete;
  BoundedExecutor& operator=(const BoundedExecutor&) = delete;

  // Admits `task`: it runs on a worker now, or after the tasks queued before it. OK when
  // admitted; kResourceExhausted (field options.field) when `threads` tasks run and
  // `max_queued` wait; kUnavailable after Shutdown(). A refused task is destroyed unrun.
  Status Submit(std::function<void()> task);
  // As Submit; a task still queued after options.queue_timeout is dropped unrun and
  // `expired` runs instead (on the timer thread; it must not block) with kResourceExhausted
  // naming options.field. Exactly one of `task` and `expired` runs once admitted.
  Status Submit(std::function<void()> task, std::function<void(const Status&)> expired);
  // Admits `task` only if a worker can start it now, whatever max_queued allows (work whose
  // wait would hold a thread or memory elsewhere); else kResourceExhausted as Submit.
  Status SubmitNow(std::function<void()> task);

  // Stops admitting, waits for every admitted task to end, joins the workers. Idempotent.
  void Shutdown();

  uint32_t threads() const { return options_.threads; }
  // Tasks admitted and not yet ended (running or queued).
  uint32_t in_flight() const;
  // Tasks waiting in the queue now.
  uint32_t queued() const;
  // Queued tasks dropped at their queue_timeout so far.
  uint64_t expired() const;
  // Worker threads started so far (never more than threads()).
  uint32_t workers() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Queued {
    std::function<void()> task;
    std::function<void(const Status&)> expired;  // null: waits as long as it takes
    Clock::time_point deadline;
  };

  Status Admit(Queued q, bool now_only);
  Status Refusal() const OC_REQUIRES(mu_);
  void WorkerLoop();
  void TimerLoop();

  const Options options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable timer_cv_;
  std::deque<Queued> queue_ OC_GUARDED_BY(mu_);
  std::vector<std::thread> workers_ OC_GUARDED_BY(mu_);
  std::thread timer_ OC_GUARDED_BY(mu_);     // started with the first task that can expire
  uint32_t idle_ OC_GUARDED_BY(mu_) = 0;     // workers waiting for a task
  uint32_t running_ OC_GUARDED_BY(mu_) = 0;  // tasks taken by a worker, not yet ended
  uint64_t expired_ OC_GUARDED_BY(mu_) = 0;
  bool stopping_ OC_GUARDED_BY(mu_) = false;
  std::mutex join_mu_;  // serialises Shutdown() callers
};

}  // namespace oc
