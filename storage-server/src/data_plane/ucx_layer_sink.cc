#include "data_plane/ucx_layer_sink.h"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include <fmt/core.h>

#include "data_plane/ucx_data_plane.h"
#include "oc/common/check.h"
#include "oc/common/log.h"
#include "oc/descriptor/data_plane_wire.h"
#include "oc/ucx/status.h"

namespace oc::storage {
namespace {

const Logger kLog{"data_plane"};

}  // namespace

// One notification on its way: waits for its flush (kFlush), then is sent as an active
// message; the header and text live here until the send completes.
struct NotifyOp {
  UcxLayerSink::State* state = nullptr;
  uint64_t writes_before = 0;  // kRendezvous: ready once this many writes are complete
  std::array<std::byte, descriptor::kNotificationBytes> header{};
  std::string message;
  bool ready = false;  // the bytes before it are complete (guarded by State::mu)
};

// A PutOp's slot when its bytes are not a staging buffer (WritePinned).
constexpr uint32_t kPinnedSlot = ~uint32_t{0};

struct PutOp {
  UcxLayerSink::State* state = nullptr;
  uint32_t slot = 0;                 // kPinnedSlot: the bytes are held by `hold`
  std::shared_ptr<const void> hold;  // WritePinned: the store's pin, kept until completion
  uint64_t charge = 0;               // WritePinned: bytes taken from the plane's ByteBudget
  bool abandoned = false;            // guarded by State::mu: its slot was retired (AbandonPuts)
  uint64_t seq = 0;                  // order among this request's writes
  std::array<std::byte, descriptor::kDataHeaderBytes> header{};  // kRendezvous: the AM header
};

struct UcxLayerSink::State {
  State(UcxDataPlane& p, std::shared_ptr<Endpoint> ep, ucp_rkey_h rk,
        const descriptor::DataPlaneTarget& target, InPlace in_place)
      : plane(p),
        endpoint(std::move(ep)),
        rkey(rk),
        address(target.address),
        length(target.length),
        direct(std::move(in_place)) {}
  ~State() {
    for (NotifyOp* op : pending) {
      delete op;
    }
    if (rkey != nullptr && !plane.endpoints().shut_down()) {  // else the worker released it
      const ucp_rkey_h key = rkey;
      plane.worker().Submit([key] { ucp_rkey_destroy(key); });
    }
  }

  void Ref() { refs.fetch_add(1, std::memory_order_relaxed); }
  void Unref() {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      delete this;
    }
  }

  // Records the first transfer error; returns it.
  Status Fail(Status s) {
    std::lock_guard<std::mutex> lock(mu);
    if (error.ok()) {
      error = std::move(s);
    }
    return error;
  }
  Status CurrentError() {
    if (endpoint->failed()) {
      return Fail(Status::Unavailable("data-plane endpoint to the client failed"));
    }
    std::lock_guard<std::mutex> lock(mu);
    return error;
  }
  // The endpoint is unusable: drop it from the cache; `close_now` also force-closes it so
  // operations stuck on it complete as cancelled (never from a UCX callback).
  void FailEndpoint(const Status& why, bool close_now) {
    (void)Fail(why);
    plane.endpoints().Fail(*endpoint, why.ToString(), close_now);
    if (close_now && !endpoint->peer_error_handling()) {
      AbandonPuts();
    }
  }
  // Without UCX peer error handling a force-closed endpoint's stuck puts never complete, and
  // UCX may still read their buffers: retire those buffers (the pool replaces them) so the
  // pool does not shrink and no other request's bytes can go out through them.
  void AbandonPuts() {
    std::vector<uint32_t> slots;
    {
      std::lock_guard<std::mutex> lock(mu);
      abandoned = true;
      cv.notify_all();
      for (PutOp* op : puts) {
        op->abandoned = true;
        if (op->slot != kPinnedSlot) {
          slots.push_back(op->slot);
        }
      }
    }
    for (uint32_t slot : slots) {
      Status s = plane.staging().Retire(slot);
      kLog.Warn("retired staging buffer slot={} of a stuck write: {}", slot,
                s.ok() ? "replaced" : s.ToString());
    }
  }
  // After a wait for staging memory timed out: if this request has writes in flight, they did
  // not complete within the timeout (the client is gone or hung), so the endpoint is failed
  // and closed; true then. Else (other requests hold the memory) false, nothing changes.
  bool FailStuck() {
    bool stuck = false;
    {
      std::lock_guard<std::mutex> lock(mu);
      stuck = in_flight > 0;
    }
    if (stuck) {
      FailEndpoint(Status::Unavailable("data-plane writes did not complete in time"),
                   /*close_now=*/true);
    }
    return stuck;
  }

