#pragma once
// OpWaiter: the completion of one non-blocking UCX operation (ucp_*_nbx) that a thread waits
// for with a timeout. The callback and the waiter each hold a reference, so a waiter that
// gives up (timeout) never leaves the callback writing into freed memory.
// Thread safety: OnComplete runs on the worker's owning thread (UcxWorker, worker.h),
// WaitAndRelease on any other; each reference is dropped exactly once.

#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace oc::ucx {

class OpWaiter {
 public:
  // A waiter holding two references: the caller's (WaitAndRelease) and the callback's
  // (OnComplete or Posted).
  static OpWaiter* New() { return new OpWaiter(); }

  // Completion callback for ucp_request_param_t (user_data = the OpWaiter). Frees the request.
  static void OnComplete(void* request, ucs_status_t status, void* user_data);

  // Takes the outcome of ucp_*_nbx: an immediate completion drops the callback's reference.
  void Posted(ucs_status_ptr_t sp);

  // Waits for completion up to `timeout`; UCS_ERR_TIMED_OUT if it did not come. Drops the
  // waiter's reference: the object must not be used afterwards.
  ucs_status_t WaitAndRelease(std::chrono::milliseconds timeout);

 private:
  OpWaiter() = default;
  void Unref();

  std::atomic<int> refs_{2};  // the waiter and the callback
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;             // guarded by mu_
  ucs_status_t status_ = UCS_OK;  // guarded by mu_
};

}  // namespace oc::ucx
