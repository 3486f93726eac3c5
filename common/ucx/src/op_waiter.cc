#include "oc/ucx/op_waiter.h"

namespace oc::ucx {

void OpWaiter::OnComplete(void* request, ucs_status_t status, void* user_data) {
  auto* self = static_cast<OpWaiter*>(user_data);
  {
    std::lock_guard<std::mutex> lock(self->mu_);
    self->status_ = status;
    self->done_ = true;
  }
  self->cv_.notify_all();
  ucp_request_free(request);
  self->Unref();
}

void OpWaiter::Posted(ucs_status_ptr_t sp) {
  if (!UCS_PTR_IS_PTR(sp)) {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = UCS_PTR_STATUS(sp);
    done_ = true;
    Unref();
  }
}

ucs_status_t OpWaiter::WaitAndRelease(std::chrono::milliseconds timeout) {
  ucs_status_t result = UCS_ERR_TIMED_OUT;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_for(lock, timeout, [&] { return done_; })) {
      result = status_;
    }
  }
  Unref();
  return result;
}

void OpWaiter::Unref() {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    delete this;
  }
}

}  // namespace oc::ucx