  // One operation completed (callback or immediate).
  void OpDone(ucs_status_t status, std::string_view what) {
    if (status != UCS_OK) {
      // UCX cancels what is in flight on an endpoint whose connection ended (the client
      // closed it or went away): for the request that is the client failing, not a cancel.
      FailEndpoint(status == UCS_ERR_CANCELED ? Status::Unavailable(fmt::format(
                                                    "{}: the connection to the client ended", what))
                                              : ucx::FromUcs(status, what),
                   /*close_now=*/false);
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      --in_flight;
    }
    cv.notify_all();
  }

  static void OnPutDone(void* request, ucs_status_t status, void* user_data) {
    auto* op = static_cast<PutOp*>(user_data);
    op->state->FinishPut(op, status);
    ucp_request_free(request);
  }
  void FinishPut(PutOp* op, ucs_status_t status) {
    bool abandoned = false;
    {
      std::lock_guard<std::mutex> lock(mu);
      abandoned = op->abandoned;
      puts.erase(op);
      // Writes complete out of order; writes_done counts the complete prefix.
      done_seqs.insert(op->seq);
      while (!done_seqs.empty() && *done_seqs.begin() == writes_done) {
        done_seqs.erase(done_seqs.begin());
        ++writes_done;
      }
    }
    if (op->slot == kPinnedSlot) {
      plane.pinned_budget().Release(op->charge);
      if (abandoned) {
        // UCX may still read these bytes: keep the store's pin for the life of the process.
        (void)new std::shared_ptr<const void>(std::move(op->hold));
      }
    } else if (!abandoned) {
      plane.staging().Release(op->slot);
    }
    delete op;
    OpDone(status, "data-plane write");
    if (in_place()) {
      // On the copy engine's thread: only the worker's thread sends, so hand it the
      // notification that waited for this write, if there is one now.
      bool ready = false;
      {
        std::lock_guard<std::mutex> lock(mu);
        ready = !pending.empty() && pending.front()->writes_before <= writes_done;
      }
      if (ready) {
        Ref();
        plane.worker().Submit([this] {
          Drain();
          Unref();
        });
      }
    } else if (rendezvous()) {
      Drain();  // a notification may have been waiting for this write
    }
    Unref();
  }

  static void OnFlushed(void* request, ucs_status_t status, void* user_data) {
    auto* op = static_cast<NotifyOp*>(user_data);
    op->state->Flushed(op, status);
    ucp_request_free(request);
  }
  void Flushed(NotifyOp* op, ucs_status_t status) {
    {
      std::lock_guard<std::mutex> lock(mu);
      op->ready = true;
    }
    OpDone(status, "ucp_ep_flush_nbx");
    Drain();
    Unref();
  }

  static void OnSent(void* request, ucs_status_t status, void* user_data) {
    auto* op = static_cast<NotifyOp*>(user_data);
    op->state->Sent(op, status);
    ucp_request_free(request);
  }
  void Sent(NotifyOp* op, ucs_status_t status) {
    delete op;
    OpDone(status, "ucp_am_send_nbx");
    Unref();
  }

