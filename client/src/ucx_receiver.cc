#include "ucx_receiver.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <vector>

#include <openssl/rand.h>

#include <fmt/core.h>

#include "oc/client/errors.h"
#include "oc/common/log.h"
#include "oc/descriptor/data_plane_wire.h"
#include "oc/ucx/mapped_memory.h"
#include "oc/ucx/status.h"
#include "oc/ucx/transports.h"

namespace oc::client {
namespace {

const Logger kLog{"client.data_plane"};

class UcxTargetBuffer final : public TargetBuffer {
 public:
  // `owned`: the mapping allocated the memory (DataPlane::Allocate), else it is the caller's.
  UcxTargetBuffer(UcxReceiver& receiver, ucx::UcxWorker& worker,
                  std::unique_ptr<ucx::MappedMemory> mapping, bool owned)
      : receiver_(receiver), worker_(worker), mapping_(std::move(mapping)), owned_(owned) {
    receiver_.AddMapped(address(), length());
  }
  ~UcxTargetBuffer() override {
    // No new rendezvous receive lands here after this; wait for those already started, then
    // unmap from UCX on the worker's thread, before the memory goes.
    receiver_.RemoveMapped(address());
    const bool drained = worker_.Call([this] {
      const bool idle = receiver_.DrainReceives(address(), length());
      if (idle || !owned_) {
        mapping_.reset();
      } else {
        (void)mapping_.release();  // UCX may still write into memory the mapping owns
      }
      return idle;
    });
    if (!drained) {
      kLog.Error("target buffer destroyed while UCX still receives into it; {}",
                 owned_ ? "its memory is leaked" : "the caller's memory may still be written");
    }
  }
  MutableByteSpan bytes() const override { return mapping_->bytes(); }
  ByteSpan rkey() const override { return mapping_->rkey(); }

 private:
  UcxReceiver& receiver_;
  ucx::UcxWorker& worker_;
  std::unique_ptr<ucx::MappedMemory> mapping_;
  const bool owned_;
};

}  // namespace

// One rendezvous receive in flight (owning thread only): what DrainReceives waits for.
struct RecvOp {
  UcxReceiver* receiver = nullptr;
  uint64_t address = 0;
  uint64_t length = 0;
};

// What the progress thread and the waiters share for one request.
struct DeliveryState {
  DeliveryState(uint32_t layers, LayerCallback cb)
      : num_layers(layers), on_layer(std::move(cb)), ready(layers, false) {}

  const uint32_t num_layers;
  const LayerCallback on_layer;

  mutable std::mutex mu;
  std::condition_variable cv;
  std::vector<bool> ready;   // guarded by mu
  uint32_t ready_count = 0;  // guarded by mu
  bool finished = false;     // guarded by mu: done or error received
  Status final;              // guarded by mu: OK for done, else the error
};

namespace {

class UcxDelivery final : public Delivery {
 public:
  UcxDelivery(UcxReceiver& owner, uint64_t key, std::shared_ptr<DeliveryState> state)
      : owner_(owner), key_(key), state_(std::move(state)) {}
  ~UcxDelivery() override { owner_.Forget(key_, state_.get()); }

  Status WaitLayer(uint32_t layer, std::chrono::milliseconds timeout) override {
    DeliveryState& s = *state_;
    if (layer >= s.num_layers) {
      return Status::OutOfRange(fmt::format("layer {} of {}", layer, s.num_layers));
    }
    std::unique_lock<std::mutex> lock(s.mu);
    if (!s.cv.wait_for(lock, timeout, [&] { return s.ready[layer] || s.finished; })) {
      return TimedOut(fmt::format("timed out waiting for layer {}", layer));
    }
    if (s.ready[layer]) {
      return Status::Ok();
    }
    if (!s.final.ok()) {
      return s.final;
    }
    return Status::OutOfRange(fmt::format("request finished without layer {}", layer));
  }

  Status Wait(std::chrono::milliseconds timeout) override {
    DeliveryState& s = *state_;
    std::unique_lock<std::mutex> lock(s.mu);
    if (!s.cv.wait_for(lock, timeout, [&] { return s.finished; })) {
      return TimedOut("timed out waiting for the request to finish");
    }
    return s.final;
  }

  uint32_t layers_ready() const override {
    std::lock_guard<std::mutex> lock(state_->mu);
    return state_->ready_count;
  }

  bool finished() const override {
    std::lock_guard<std::mutex> lock(state_->mu);
    return state_->finished;
  }

