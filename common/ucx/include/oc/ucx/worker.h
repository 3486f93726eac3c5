#pragma once
// UcxWorker: a ucp context (RMA + AM + wakeup) with one worker, driven by a dedicated progress
// thread (docs/design.md, "Data plane"). The storage server's UcxDataPlane and the client's
// UcxReceiver each own one.
//
// Threading model: one thread owns the worker. UcxWorker runs a progress thread that is the
// only caller of the worker (UCS_THREAD_MODE_SINGLE): it calls ucp_worker_progress, runs tasks
// other threads hand it with Submit()/Call() (posting puts, creating and closing endpoints,
// mapping memory), and when idle sleeps on the worker's event fd (ucp_worker_arm + poll,
// bounded by kIdlePollMs so a lost wakeup costs at most that). Every completion callback and
// active-message handler therefore runs on that thread too; none may block. Rejected: a
// UCS_THREAD_MODE_MULTI worker posted to from any thread: UCX 1.13 crashed inside its TCP
// progress in about one test run in seven that way
// (docs/decisions/data-plane-one-thread-per-worker.md).
// Thread safety: every UcxWorker method may be called from any thread unless it says
// REQUIRES: the owning thread.

#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "oc/common/bytes.h"
#include "oc/common/result.h"

namespace oc::ucx {

struct WorkerOptions {
  // UCX transports, as UCX_TLS spells them ("tcp", "shm,cma"...); empty leaves UCX's own
  // configuration (the UCX_TLS environment variable, else every transport the machine has).
  // Default: ""
  std::string transports;
  // Interval of UCX's keepalive on endpoints with peer error handling: how soon a silently
  // vanished peer is noticed; empty keeps UCX's default.
  // Default: ""
  std::string keepalive_interval;
  // Longest wait, at teardown, for the worker's endpoints to flush (DestroyWorker). Past it
  // the worker is leaked rather than destroyed: UCX 1.13 aborts the process when a worker
  // is destroyed with a message still pending on a lane.
  // Default: 5 s
  std::chrono::milliseconds teardown_timeout{5'000};
  // The worker's client_id, sent in the connection requests of endpoints it creates to a
  // listener (oc/descriptor/data_plane_wire.h: kClientIdSharedMemory).
  // Default: 0
  uint64_t client_id = 0;
};

class UcxWorker {
 public:
  // Creates the context and worker; the progress thread starts with Start(). Any UCX failure
  // translated by FromUcs (status.h).
  static Result<std::unique_ptr<UcxWorker>> Create(const WorkerOptions& options);

  // Starts the progress thread. Until then (and after Stop) the creating thread owns the
  // worker and Submit/Call run tasks inline. Separate from Create so that owners can register
  // active-message handlers and map memory first. REQUIRES: called once.
  void Start();

  // Stops the progress thread, then runs any tasks still queued, on the calling thread, which
  // owns the worker from then on: no callback or handler runs any more except inside calls it
  // makes. Owners call it before tearing down what callbacks touch. Idempotent.
  void Stop();

  // Runs `task` on the thread that owns the worker, after every task submitted before it:
  // queued for the progress thread (which is woken), or run now if the caller is that thread
  // or the thread is not running.
  void Submit(std::function<void()> task);

  // Queues `task` for the progress thread's next turn even when called on that thread: how a
  // UCX callback has work done outside any callback (closing endpoints). Tasks queued while
  // the thread is stopped run at the next Stop() or never, when the worker goes first.
  void Defer(std::function<void()> task);

  // Runs `f` on the owning thread as Submit does and waits for its result (f must return a
  // value). Never call it while holding a lock that a callback or task may take.
  template <typename F>
  auto Call(F&& f) -> std::invoke_result_t<F> {
    using R = std::invoke_result_t<F>;
    if (!running_.load(std::memory_order_acquire) || OnProgressThread()) {
      return f();
    }
    std::mutex mu;
    std::condition_variable cv;
    std::optional<R> result;
    Submit([&] {
      R r = f();
      std::lock_guard<std::mutex> lock(mu);
      result.emplace(std::move(r));
      cv.notify_all();
    });
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return result.has_value(); });
    return std::move(*result);
  }