  // Sends every ready message at the head of the queue, in order. Runs on the owning thread
  // only; `sending` keeps a completion that fires inside a send from re-entering.
  void Drain() {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (sending) {
        return;
      }
      sending = true;
    }
    for (;;) {
      NotifyOp* op = nullptr;
      bool skip = false;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (!pending.empty() && ordered_by_completions() &&
            pending.front()->writes_before <= writes_done) {
          pending.front()->ready = true;
        }
        if (pending.empty() || !pending.front()->ready) {
          sending = false;
          cv.notify_all();
          return;
        }
        op = pending.front();
        pending.pop_front();
        // After a transfer error only the error message goes out; nothing goes to a failed
        // endpoint.
        skip = (!error.ok() && static_cast<descriptor::NotificationKind>(op->header[5]) !=
                                   descriptor::NotificationKind::kError) ||
               endpoint->failed();
        if (!skip) {
          ++in_flight;
        }
      }
      if (skip) {
        delete op;
        continue;
      }
      Ref();
      ucp_request_param_t param{};
      param.op_attr_mask =
          UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
      param.cb.send = &State::OnSent;
      param.user_data = op;
      param.flags = UCP_AM_SEND_FLAG_EAGER;
      ucs_status_ptr_t sp = endpoint->Post([&](ucp_ep_h ep) {
        return ucp_am_send_nbx(ep, descriptor::kNotificationAmId, op->header.data(),
                               op->header.size(), op->message.data(), op->message.size(), &param);
      });
      if (!UCS_PTR_IS_PTR(sp)) {
        Sent(op, UCS_PTR_STATUS(sp));
      }
    }
  }

  // Queues a notification behind the bytes written so far and drains. The queue entry is
  // made here, in call order; the ordering step runs on the owning thread after every put
  // submitted before it: ucp_worker_fence (kFence), or ucp_ep_flush_nbx whose completion
  // marks the entry ready (kFlush).
  Status Enqueue(const descriptor::Notification& n, std::string message) {
    auto* op = new NotifyOp();
    op->state = this;
    op->header = descriptor::EncodeNotification(n);
    op->message = std::move(message);
    if (ordered_by_completions()) {
      // A rendezvous send completes when the client has the bytes, an in-place copy when it
      // is done: the notification waits for every write before it to complete (Drain
      // checks), no flush needed.
      {
        std::lock_guard<std::mutex> lock(mu);
        op->writes_before = writes_posted;
        pending.push_back(op);
      }
      // Another drain may send this entry before the task runs, and Finish may then return
      // and drop the sink's reference: the task holds its own.
      Ref();
      plane.worker().Submit([this] {
        Drain();
        Unref();
      });
      return CurrentError();
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      pending.push_back(op);
      ++in_flight;  // the ordering step
    }
    Ref();
    plane.worker().Submit([this, op] {
      if (plane.options().ordering == LayerOrdering::kFence) {
        const ucs_status_t st = ucp_worker_fence(plane.worker().worker());
        Flushed(op, st);
        return;
      }
      ucp_request_param_t param{};
      param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
      param.cb.send = &State::OnFlushed;
      param.user_data = op;
      ucs_status_ptr_t sp =
          endpoint->Post([&](ucp_ep_h ep) { return ucp_ep_flush_nbx(ep, &param); });
      if (!UCS_PTR_IS_PTR(sp)) {
        Flushed(op, UCS_PTR_STATUS(sp));
      }
    });
    return CurrentError();
  }

  bool rendezvous() const { return plane.options().write_mode == WriteMode::kRendezvous; }
  bool in_place() const { return !direct.bytes.empty(); }
  // A write is in the target once it completes (else a flush or fence orders the bytes).
  bool ordered_by_completions() const { return rendezvous() || in_place(); }

  UcxDataPlane& plane;
  const std::shared_ptr<Endpoint> endpoint;
  const ucp_rkey_h rkey;
  const uint64_t address;
  const uint64_t length;
  const InPlace direct;      // the target mapped here, or empty
  std::atomic<int> refs{1};  // the sink, plus one per operation in flight

  std::mutex mu;
  std::condition_variable cv;
  uint64_t in_flight = 0;           // guarded by mu: puts, flushes and sends posted
  std::unordered_set<PutOp*> puts;  // guarded by mu: puts posted, not completed
  uint64_t writes_posted = 0;       // guarded by mu
  uint64_t writes_done = 0;         // guarded by mu: writes 0..writes_done-1 are complete
  std::set<uint64_t> done_seqs;     // guarded by mu: complete writes above writes_done
  Status error;                     // guarded by mu: the first transfer error
  std::deque<NotifyOp*> pending;    // guarded by mu: notifications not sent yet, in order
  bool sending = false;             // guarded by mu: a thread is in Drain()'s send loop
  bool abandoned = false;           // guarded by mu: stuck writes were retired (AbandonPuts)
  uint32_t layers_notified = 0;     // caller thread only
};