  void Abort(const Status& error) override {
    DeliveryState& s = *state_;
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.finished) {
      return;
    }
    s.finished = true;
    s.final = error.ok() ? Status::Internal("a delivery aborted without an error") : error;
    s.cv.notify_all();
  }

 private:
  UcxReceiver& owner_;
  const uint64_t key_;
  const std::shared_ptr<DeliveryState> state_;
};

}  // namespace

Result<descriptor::DataPlaneTarget> TargetBuffer::Target(const descriptor::ConnectionId& connection,
                                                         uint64_t offset, uint64_t length) const {
  if (length == 0 || offset > this->length() || length > this->length() - offset) {
    return Status::OutOfRange(
        fmt::format("target [{}, +{}) outside the {}-byte buffer", offset, length, this->length()));
  }
  descriptor::DataPlaneTarget t;
  const ByteSpan key = rkey();
  t.connection = connection;
  t.rkey.assign(key.begin(), key.end());
  t.address = address() + offset;
  t.length = length;
  return t;
}

descriptor::DataPlaneTarget TargetBuffer::Target(const descriptor::ConnectionId& connection) const {
  return *Target(connection, 0, length());
}

Result<std::unique_ptr<DataPlane>> DataPlane::Open(const DataPlaneOptions& options) {
  OC_ASSIGN_OR_RETURN(std::unique_ptr<UcxReceiver> r, UcxReceiver::Create(options));
  return std::unique_ptr<DataPlane>(std::move(r));
}

Result<std::unique_ptr<UcxReceiver>> UcxReceiver::Create(const DataPlaneOptions& options) {
  std::unique_ptr<UcxReceiver> r(new UcxReceiver());
  r->teardown_timeout_ = options.teardown_timeout;
  r->connect_timeout_ = options.connect_timeout;
  if (RAND_bytes(reinterpret_cast<unsigned char*>(r->secret_.data()),
                 static_cast<int>(r->secret_.size())) != 1) {
    return Status::Internal("RAND_bytes failed");
  }
  r->owner_ = ucx::MakeOwnerToken(r->secret_);
  const std::string transports = ucx::EffectiveTransports(options.transports);
  r->shared_memory_ = ucx::AllowsSharedMemory(transports);
  ucx::WorkerOptions wopts;
  wopts.transports = ucx::WithConnectionManager(transports);
  wopts.keepalive_interval = options.keepalive_interval;
  wopts.teardown_timeout = options.teardown_timeout;
  wopts.client_id = r->shared_memory_ ? descriptor::kClientIdSharedMemory : 0;
  OC_ASSIGN_OR_RETURN(r->worker_, ucx::UcxWorker::Create(wopts));
  ucp_am_handler_param_t param{};
  param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                     UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
  param.id = descriptor::kNotificationAmId;
  param.flags = UCP_AM_FLAG_WHOLE_MSG;
  param.cb = &UcxReceiver::OnMessage;
  param.arg = r.get();
  OC_RETURN_IF_ERROR(ucx::FromUcs(ucp_worker_set_am_recv_handler(r->worker_->worker(), &param),
                                  "set_am_recv_handler"));
  param.id = descriptor::kDataAmId;
  param.cb = &UcxReceiver::OnData;
  OC_RETURN_IF_ERROR(ucx::FromUcs(ucp_worker_set_am_recv_handler(r->worker_->worker(), &param),
                                  "set_am_recv_handler"));
  param.id = descriptor::kWelcomeAmId;
  param.cb = &UcxReceiver::OnWelcome;
  OC_RETURN_IF_ERROR(ucx::FromUcs(ucp_worker_set_am_recv_handler(r->worker_->worker(), &param),
                                  "set_am_recv_handler"));
  r->worker_->Start();
  return r;
}

UcxReceiver::~UcxReceiver() {
  // UCX 1.13 aborts in ucp_worker_destroy if an endpoint still has protocol requests (a
  // rendezvous receive in flight), so: refuse new rendezvous data (the sender's send fails),
  // let the receives already started complete, then destroy.
  const bool drained = worker_->Call([this] {
    closing_ = true;
    return DrainReceives(0, UINT64_MAX);
  });
  if (!drained) {
    // Nothing progresses the worker from here on, so UCX writes nothing more; destroying it
    // would abort the process.
    kLog.Error("data plane closed with rendezvous receives still in flight; leaking its worker");
    worker_->Stop();
    (void)worker_.release();
    return;
  }
  // Stops the progress thread, closes the connections (a healthy one with a flush, so the
  // server sees an orderly disconnect; a failed one by force) and progresses until the
  // closes complete, then flushes the worker: UCX 1.13 aborts in ucp_worker_destroy while a
  // message is still pending on a lane.
  std::vector<std::shared_ptr<ServerConnection>> open;
  {
    std::lock_guard<std::mutex> lock(conn_mu_);
    for (auto& [address, c] : connections_) {
      open.push_back(std::move(c));
    }
    connections_.clear();
  }
  worker_->Stop();
  CloseConnections(std::move(open));  // runs here: the thread stopped
  if (!worker_->ProgressUntil([&] { return closes_in_flight_ == 0; },
                              std::chrono::steady_clock::now() + teardown_timeout_)) {
    kLog.Warn("{} data-plane connection closes still in flight at teardown", closes_in_flight_);
  }
  worker_.reset();
}

