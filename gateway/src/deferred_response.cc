#include "deferred_response.h"

namespace oc::gateway {

void DeferredTracker::Add() {
  std::lock_guard lock(mu_);
  ++pending_;
}

void DeferredTracker::Done() {
  std::lock_guard lock(mu_);
  --pending_;
  cv_.notify_all();
}

void DeferredTracker::WaitIdle() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return pending_ == 0; });
}

DeferredResponse::DeferredResponse(DeferredTracker* tracker) : tracker_(tracker) {
  tracker_->Add();
}

DeferredResponse::~DeferredResponse() {
  bool counted = false;
  {
    std::lock_guard lock(mu_);
    counted = counted_;
  }
  if (counted) {
    tracker_->Done();
  }
}

void DeferredResponse::Complete(Response response) {
  std::function<void()> wake;
  {
    std::lock_guard lock(mu_);
    response_ = std::move(response);
    wake = std::move(wake_);
    counted_ = false;
  }
  if (wake) {
    wake();  // posts to the session's io_context, which the tracker keeps alive until now
  }
  tracker_->Done();
}

void DeferredResponse::OnReady(std::function<void()> wake) {
  {
    std::lock_guard lock(mu_);
    if (!response_.has_value()) {
      wake_ = std::move(wake);
      return;
    }
  }
  wake();
}

Response DeferredResponse::Take() {
  std::lock_guard lock(mu_);
  Response r = std::move(*response_);
  response_.reset();
  return r;
}

}  // namespace oc::gateway