UcxLayerSink::UcxLayerSink(UcxDataPlane& plane, std::shared_ptr<Endpoint> endpoint, ucp_rkey_h rkey,
                           const descriptor::DataPlaneTarget& target, InPlace in_place)
    : state_(new State(plane, std::move(endpoint), rkey, target, std::move(in_place))) {}

bool UcxLayerSink::writes_in_place() const { return state_->in_place(); }

UcxLayerSink::~UcxLayerSink() {
  if (!finished_) {
    (void)Finish(Status::Cancelled("request abandoned by the server"));
  }
  state_->Unref();
}

uint64_t UcxLayerSink::buffer_bytes() const { return state_->plane.staging().buffer_bytes(); }

Result<StagingBuffer> UcxLayerSink::AcquireBuffer() {
  State& s = *state_;
  OC_RETURN_IF_ERROR(s.CurrentError());
  Result<StagingBuffer> buffer = s.plane.staging().Acquire(s.plane.options().op_timeout);
  if (!buffer.has_value() && s.FailStuck()) {
    return s.CurrentError();
  }
  return buffer;
}

Result<StagingBuffer> UcxLayerSink::TryAcquireBuffer() {
  State& s = *state_;
  OC_RETURN_IF_ERROR(s.CurrentError());
  Result<StagingBuffer> buffer = s.plane.staging().Acquire(std::chrono::milliseconds(0));
  if (!buffer.has_value()) {
    return StagingBuffer();  // none free now: not an error
  }
  return buffer;
}

namespace {

// Nothing outside the target is ever written: checked before anything is posted.
Status CheckRange(uint64_t dest_offset, uint64_t length, uint64_t target_length) {
  if (dest_offset > target_length || length > target_length - dest_offset) {
    return Status::OutOfRange(fmt::format("write [{}, +{}) outside the {}-byte target", dest_offset,
                                          length, target_length));
  }
  return Status::Ok();
}

}  // namespace

// Posts `op`'s write of [data, data + length) to `dest_offset` of the target; `memh` covers
// the bytes, or is null for memory UCX registers itself.
void UcxLayerSink::Post(PutOp* op, const void* data, uint64_t length, uint64_t dest_offset,
                        ucp_mem_h memh) {
  State& s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    ++s.in_flight;
    s.puts.insert(op);
    op->seq = s.writes_posted++;
  }
  s.Ref();
  if (s.in_place()) {
    s.plane.copier().Submit(s.direct.bytes.data() + dest_offset,
                            static_cast<const std::byte*>(data), length,
                            [op] { op->state->FinishPut(op, UCS_OK); });
    return;
  }
  const uint64_t remote = s.address + dest_offset;
  if (s.rendezvous()) {
    op->header = descriptor::EncodeDataHeader({s.address, dest_offset});
  }
  s.plane.worker().Submit([&s, op, data, length, remote, memh] {
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send = &State::OnPutDone;
    param.user_data = op;
    if (memh != nullptr) {
      param.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
      param.memh = memh;
    }
    ucs_status_ptr_t sp = s.endpoint->Post([&](ucp_ep_h ep) {
      if (s.rendezvous()) {
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
        param.flags = UCP_AM_SEND_FLAG_RNDV;
        return ucp_am_send_nbx(ep, descriptor::kDataAmId, op->header.data(), op->header.size(),
                               data, length, &param);
      }
      return ucp_put_nbx(ep, data, length, remote, s.rkey, &param);
    });
    if (!UCS_PTR_IS_PTR(sp)) {
      s.FinishPut(op, UCS_PTR_STATUS(sp));
    }
  });
}

