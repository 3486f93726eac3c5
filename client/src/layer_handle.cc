// LayerHandle: waiting for the layers of a descriptor GET, on the UCX path (the Delivery)
// or the HTTP path (layers counted off the body by the exchange task).
#include "layer_handle.h"

#include <algorithm>

#include "fmt/format.h"
#include "oc/client/errors.h"

namespace oc::client {

LayerHandle::LayerHandle(std::unique_ptr<State> state) : state_(std::move(state)) {}
LayerHandle::LayerHandle(LayerHandle&&) noexcept = default;
LayerHandle& LayerHandle::operator=(LayerHandle&& other) noexcept {
  if (this != &other) {
    if (state_) {
      state_->WaitEnded();
    }
    state_ = std::move(other.state_);
  }
  return *this;
}
LayerHandle::~LayerHandle() {
  if (state_) {
    state_->WaitEnded();
  }
}

Status LayerHandle::WaitLayer(uint32_t layer) { return WaitLayer(layer, state_->timeout); }

Status LayerHandle::WaitLayer(uint32_t layer, std::chrono::milliseconds timeout) {
  State& s = *state_;
  if (layer >= s.num_layers) {
    return Status::OutOfRange(fmt::format("layer {} of a {}-layer request", layer, s.num_layers));
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  if (s.delivery == nullptr) {  // HTTP: the exchange task counts layers
    std::unique_lock lock(s.mu);
    if (!s.cv.wait_until(lock, deadline, [&] { return s.ready > layer || s.finished; })) {
      return TimedOut(fmt::format("timed out waiting for layer {}", layer));
    }
    if (s.ready > layer) {
      return Status::Ok();
    }
    if (!s.status.ok()) {
      return s.status;
    }
    return Status::OutOfRange(
        fmt::format("the request ended without layer {} ({} of {} chunks "
                    "matched)",
                    layer, s.result.summary.matched_chunks, s.result.summary.matched_chunks));
  }
  // UCX: the Delivery ends on the server's notifications, or on the HTTP answer's error
  // (State::Finish aborts it): one wait.
  return s.delivery->WaitLayer(layer, timeout);
}

Result<LayersResult> LayerHandle::Wait() { return Wait(state_->timeout); }

Result<LayersResult> LayerHandle::Wait(std::chrono::milliseconds timeout) {
  State& s = *state_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  {
    std::unique_lock lock(s.mu);
    if (!s.cv.wait_until(lock, deadline, [&] { return s.finished; })) {
      return TimedOut("timed out waiting for the gateway's answer");
    }
    if (!s.status.ok()) {
      return s.status;
    }
  }
  if (s.delivery != nullptr) {
    const auto left = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   deadline - std::chrono::steady_clock::now()),
                               std::chrono::milliseconds(0));
    OC_RETURN_IF_ERROR(s.delivery->Wait(left));
  }
  std::lock_guard lock(s.mu);
  return s.result;
}

bool LayerHandle::done() const {
  State& s = *state_;
  {
    std::lock_guard lock(s.mu);
    if (!s.finished) {
      return false;
    }
    if (!s.status.ok() || s.delivery == nullptr) {
      return true;
    }
  }
  return s.delivery->finished();
}

uint32_t LayerHandle::layers_ready() const {
  if (state_->delivery != nullptr) {
    return state_->delivery->layers_ready();
  }
  std::lock_guard lock(state_->mu);
  return state_->ready;
}

}  // namespace oc::client
