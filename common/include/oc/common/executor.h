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
// let a burst of requests start unbounded threads (docs/decisions.md, "One bounded executor
// for descriptor work").
//
// Shutdown() (also the destructor) refuses new tasks with kUnavailable, lets every admitted
// task run to its end (queued ones included), and joins the workers: what a task references
// must outlive the executor's shutdown.
//
// Thread safety: every method may be called from any thread; a task may Submit() more work.
// REQUIRES: Shutdown() and the destructor are not called from one of the executor's tasks.

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
  };

  explicit BoundedExecutor(Options options);
  ~BoundedExecutor();  // Shutdown()
  BoundedExecutor(const BoundedExecutor&) = delete;
  BoundedExecutor& operator=(const BoundedExecutor&) = delete;

  // Admits `task`: it runs on a worker now, or after the tasks queued before it. OK when
  // admitted; kResourceExhausted (field options.field) when `threads` tasks run and
  // `max_queued` wait; kUnavailable after Shutdown(). A refused task is destroyed unrun.
  Status Submit(std::function<void()> task);

  // Stops admitting, waits for every admitted task to end, joins the workers. Idempotent.
  void Shutdown();

  uint32_t threads() const { return options_.threads; }
  // Tasks admitted and not yet ended (running or queued).
  uint32_t in_flight() const;
  // Worker threads started so far (never more than threads()).
  uint32_t workers() const;

 private:
  void WorkerLoop();

  const Options options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_ OC_GUARDED_BY(mu_);
  std::vector<std::thread> workers_ OC_GUARDED_BY(mu_);
  uint32_t idle_ OC_GUARDED_BY(mu_) = 0;     // workers waiting for a task
  uint32_t running_ OC_GUARDED_BY(mu_) = 0;  // tasks taken by a worker, not yet ended
  bool stopping_ OC_GUARDED_BY(mu_) = false;
  std::mutex join_mu_;  // serialises Shutdown() callers
};

}  // namespace oc
