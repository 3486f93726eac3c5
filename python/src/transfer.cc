// objectcache._native, the calls that move layer bytes: get_layers and its Transfer handle,
// put_chunks, and their bindings (binding.h; the shared machinery is in core.cc).
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "binding.h"
#include "fmt/format.h"
#include "oc/client/target_buffer.h"
#include "oc/descriptor/limits.h"

namespace oc::python {

namespace {

// ------------------------------------------------------------------------------------------
// get_layers

struct LayersInfo {
  uint64_t matched = 0;
  std::string mode;
  std::string request_id;
  uint64_t payload_bytes = 0;
  std::optional<uint64_t> gateway_us, storage_us, transfer_us;
  std::string via;
};

// The handle of one get_layers call. Once wait() saw the request end, the C++ handle, the
// buffer and its pin are released at once (not when Python drops the Transfer), so the same
// buffer can take the next request while this object is still referenced.
class Transfer {
 public:
  explicit Transfer(std::shared_ptr<Core> core) : core_(std::move(core)) {}
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;
  ~Transfer() {
    Release();
    DropCore(core_);
  }

  void WaitLayer(uint32_t layer, std::optional<double> timeout) {
    const std::chrono::milliseconds bound = TimeoutArg(timeout).value_or(DefaultTimeout());
    if (!handle_.has_value()) {  // ended: answer from what was recorded
      if (layer < final_layers_) {
        return;
      }
      if (result_.has_value() && !result_->has_value()) {
        Raise(result_->error());
      }
      Raise(
          Status::OutOfRange(fmt::format("the request ended without layer {} ({} of {} "
                                         "layers delivered)",
                                         layer, final_layers_, num_layers_)));
    }
    Status s;
    {
      py::gil_scoped_release release;
      s = handle_->WaitLayer(layer, bound);
    }
    if (!s.ok()) {
      Raise(s);  // objectcache.Timeout when its ErrorInfo says timed_out
    }
  }

  LayersInfo Wait(std::optional<double> timeout) {
    const std::chrono::milliseconds bound = TimeoutArg(timeout).value_or(DefaultTimeout());
    if (!result_.has_value()) {
      Result<client::LayersResult> r = Status::Internal("unset");
      {
        py::gil_scoped_release release;
        r = handle_->Wait(bound);
      }
      if (!r.has_value()) {
        const client::ErrorInfo* info = client::ErrorInfoOf(r.error());
        if (info != nullptr && info->timed_out) {
          Raise(r.error());  // the request still runs: keep the handle, the caller may wait again
        }
      }
      result_ = std::move(r);
      Release();  // the request ended: every callback runs before this returns
    }
    if (!result_->has_value()) {
      Raise(result_->error());
    }
    const client::LayersResult& r = **result_;
    LayersInfo info;
    info.matched = r.summary.matched_chunks;
    info.mode = std::string(descriptor::ServeModeName(r.summary.mode));
    info.request_id = r.summary.request_id;
    info.payload_bytes = r.summary.matched_chunks * layer_bytes_total_;
    info.gateway_us = r.summary.gateway_us;
    info.storage_us = r.summary.storage_us;
    info.transfer_us = r.summary.transfer_us;
    info.via = via_;
    return info;
  }

  bool done() const { return !handle_.has_value() || handle_->done(); }
  uint32_t layers_ready() const {
    return handle_.has_value() ? handle_->layers_ready() : final_layers_;
  }
  const std::string& via() const { return via_; }
  uint32_t num_layers() const { return num_layers_; }
  bool finished() const { return result_.has_value(); }

  std::shared_ptr<Core> core_;
  std::optional<client::LayerHandle> handle_;
  std::shared_ptr<CallbackPump::Counter> counter_;
  PinnedBuffer pin_;
  std::vector<py::object> keep_;  // the buffer (and RegisteredBuffer) given to get_layers
  RegisteredBuffer* registered_ = nullptr;
  std::unique_ptr<client::TargetBuffer> temp_target_;
  std::optional<Result<client::LayersResult>> result_;
  std::string via_;
  uint32_t num_layers_ = 0;
  uint32_t final_layers_ = 0;       // layers delivered, once the handle is released
  uint64_t layer_bytes_total_ = 0;  // L·S: bytes per matched chunk

