// objectcache._native's shared machinery (binding.h): the callback pump that runs per-layer
// callbacks off the caller's thread, the Core that owns the client, registered buffers, and
// the Future behind every *_async call.
#include <pybind11/stl.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "binding.h"

namespace oc::python {

// ------------------------------------------------------------------------------------------
// CallbackPump

CallbackPump::~CallbackPump() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) {
    thread_.join();
  }
}

void CallbackPump::Post(std::shared_ptr<Counter> counter, uint32_t layer) {
  {
    std::lock_guard lock(counter->mu);
    ++counter->queued;
  }
  std::lock_guard lock(mu_);
  if (!thread_.joinable()) {
    thread_ = std::thread([this] { Loop(); });
  }

  queue_.emplace_back(std::move(counter), layer);
  cv_.notify_one();
}

std::thread::id CallbackPump::thread_id() {
  std::lock_guard lock(mu_);
  return thread_.get_id();
}

void CallbackPump::Loop() {
  for (;;) {
    std::pair<std::shared_ptr<Counter>, uint32_t> item;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) {
        return;  // stopping, and every queued callback ran
      }
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    Counter& c = *item.first;
    {
      py::gil_scoped_acquire gil;
      PyObject* callback = c.callback;  // null once its Transfer is gone
      if (callback != nullptr) {
        Py_INCREF(callback);
        PyObject* result = PyObject_CallFunction(callback, "I", item.second);
        if (result == nullptr) {
          // A callback that raises cannot fail the transfer (the bytes are already there):
          // Python reports it as an unraisable exception, as for a __del__ that raises.
          PyErr_WriteUnraisable(callback);
        }
        Py_XDECREF(result);
        Py_DECREF(callback);
      }
    }
    std::lock_guard lock(c.mu);
    ++c.ran;
    c.cv.notify_all();
  }
}

// ------------------------------------------------------------------------------------------
// Core and its holders

Core::~Core() {
  if (tasks != nullptr) {
    tasks->Shutdown();
  }
  client.reset();  // waits for descriptor GETs in flight (none: their handles hold Core)
}

RegisteredBuffer* Core::FindRegistered(uint64_t address, uint64_t length) {
  auto it = registered.upper_bound(address);
  if (it == registered.begin()) {
    return nullptr;
  }
  --it;
  RegisteredBuffer* b = it->second;
  return address + length <= b->address() + b->size() ? b : nullptr;
}

void DropCore(std::shared_ptr<Core>& core) {
  py::gil_scoped_release release;
  core.reset();
}

RegisteredBuffer::RegisteredBuffer(std::shared_ptr<Core> core,
                                   std::unique_ptr<client::TargetBuffer> target,
                                   PinnedBuffer pinned, py::object owner)
    : core_(std::move(core)),
      target_(std::move(target)),
      pinned_(std::move(pinned)),
      owner_(std::move(owner)) {
  std::lock_guard lock(core_->mu);
  core_->registered[target_->address()] = this;
}

RegisteredBuffer::~RegisteredBuffer() {
  // No transfer uses it: each holds a reference to this object while it runs.
  if (target_ != nullptr) {
    {
      std::lock_guard lock(core_->mu);
      core_->registered.erase(target_->address());
    }
    py::gil_scoped_release release;
    target_.reset();
  }
  pinned_.Release();
  owner_ = py::none();
  DropCore(core_);
}

void RegisteredBuffer::Close() {
  if (target_ == nullptr) {
    return;
  }
  if (in_flight.load() > 0) {
    throw py::value_error("the buffer is in use by a transfer; wait for it first");
  }
  {
    std::lock_guard lock(core_->mu);
    core_->registered.erase(target_->address());
  }
  py::gil_scoped_release release;  // unmapping waits for late UCX receives (bounded)
  target_.reset();
}

client::TargetBuffer& RegisteredBuffer::target() {
  if (target_ == nullptr) {
    throw py::value_error("the buffer was closed");
  }
  return *target_;
}
uint64_t RegisteredBuffer::address() const { return target_ ? target_->address() : 0; }
uint64_t RegisteredBuffer::size() const { return target_ ? target_->length() : 0; }

// ------------------------------------------------------------------------------------------
// Future

Future::Future(std::shared_ptr<Core> core, Work work, std::vector<PinnedBuffer> pins,
               py::object keep_alive)
    : core_(std::move(core)),
      state_(std::make_shared<State>()),
      pins_(std::move(pins)),
      keep_alive_(std::move(keep_alive)) {
  Status s = core_->tasks->Submit([state = state_, work = std::move(work)] {
    Convert convert = work();
    std::lock_guard lock(state->mu);
    state->convert = std::move(convert);
    state->ready = true;
    state->cv.notify_all();
  });
  if (!s.ok()) {
    state_->ready = true;
    Raise(s);
  }
}

Future::~Future() {
  {
    py::gil_scoped_release release;
    std::unique_lock lock(state_->mu);
    state_->cv.wait(lock, [&] { return state_->ready; });
  }
  pins_.clear();
  keep_alive_ = py::none();
  DropCore(core_);
}

bool Future::done() const {
  std::lock_guard lock(state_->mu);
  return state_->ready;
}

bool Future::WaitReady(std::optional<std::chrono::milliseconds> bound) {
  py::gil_scoped_release release;  // only the C++ wait runs without the GIL
  std::unique_lock lock(state_->mu);
  if (!bound.has_value()) {
    state_->cv.wait(lock, [&] { return state_->ready; });
    return true;
  }
  return state_->cv.wait_for(lock, *bound, [&] { return state_->ready; });
}

py::object Future::Result(std::optional<std::chrono::milliseconds> bound) {
  if (!WaitReady(bound)) {
    Raise(client::TimedOut("timed out waiting for the call"));
  }
  Convert convert;
  {
    std::lock_guard lock(state_->mu);
    convert = state_->convert;
  }
  return convert();
}

py::object Future::result(std::optional<double> timeout) { return Result(TimeoutArg(timeout)); }

py::object Future::exception(std::optional<double> timeout) {
  const std::optional<std::chrono::milliseconds> bound = TimeoutArg(timeout);  // raises here
  try {
    Result(bound);
  } catch (py::error_already_set& e) {
    if (e.matches(PyExc_TimeoutError) && !done()) {
      throw;
    }
    return e.value();
  }
  return py::none();
}

}  // namespace oc::python