bool UcxReceiver::DrainReceives(uint64_t address, uint64_t length) {
  const uint64_t end = length > UINT64_MAX - address ? UINT64_MAX : address + length;
  auto busy = [&] {
    for (const RecvOp* op : receiving_) {
      if (op->address < end && address < op->address + op->length) {
        return true;
      }
    }
    return false;
  };
  if (!busy()) {
    return true;
  }
  if (worker_->InCallback()) {
    return false;  // cannot progress from inside a UCX callback
  }
  const auto deadline = std::chrono::steady_clock::now() + teardown_timeout_;
  while (busy()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    }
    (void)ucp_worker_progress(worker_->worker());
  }
  return true;
}

void UcxReceiver::OnReceived(void* request, ucs_status_t status, size_t, void* user_data) {
  auto* op = static_cast<RecvOp*>(user_data);
  if (status != UCS_OK) {
    kLog.Warn("rendezvous receive failed: {}", ucs_status_string(status));
  }
  op->receiver->receiving_.erase(op);
  delete op;
  if (request != nullptr) {
    ucp_request_free(request);
  }
}

Result<std::unique_ptr<TargetBuffer>> UcxReceiver::Allocate(uint64_t length) {
  if (length == 0) {
    return Status::InvalidArgument("length", "target buffer of 0 bytes");
  }
  Result<std::unique_ptr<ucx::MappedMemory>> mapping = worker_->Call(
      [&] { return ucx::MappedMemory::Allocate(worker_->context(), length, owner_); });
  if (!mapping.has_value()) {
    return Status::ResourceExhausted(
        "length", fmt::format("cannot allocate {} bytes: {}", length, mapping.error().message()));
  }
  return std::unique_ptr<TargetBuffer>(
      std::make_unique<UcxTargetBuffer>(*this, *worker_, std::move(*mapping), /*owned=*/true));
}

Result<std::unique_ptr<TargetBuffer>> UcxReceiver::Wrap(MutableByteSpan memory) {
  if (memory.empty()) {
    return Status::InvalidArgument("memory", "target buffer of 0 bytes");
  }
  OC_ASSIGN_OR_RETURN(std::unique_ptr<ucx::MappedMemory> mapping, worker_->Call([&] {
    return ucx::MappedMemory::Map(worker_->context(), memory.data(), memory.size());
  }));
  return std::unique_ptr<TargetBuffer>(
      std::make_unique<UcxTargetBuffer>(*this, *worker_, std::move(mapping), /*owned=*/false));
}

Result<std::unique_ptr<Delivery>> UcxReceiver::Expect(uint64_t target_address, uint32_t num_layers,
                                                      LayerCallback on_layer) {
  if (num_layers == 0) {
    return Status::InvalidArgument("num_layers", "must be positive");
  }
  auto state = std::make_shared<DeliveryState>(num_layers, std::move(on_layer));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!deliveries_.emplace(target_address, state).second) {
      return Status::AlreadyExists(Subject::kNone,
                                   fmt::format("a request already targets {:#x}", target_address));
    }
  }
  return std::unique_ptr<Delivery>(new UcxDelivery(*this, target_address, std::move(state)));
}

void UcxReceiver::AddMapped(uint64_t address, uint64_t length) {
  std::lock_guard<std::mutex> lock(mu_);
  mapped_[address] = length;
}

void UcxReceiver::RemoveMapped(uint64_t address) {
  std::lock_guard<std::mutex> lock(mu_);
  mapped_.erase(address);
}

bool UcxReceiver::InsideMapped(uint64_t address, uint64_t length) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = mapped_.upper_bound(address);
  if (it == mapped_.begin()) {
    return false;
  }
  --it;
  const uint64_t offset = address - it->first;
  return offset <= it->second && length <= it->second - offset;
}