Status UcxLayerSink::Write(uint64_t dest_offset, StagingBuffer buffer, uint64_t length) {
  OC_CHECK(!finished_);
  State& s = *state_;
  if (!s.plane.staging().Owns(buffer)) {
    return Status::InvalidArgument("", "staging buffer not lent by this data plane");
  }
  if (length == 0 || length > buffer.bytes().size()) {
    return Status::InvalidArgument(
        "", fmt::format("write of {} bytes from a {}-byte buffer", length, buffer.bytes().size()));
  }
  OC_RETURN_IF_ERROR(CheckRange(dest_offset, length, s.length));
  OC_RETURN_IF_ERROR(s.CurrentError());
  if (s.in_place()) {
    std::memcpy(s.direct.bytes.data() + dest_offset, buffer.bytes().data(), length);
    return Status::Ok();  // the buffer goes back as it goes out of scope
  }
  auto* op = new PutOp{&s, buffer.slot()};
  const void* data = buffer.bytes().data();
  const ucp_mem_h memh = s.plane.staging().memh(op->slot);
  (void)buffer.Detach();  // returned by FinishPut
  Post(op, data, length, dest_offset, memh);
  return s.CurrentError();
}

Status UcxLayerSink::WritePinned(uint64_t dest_offset, ByteSpan bytes,
                                 std::shared_ptr<const void> hold) {
  OC_CHECK(!finished_);
  State& s = *state_;
  if (bytes.empty()) {
    return Status::InvalidArgument("", "empty pinned write");
  }
  OC_RETURN_IF_ERROR(CheckRange(dest_offset, bytes.size(), s.length));
  OC_RETURN_IF_ERROR(s.CurrentError());
  const uint64_t charge =
      s.plane.pinned_budget().Acquire(bytes.size(), s.plane.options().op_timeout);
  if (charge == 0) {
    if (s.FailStuck()) {
      return s.CurrentError();
    }
    return Status::Unavailable("no memory for a zero-copy write came free within the timeout");
  }
  auto* op = new PutOp{&s, kPinnedSlot, std::move(hold), charge};
  Post(op, bytes.data(), bytes.size(), dest_offset, nullptr);
  return s.CurrentError();
}

Status UcxLayerSink::LayerReady(uint32_t layer) {
  OC_CHECK(!finished_);
  OC_RETURN_IF_ERROR(state_->CurrentError());
  if (state_->direct.segment >= 0 && !SegmentInUse(state_->direct.segment)) {
    // Shared memory raises no peer-failure event, and writes into a segment attached here
    // (in place, or UCX's own puts) never fail: a client that died or freed its buffer shows
    // as the segment's only attachment being ours.
    state_->FailEndpoint(Status::Unavailable("the client detached its target memory"),
                         /*close_now=*/true);
    return state_->CurrentError();
  }
  descriptor::Notification n;
  n.kind = descriptor::NotificationKind::kLayerReady;
  n.request_key = state_->address;
  n.layer = layer;
  ++state_->layers_notified;
  return state_->Enqueue(n, "");
}

Status UcxLayerSink::Finish(const Status& final) {
  OC_CHECK(!finished_);
  finished_ = true;
  State& s = *state_;
  Status error = s.CurrentError();
  if (error.ok() && !final.ok()) {
    error = final;
  }
  if (!s.endpoint->failed()) {
    descriptor::Notification n;
    n.request_key = s.address;
    std::string message;
    if (error.ok()) {
      n.kind = descriptor::NotificationKind::kDone;
      n.layer = s.layers_notified;
    } else {
      n.kind = descriptor::NotificationKind::kError;
      n.code = error.code();
      message = std::string(error.message().substr(0, descriptor::kMaxErrorMessageBytes));
      n.message_bytes = static_cast<uint32_t>(message.size());
    }
    (void)s.Enqueue(n, std::move(message));
  }
  // Every operation completes, also on a failed endpoint (with an error: UCX's peer failure
  // handling, or the client refusing the bytes), and gives its staging buffer back first; so
  // when Finish returns, every buffer of this request is back in the pool or retired.
  std::unique_lock<std::mutex> lock(s.mu);
  const bool drained = s.cv.wait_for(lock, s.plane.options().op_timeout, [&] {
    return (s.in_flight == 0 && s.pending.empty() && !s.sending) || s.abandoned;
  });
  lock.unlock();
  if (!drained) {
    kLog.Warn("request writes still in flight after the timeout; closing the endpoint");
    s.FailEndpoint(Status::Unavailable("data-plane writes did not complete in time"),
                   /*close_now=*/true);
  }
  if (!error.ok()) {
    return error;  // the error the client was told about (or would have been)
  }
  return s.CurrentError();
}

}  // namespace oc::storage