 private:
  std::chrono::milliseconds DefaultTimeout() const { return core_->client->options().timeout; }

  // Waits for the request to end (the C++ handle's destructor), unmaps a buffer mapped for
  // this call only, waits for the callbacks, then lets go of the buffer. Idempotent.
  // REQUIRES: the GIL held.
  void Release() {
    {
      py::gil_scoped_release release;
      if (handle_.has_value()) {
        final_layers_ = handle_->layers_ready();
        handle_.reset();
      }
      temp_target_.reset();
      WaitCallbacks();
    }
    if (registered_ != nullptr) {
      registered_->in_flight.fetch_sub(1);
      registered_ = nullptr;
    }
    if (counter_ != nullptr) {
      Py_CLEAR(counter_->callback);
      counter_.reset();
    }
    pin_.Release();
    keep_.clear();
  }

  // Every callback posted for this transfer has run (after the request ended, none more
  // comes). Skipped on the callback thread itself: a callback waiting for its own transfer.
  void WaitCallbacks() {
    if (counter_ == nullptr || std::this_thread::get_id() == core_->pump.thread_id()) {
      return;
    }
    std::unique_lock lock(counter_->mu);
    counter_->cv.wait(lock, [&] { return counter_->ran == counter_->queued; });
  }
};

client::Client& ClientOf(PyClient& c) {
  if (c.core == nullptr || c.core->client == nullptr) {
    throw py::value_error("the client is closed");
  }
  return *c.core->client;
}

template <class T>
T Unwrap(Result<T> r) {
  if (!r.has_value()) {
    Raise(r.error());
  }
  return std::move(*r);
}

// The data plane, or the error that it cannot be opened.
Result<client::DataPlane*> Plane(PyClient& c) {
  client::Client& cl = ClientOf(c);
  py::gil_scoped_release release;  // the first call creates the UCX context
  return cl.data_plane();
}

// Where the server reads or writes over UCX: a RegisteredBuffer given as is, or the buffer
// `object` (pinned in *pin) inside a registered one, or mapped for this call (*temp). Raises
// TypeError for a buffer of the wrong kind and ValueError when `needed` bytes at `offset` do
// not fit, both named `field`, before anything is mapped or sent.
struct UcxSource {
  client::TargetBuffer* target = nullptr;
  uint64_t offset = 0;
  RegisteredBuffer* registered = nullptr;
  py::object registered_ref = py::none();  // keeps `registered` alive while it is used
};
UcxSource ResolveUcx(PyClient& c, const py::handle& object, uint64_t offset, uint64_t needed,
                     std::string_view field, PinnedBuffer* pin,
                     std::unique_ptr<client::TargetBuffer>* temp) {
  UcxSource src;
  if (py::isinstance<RegisteredBuffer>(object)) {
    src.registered = &object.cast<RegisteredBuffer&>();
    src.target = &src.registered->target();  // ValueError once closed
    CheckFits(src.target->length(), offset, needed, field);
    src.registered_ref = py::reinterpret_borrow<py::object>(object);
    src.offset = offset;
    return src;
  }
  *pin = PinnedBuffer(object, true, field);
  CheckFits(pin->size(), offset, needed, field);
  const auto address = reinterpret_cast<uint64_t>(pin->data()) + offset;
  {
    std::lock_guard lock(c.core->mu);
    if (RegisteredBuffer* r = c.core->FindRegistered(address, needed)) {
      src.registered = r;
      src.registered_ref = py::cast(r, py::return_value_policy::reference);
      src.target = &r->target();
      src.offset = address - r->address();
      return src;
    }
  }
  client::DataPlane* plane = Unwrap(Plane(c));
  *temp = Unwrap(plane->Wrap(MutableByteSpan(pin->data(), pin->size())));
  src.target = temp->get();
  src.offset = offset;
  return src;
}

}  // namespace

namespace {

// A closed RegisteredBuffer is refused by name, whichever way the call would use it.
void RefuseClosed(const py::handle& buffer) {
  if (py::isinstance<RegisteredBuffer>(buffer) && buffer.cast<RegisteredBuffer&>().closed()) {
    throw py::value_error("the buffer was closed");
  }
}

bool UseUcx(PyClient& c, const std::string& via) {
  if (via == "ucx") {
    return true;
  }
  if (via == "http") {
    return false;
  }
  if (via != "auto") {
    throw py::value_error("via must be 'auto', 'ucx' or 'http'");
  }
  return Plane(c).has_value();  // auto: UCX when this client can open its data plane
}

Transfer* GetLayers(PyClient& c, const std::string& bucket, const descriptor::Descriptor& d,
                    const py::object& buffer, uint64_t offset, const std::string& via,
                    const py::object& on_layer, uint32_t signal_every) {
  client::Client& cl = ClientOf(c);
  if (signal_every == 0) {
    throw py::value_error("signal_every must be at least 1");
  }
  RefuseClosed(buffer);
  const uint64_t needed = d.num_chunks() * d.num_layers * d.layer_bytes;
  auto t = std::make_unique<Transfer>(c.core);
  t->num_layers_ = d.num_layers;
  t->layer_bytes_total_ = uint64_t{d.num_layers} * d.layer_bytes;
  t->keep_.push_back(buffer);
  client::LayerCallback callback;
  if (!on_layer.is_none()) {
    if (!PyCallable_Check(on_layer.ptr())) {
      throw py::type_error("on_layer must be callable with the layer index");
    }
    t->counter_ = std::make_shared<CallbackPump::Counter>();
    t->counter_->callback = on_layer.inc_ref().ptr();
    // Layers land in order, so layer l landing means layers 0..l are in: with
    // signal_every = N only every N-th layer and the last are posted (issue 32: a consumer
    // that works in groups of layers pays one Python call per group, not per layer).
    const uint32_t last = d.num_layers - 1;
    callback = [pump = &c.core->pump, counter = t->counter_, signal_every, last](uint32_t layer) {
      if ((layer + 1) % signal_every == 0 || layer == last) {
        pump->Post(counter, layer);
      }
    };
  }
  Result<client::LayerHandle> h = Status::Internal("unset");
  if (UseUcx(c, via)) {
    t->via_ = "ucx";
    UcxSource src = ResolveUcx(c, buffer, offset, needed, "buffer", &t->pin_, &t->temp_target_);
    if (src.registered != nullptr) {
      t->registered_ = src.registered;
      t->keep_.push_back(src.registered_ref);
      src.registered->in_flight.fetch_add(1);
    }
    py::gil_scoped_release release;
    h = cl.GetLayers(bucket, d, *src.target, std::move(callback), src.offset);
  } else {
    t->via_ = "http";
    t->pin_ = PinnedBuffer(buffer, true, "buffer");
    CheckFits(t->pin_.size(), offset, needed, "buffer");
    const MutableByteSpan out(t->pin_.data() + offset, needed);
    py::gil_scoped_release release;
    h = cl.GetLayersHttp(bucket, d, out, std::move(callback));
  }
  t->handle_.emplace(Unwrap(std::move(h)));
  return t.release();
}

// ------------------------------------------------------------------------------------------
// put_chunks

py::object ReportToPy(const PutReport& r) {
  py::dict errors;
  for (const auto& [index, status] : r.errors) {
    errors[py::int_(index)] = MakeError(status);
  }
  py::object cls = py::module_::import("objectcache").attr("PutResult");
  return cls(r.chunks, r.bytes, r.request_ids, r.status, errors);
}

// Everything a put_chunks call needs, resolved with the GIL held.
// What the PUTs read, in C++ only (it may be used and destroyed without the GIL).
struct PutSource {
  ByteSpan body;
  client::TargetBuffer* source = nullptr;
  std::shared_ptr<client::TargetBuffer> temp;
  uint64_t offset = 0;
  RegisteredBuffer* registered = nullptr;  // in_flight counted until the PUTs end
};
struct PutPlan {
  PinnedBuffer pin;
  py::object registered_ref = py::none();
  std::shared_ptr<PutSource> src = std::make_shared<PutSource>();
};

PutPlan PlanPut(PyClient& c, const descriptor::Descriptor& d, const py::object& data,
                uint64_t offset, const std::string& via) {
  const uint64_t needed = d.num_chunks() * d.num_layers * d.layer_bytes;
  RefuseClosed(data);
  PutPlan p;
  PutSource& src = *p.src;
  if (via == "ucx") {
    std::unique_ptr<client::TargetBuffer> temp;
    UcxSource ucx = ResolveUcx(c, data, offset, needed, "data", &p.pin, &temp);
    src.temp = std::move(temp);
    src.source = ucx.target;
    src.offset = ucx.offset;
    src.registered = ucx.registered;
    p.registered_ref = ucx.registered_ref;
    if (src.registered != nullptr) {
      src.registered->in_flight.fetch_add(1);
    }
    return p;
  }
  if (via != "http") {
    throw py::value_error("via must be 'http' or 'ucx'");
  }
  p.pin = PinnedBuffer(data, false, "data");
  if (offset > p.pin.size() || p.pin.size() - offset != needed) {
    Raise(Status(Code::kInvalidArgument, Subject::kDescriptor, "data",
                 fmt::format("{} bytes given for {} chunks of {} layers x {} bytes",
                             p.pin.size() - std::min(offset, p.pin.size()), d.num_chunks(),
                             d.num_layers, d.layer_bytes)));
  }
  src.body = ByteSpan(p.pin.data() + offset, needed);
  return p;
}

// The PUTs of one put_chunks call, then the source let go. No GIL needed (nor taken).
PutReport RunPut(client::Client& cl, const std::string& bucket, const descriptor::Descriptor& d,
                 PutSource& src, bool if_absent, uint64_t batch) {
  PutReport report = PutChunks(cl, bucket, d, src.body, src.source, src.offset, if_absent,
                               std::max<uint64_t>(batch, 1));
  if (src.registered != nullptr) {
    src.registered->in_flight.fetch_sub(1);
  }
  src.temp.reset();
  return report;
}

constexpr uint64_t kDefaultPutBatch = 256;  // keys per PUT: well within the header limit

}  // namespace

void BindTransfers(py::module_& m, py::class_<PyClient>& client) {
  py::class_<RegisteredBuffer>(
      m, "RegisteredBuffer",
      R"doc(Memory mapped for the data plane (register_buffer, allocate_buffer). Buffer protocol: numpy.frombuffer(buf) views it.)doc",
      py::buffer_protocol())
      .def_buffer([](RegisteredBuffer& b) {
        // pybind11 calls this from the buffer protocol's C slot, which cannot carry a C++
        // exception: a closed buffer exports no bytes.
        if (b.closed()) {
          static uint8_t nothing = 0;
          return py::buffer_info(&nothing, 1, py::format_descriptor<uint8_t>::format(), 1, {0},
                                 {1});
        }
        MutableByteSpan bytes = b.target().bytes();
        return py::buffer_info(bytes.data(), 1, py::format_descriptor<uint8_t>::format(), 1,
                               {static_cast<py::ssize_t>(bytes.size())}, {1});
      })
      .def_property_readonly("address", &RegisteredBuffer::address)
      .def_property_readonly("nbytes", &RegisteredBuffer::size)
      .def_property_readonly("owned", &RegisteredBuffer::owned)
      .def_property_readonly("closed", &RegisteredBuffer::closed)
      .def_property_readonly("in_flight", [](RegisteredBuffer& b) { return b.in_flight.load(); })
      .def("close", &RegisteredBuffer::Close)
      .def("__len__", &RegisteredBuffer::size)
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](RegisteredBuffer& b, py::args) { b.Close(); });

  py::class_<LayersInfo>(
      m, "LayersInfo",
      "The end of a get_layers request: matched chunks, mode, request id, timings.")
      .def_readonly("matched", &LayersInfo::matched)
      .def_readonly("mode", &LayersInfo::mode)
      .def_readonly("request_id", &LayersInfo::request_id)
      .def_readonly("payload_bytes", &LayersInfo::payload_bytes)
      .def_readonly("gateway_us", &LayersInfo::gateway_us)
      .def_readonly("storage_us", &LayersInfo::storage_us)
      .def_readonly("transfer_us", &LayersInfo::transfer_us)
      .def_readonly("via", &LayersInfo::via)
      .def("__repr__", [](const LayersInfo& i) {
        return fmt::format("<objectcache.LayersInfo matched={} mode={} via={} bytes={}>", i.matched,
                           i.mode, i.via, i.payload_bytes);
      });

  py::class_<Transfer>(
      m, "Transfer",
      R"doc(One get_layers request in flight: wait_layer(l, timeout), layers_ready(), wait(timeout) / result(timeout), done(). Dropping it waits for the request to end.)doc")
      .def("wait_layer", &Transfer::WaitLayer,
           "Returns once layer `layer` is in the buffer; OutOfRange if the request ended without "
           "it, Timeout, or the request's error.",
           py::arg("layer"), py::arg("timeout") = py::none())
      .def("wait", &Transfer::Wait,
           "Waits for the end of the request (its callbacks have all run) and returns LayersInfo; "
           "Timeout leaves it running.",
           py::arg("timeout") = py::none())
      .def("result", &Transfer::Wait, py::arg("timeout") = py::none())
      .def("done", &Transfer::done)
      .def("layers_ready", &Transfer::layers_ready)
      .def_property_readonly("num_layers", &Transfer::num_layers)
      .def_property_readonly("via", &Transfer::via)
      .def_property_readonly("matched", [](Transfer& t) -> py::object {
        if (!t.done()) {
          return py::none();
        }
        return py::int_(t.Wait(std::nullopt).matched);  // raises the request's error
      });

  client.def(
      "register_buffer",
      [](PyClient& c, const py::object& buffer) {
        PinnedBuffer pin(buffer, true, "buffer");
        client::DataPlane* plane = Unwrap(Plane(c));
        const MutableByteSpan span(pin.data(), pin.size());
        Result<std::unique_ptr<client::TargetBuffer>> target = [&] {
          py::gil_scoped_release release;
          return plane->Wrap(span);
        }();
        return new RegisteredBuffer(c.core, Unwrap(std::move(target)), std::move(pin), buffer);
      },
      R"doc(Maps the writable buffer (numpy array, bytearray, mmap...) for the data plane once; pass it (or any view inside it) to get_layers/put_chunks. The buffer stays referenced until close().)doc",
      py::arg("buffer"));
  client.def(
      "allocate_buffer",
      [](PyClient& c, uint64_t nbytes) {
        client::DataPlane* plane = Unwrap(Plane(c));
        Result<std::unique_ptr<client::TargetBuffer>> target = [&] {
          py::gil_scoped_release release;
          return plane->Allocate(nbytes);
        }();
        return new RegisteredBuffer(c.core, Unwrap(std::move(target)), PinnedBuffer(), py::none());
      },
      R"doc(nbytes of UCX-allocated shared memory the server writes in place (the fastest target); numpy views via objectcache.as_array(buf).)doc",
      py::arg("nbytes"));
  client.def(
      "get_layers", &GetLayers,
      R"doc(Descriptor GET into `buffer` (offset bytes in): layer-major N*L*S bytes. via='ucx' (a data-plane target), 'http' (the response body) or 'auto' (UCX if available). Returns a Transfer at once; on_layer(l) runs per layer, in order, on the client's callback thread; with signal_every=N only for every N-th layer (l = N-1, 2N-1, ...) and the last, layers 0..l being in place. The buffer is held until wait() sees the end (call it before reusing the buffer).)doc",
      py::arg("bucket"), py::arg("descriptor"), py::arg("buffer"), py::kw_only(),
      py::arg("offset") = 0, py::arg("via") = "auto", py::arg("on_layer") = py::none(),
      py::arg("signal_every") = 1);
  client.def(
      "put_chunks",
      [](PyClient& c, const std::string& bucket, const descriptor::Descriptor& d,
         const py::object& data, uint64_t offset, const std::string& via, bool if_absent,
         uint64_t batch) {
        client::Client& cl = ClientOf(c);
        PutPlan p = PlanPut(c, d, data, offset, via);
        PutSource& src = *p.src;
        PutReport report = [&] {
          py::gil_scoped_release release;
          return RunPut(cl, bucket, d, src, if_absent, batch);
        }();
        return ReportToPy(report);
      },
      R"doc(Stores the N chunks of `descriptor` from `data` (N*L*S bytes, chunk-major: a C-contiguous [chunks, layers, S] array in kv_l2td). via='http' sends the body, 'ucx' lets the server pull from registered memory. if_absent=True skips chunks already present ('exists'). Returns a PutResult with a status per key; batches of `batch` keys fail alone.)doc",
      py::arg("bucket"), py::arg("descriptor"), py::arg("data"), py::kw_only(),
      py::arg("offset") = 0, py::arg("via") = "http", py::arg("if_absent") = false,
      py::arg("batch") = kDefaultPutBatch);
  client.def(
      "put_chunks_async",
      [](PyClient& c, const std::string& bucket, const descriptor::Descriptor& d,
         const py::object& data, uint64_t offset, const std::string& via, bool if_absent,
         uint64_t batch) {
        client::Client* cl = &ClientOf(c);
        PutPlan p = PlanPut(c, d, data, offset, via);
        // The work runs and is destroyed off the GIL, so it holds only the C++ source; the
        // Future holds the Python side (the pin, the data, the registered buffer).
        std::vector<PinnedBuffer> pins;
        pins.push_back(std::move(p.pin));
        py::object keep = py::make_tuple(data, p.registered_ref);
        Future::Work work = [cl, bucket, d, src = p.src, if_absent, batch]() -> Future::Convert {
          PutReport report = RunPut(*cl, bucket, d, *src, if_absent, batch);
          return [report = std::move(report)] { return ReportToPy(report); };
        };
        return new Future(c.core, std::move(work), std::move(pins), std::move(keep));
      },
      R"doc(put_chunks() as a Future of the PutResult (the data stays referenced until it ends).)doc",
      py::arg("bucket"), py::arg("descriptor"), py::arg("data"), py::kw_only(),
      py::arg("offset") = 0, py::arg("via") = "http", py::arg("if_absent") = false,
      py::arg("batch") = kDefaultPutBatch);
  client.def(
      "put_object_async",
      [](PyClient& c, const std::string& bucket, const std::string& key, const py::object& data) {
        client::Client* cl = &ClientOf(c);
        PinnedBuffer pin(data, false, "data");
        const ByteSpan body(pin.data(), pin.size());
        std::vector<PinnedBuffer> pins;
        pins.push_back(std::move(pin));
        Future::Work work = [cl, bucket, key, body]() -> Future::Convert {
          Status s = cl->PutObject(bucket, key, body);
          return [s] {
            if (!s.ok()) {
              Raise(s);
            }
            return py::none();
          };
        };
        return new Future(c.core, std::move(work), std::move(pins), data);
      },
      R"doc(put_object() as a Future of None.)doc", py::arg("bucket"), py::arg("key"),
      py::arg("data"));
}

}  // namespace oc::python