  bool OnProgressThread() const {
    return std::this_thread::get_id() == progress_thread_.load(std::memory_order_acquire);
  }

  // Progresses the worker on the calling thread until `done()` or `deadline`; false if the
  // deadline passed first. REQUIRES: the caller owns the worker (after Stop()) and is not
  // inside a UCX callback.
  template <typename Done>
  bool ProgressUntil(Done&& done, std::chrono::steady_clock::time_point deadline) {
    while (!done()) {
      if (std::chrono::steady_clock::now() >= deadline) {
        return false;
      }
      (void)ucp_worker_progress(worker_);
    }
    return true;
  }

  // Flushes every endpoint of the worker, those UCX created for peers that connected to it
  // included (their wireup replies), progressing until the flush completes or `deadline`.
  // True once nothing is pending on any lane. REQUIRES: as ProgressUntil.
  bool FlushAll(std::chrono::steady_clock::time_point deadline);

  // Orderly teardown: stops the progress thread, flushes the worker (FlushAll, bounded by
  // WorkerOptions::teardown_timeout) and destroys it. UCX 1.13 asserts in
  // ucp_worker_destroy when a message is still pending on a lane (a wireup reply on a TCP
  // lane that was still connecting), so a worker that does not flush in time is leaked,
  // logged, instead: nothing progresses it any more, so UCX touches nothing after this.
  // Owners close their own endpoints first (with a flush, progressing until each close
  // completes). The context stays, so memory mapped with it can still be unmapped.
  // Idempotent.
  void DestroyWorker();

  ~UcxWorker();
  UcxWorker(const UcxWorker&) = delete;
  UcxWorker& operator=(const UcxWorker&) = delete;

  ucp_context_h context() const { return context_; }
  // REQUIRES: used on the owning thread (inside Submit/Call, a callback, or after Stop).
  ucp_worker_h worker() const { return worker_; }
  // This worker's address, what a peer passes to ucp_ep_create.
  ByteSpan address() const { return address_; }

  // True while the progress thread is inside ucp_worker_progress, i.e. when called from a
  // UCX callback, where progressing the worker again is not allowed. REQUIRES: owning thread.
  bool InCallback() const { return in_progress_; }

  // Makes the progress thread look at its worker and task queue now (ucp_worker_signal is
  // the one worker call UCX allows from any thread).
  void Wake() { (void)ucp_worker_signal(worker_); }

 private:
  // Upper bound on one idle sleep of the progress thread; only matters if a wakeup is lost.
  static constexpr int kIdlePollMs = 50;
  // After the last event the thread keeps polling this long before it sleeps: some
  // completions (shared-memory flushes, CMA) raise no event on the worker's fd, so a thread
  // that slept at once would wait out kIdlePollMs for each of them (measured: ~1 per layer).
  static constexpr std::chrono::microseconds kSpin{200};

  UcxWorker() = default;

  // Runs the queued tasks; true if there were any. The queue and batch_ trade storage, so
  // the idle spin allocates nothing.
  bool RunTasks();
  void ProgressLoop();

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  bool leaked_ = false;  // DestroyWorker gave up on the worker: the context stays too
  std::chrono::milliseconds teardown_timeout_{5'000};
  int efd_ = -1;
  std::vector<std::byte> address_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> running_{false};
  std::atomic<std::thread::id> progress_thread_{};
  bool in_progress_ = false;  // progress thread only
  std::thread thread_;
  std::mutex tasks_mu_;
  std::deque<std::function<void()>> tasks_;  // guarded by tasks_mu_
  std::deque<std::function<void()>> batch_;  // the owning thread's: tasks being run
};

}  // namespace oc::ucx
