#pragma once
// DeferredResponse: a response that a descriptor task completes after its handler returned, so
// the Store pool thread that ran the handler is not held for the transfer (a descriptor GET
// into a data-plane target is answered only once its transfer ended). The handler returns a
// Response whose `deferred` is set; the session suspends its coroutine on it (WhenReady)
// and sends what the task gave Complete(). Completion posts to the session's io_context, so
// the server counts responses not yet completed (DeferredTracker) and waits for none before it
// destroys its io_contexts.
// Thread safety: Complete() is called once, from the task's thread; WhenReady once, from
// the session's coroutine; DeferredTracker methods from any thread.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "oc/common/thread_annotations.h"
#include "request.h"

namespace oc::gateway {

// The server's count of deferred responses whose task may still post a completion.
class DeferredTracker {
 public:
  void Add();
  void Done();
  // Blocks until every deferred response counted has completed (or was dropped).
  void WaitIdle();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t pending_ OC_GUARDED_BY(mu_) = 0;
};

class DeferredResponse {
 public:
  explicit DeferredResponse(DeferredTracker* tracker);
  ~DeferredResponse();  // counts it done if Complete() never ran (the task was refused)
  DeferredResponse(const DeferredResponse&) = delete;
  DeferredResponse& operator=(const DeferredResponse&) = delete;

  // The task's answer; wakes the session if it is waiting.
  void Complete(Response response);
  // Runs `wake` once the response is complete: at once (on this thread) if it already is,
  // else on Complete()'s thread.
  void OnReady(std::function<void()> wake);
  // The completed response. REQUIRES: OnReady's `wake` ran.
  Response Take();

 private:
  DeferredTracker* const tracker_;
  std::mutex mu_;
  std::optional<Response> response_ OC_GUARDED_BY(mu_);
  std::function<void()> wake_ OC_GUARDED_BY(mu_);
  bool counted_ OC_GUARDED_BY(mu_) = true;  // still in the tracker's count
};

// Suspends the calling coroutine until `pending` completes, resuming it on its own executor
// (then pending->Take() has the response). No thread waits meanwhile. It returns nothing: GCC
// 12 mishandles a class-type co_await result used in an assignment (a double destruction).
inline boost::asio::awaitable<void> WhenReady(const std::shared_ptr<DeferredResponse>& pending) {
  return boost::asio::async_initiate<decltype(boost::asio::use_awaitable), void()>(
      [pending](auto handler) {
        auto executor = boost::asio::get_associated_executor(handler);
        auto shared = std::make_shared<decltype(handler)>(std::move(handler));
        pending->OnReady([executor, shared] {
          boost::asio::post(executor, [shared]() mutable { (*shared)(); });
        });
      },
      boost::asio::use_awaitable);
}

}  // namespace oc::gateway