ucs_status_t UcxReceiver::OnData(void* arg, const void* header, size_t header_length, void* data,
                                 size_t length, const ucp_am_recv_param_t* param) {
  auto* self = static_cast<UcxReceiver*>(arg);
  const bool rendezvous = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  if (rendezvous && self->closing_) {
    // An error (not UCS_OK) makes UCX complete the sender's send with it: the server learns
    // that these bytes were not taken.
    return UCS_ERR_REJECTED;
  }
  Result<descriptor::DataHeader> h =
      descriptor::DecodeDataHeader(ByteSpan(static_cast<const std::byte*>(header), header_length));
  uint64_t dest = 0;
  // The server checked the write against the target; the client checks it again against its
  // own mappings, so a confused or hostile server cannot make it write elsewhere.
  if (!h.has_value() || __builtin_add_overflow(h->request_key, h->offset, &dest) ||
      !self->InsideMapped(dest, length)) {
    kLog.Warn("dropped data-plane bytes outside every target bytes={}", length);
    // A rendezvous message not received is released by UCX, and the error fails the
    // sender's send instead of completing it as delivered.
    return rendezvous ? UCS_ERR_REJECTED : UCS_OK;
  }
  auto* into = reinterpret_cast<void*>(dest);
  if (!rendezvous) {
    std::memcpy(into, data, length);  // small enough to have come eagerly
    return UCS_OK;
  }
  auto* op = new RecvOp{self, dest, length};
  self->receiving_.insert(op);
  ucp_request_param_t rparam{};
  rparam.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  rparam.cb.recv_am = &UcxReceiver::OnReceived;
  rparam.user_data = op;
  ucs_status_ptr_t sp = ucp_am_recv_data_nbx(self->worker_->worker(), data, into, length, &rparam);
  if (!UCS_PTR_IS_PTR(sp)) {
    OnReceived(nullptr, UCS_PTR_STATUS(sp), length, op);  // completed (or failed) at once
  }
  return UCS_OK;
}

void UcxReceiver::Forget(uint64_t key, const DeliveryState* state) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = deliveries_.find(key);
  if (it != deliveries_.end() && it->second.get() == state) {
    deliveries_.erase(it);
  }
}

ucs_status_t UcxReceiver::OnMessage(void* arg, const void* header, size_t header_length, void* data,
                                    size_t length, const ucp_am_recv_param_t* param) {
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0) {
    // Notifications are always eager (the sender forces it); a rendezvous one is not ours.
    kLog.Warn("dropped a rendezvous data-plane message bytes={}", length);
    return UCS_OK;
  }
  static_cast<UcxReceiver*>(arg)->Handle(
      ByteSpan(static_cast<const std::byte*>(header), header_length),
      ByteSpan(static_cast<const std::byte*>(data), length));
  return UCS_OK;  // the data is not kept
}

void UcxReceiver::Handle(ByteSpan header, ByteSpan data) {
  Result<descriptor::Notification> decoded = descriptor::DecodeNotification(header);
  if (!decoded.has_value()) {
    kLog.Warn("dropped a data-plane message: {}", decoded.error().ToString());
    return;
  }
  const descriptor::Notification& n = *decoded;
  std::shared_ptr<DeliveryState> state;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = deliveries_.find(n.request_key);
    if (it == deliveries_.end()) {
      kLog.Debug("dropped a notification for no request key={:#x}", n.request_key);
      return;
    }
    state = it->second;
  }
  DeliveryState& s = *state;
  bool call_back = false;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.finished) {
      return;  // nothing may follow done or error
    }
    switch (n.kind) {
      case descriptor::NotificationKind::kLayerReady:
        if (n.layer >= s.num_layers || s.ready[n.layer]) {
          s.finished = true;
          s.final = Status::Corruption(fmt::format("unexpected layer-ready for layer {}", n.layer));
        } else {
          s.ready[n.layer] = true;
          ++s.ready_count;
          call_back = static_cast<bool>(s.on_layer);
        }
        break;
      case descriptor::NotificationKind::kDone:
        s.finished = true;
        if (n.layer != s.ready_count) {
          s.final = Status::Corruption(
              fmt::format("done after {} layers, {} received", n.layer, s.ready_count));
        }
        break;
      case descriptor::NotificationKind::kError:
        s.finished = true;
        if (data.size() != n.message_bytes) {
          s.final = Status::Corruption("error notification with a bad message length");
        } else {
          s.final = Status(n.code, Subject::kNone, "", std::string(AsText(data)));
        }
        break;
    }
  }
  // The callback runs before waiters wake, so a caller that waits for the layer after
  // registering a callback sees the callback's effects.
  if (call_back) {
    s.on_layer(n.layer);
  }
  s.cv.notify_all();
}

}  // namespace oc::client
