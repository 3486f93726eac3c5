#pragma once
// LayerHandle::State: what a descriptor GET in flight shares between the task running its
// HTTP exchange on the client's request executor (descriptor_calls.cc) and the caller waiting
// on the LayerHandle (layer_handle.cc): on the UCX path the Delivery that counts layers
// landed, on the HTTP path the layers counted off the body; and the exchange's outcome. An
// HTTP answer that fails also fails the Delivery (Finish), so a waiter on the UCX path waits
// on the Delivery alone and wakes on either end.
// Thread safety: the fields marked "guarded by mu" are read and written under mu.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>

#include "client_impl.h"
#include "oc/client/client.h"

namespace oc::client {

struct LayerHandle::State {
  Client::Impl* impl = nullptr;
  uint32_t num_layers = 0;
  std::chrono::milliseconds timeout{0};
  std::unique_ptr<Delivery> delivery;  // UCX path; null on the HTTP path
  LayerCallback on_layer;              // HTTP path

  std::mutex mu;
  std::condition_variable cv;
  uint32_t ready = 0;     // HTTP path: layers landed; guarded by mu
  bool finished = false;  // the HTTP exchange ended; guarded by mu
  Status status;          // its outcome; guarded by mu
  LayersResult result;    // guarded by mu
  bool ended = false;     // the exchange's task returned; guarded by mu

  // The exchange's outcome. An error also ends the Delivery (UCX path): no notification
  // will come for a request the gateway refused or failed.
  void Finish(Status s, LayersResult r) {
    if (!s.ok() && delivery != nullptr) {
      delivery->Abort(s);
    }
    std::lock_guard lock(mu);
    status = std::move(s);
    result = std::move(r);
    finished = true;
    cv.notify_all();
  }
  // Called last by the exchange's task, after everything it owned is released: the handle
  // may then be destroyed.
  void End() {
    std::lock_guard lock(mu);
    ended = true;
    cv.notify_all();
  }
  void WaitEnded() {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return ended; });
  }
  void LayerLanded(uint32_t layer) {
    {
      std::lock_guard lock(mu);
      ready = layer + 1;
      cv.notify_all();
    }
    if (on_layer) {
      on_layer(layer);
    }
  }
};

}  // namespace oc::client
