#pragma once
// UcxLayerSink: the LayerSink that writes a request's payload into the client's registered
// buffer with ucp_put_nbx and tells it about each layer with an active message ordered after
// the layer's bytes (docs/design.md, "Data plane"; wire format in
// oc/descriptor/data_plane_wire.h and docs/protocol.md).
//
// Every Write() is checked against the target's length before anything is posted.
// WritePinned() sends straight from the store's memory (no memh: UCX registers it through its
// registration cache where the transport needs it) and keeps the store's hold until the send
// completes; its bytes in flight are bounded by the plane's ByteBudget. The
// notification path is one ordered queue: LayerReady() and Finish() enqueue a message, make
// it wait for the bytes before it (ucp_ep_flush_nbx in LayerOrdering::kFlush,
// ucp_worker_fence in kFence) and whichever thread sees the queue head ready sends it, one
// sender at a time, so messages leave in call order.
// A target UCX attached in this process (UcxDataPlane's direct writes) is written in place:
// Write() copies into it before it returns, WritePinned() hands the copy to the data plane's
// CopyEngine, and a notification waits for the copies before it as a rendezvous one waits for
// its sends.
// Operations in flight keep the sink's state (endpoint, unpacked rkey) alive by reference, so
// a sink destroyed after a timeout never leaves a callback pointing at freed memory.
// Thread safety: as LayerSink; completions run on the UcxWorker's progress thread.

#include <ucp/api/ucp.h>

#include <memory>

#include "data_plane/endpoint_cache.h"
#include "oc/descriptor/descriptor.h"
#include "oc/storage/layer_sink.h"

namespace oc::storage {

class UcxDataPlane;
struct PutOp;  // one write in flight (ucx_layer_sink.cc)

// The target as this process writes it in place (empty: over UCX), and what keeps that
// memory attached while the sink lives.
struct InPlace {
  MutableByteSpan bytes;
  std::shared_ptr<const void> hold;
  int segment = -1;  // the target's System V segment, when UCX attached it here (else -1)
};

class UcxLayerSink final : public LayerSink {
 public:
  // Takes ownership of `rkey` (unpacked for `endpoint`; null when writing in place).
  // REQUIRES: the target was checked by UcxDataPlane::OpenSink; `plane` outlives the sink.
  UcxLayerSink(UcxDataPlane& plane, std::shared_ptr<Endpoint> endpoint, ucp_rkey_h rkey,
               const descriptor::DataPlaneTarget& target, InPlace in_place);
  // Finishes with kCancelled if Finish() was not called.
  ~UcxLayerSink() override;
  UcxLayerSink(const UcxLayerSink&) = delete;
  UcxLayerSink& operator=(const UcxLayerSink&) = delete;

  uint64_t buffer_bytes() const override;
  Result<StagingBuffer> AcquireBuffer() override;
  Result<StagingBuffer> TryAcquireBuffer() override;
  Status Write(uint64_t dest_offset, StagingBuffer buffer, uint64_t length) override;
  bool accepts_pinned() const override { return true; }
  bool writes_in_place() const override;
  Status WritePinned(uint64_t dest_offset, ByteSpan bytes,
                     std::shared_ptr<const void> hold) override;
  Status LayerReady(uint32_t layer) override;
  Status Finish(const Status& final) override;

  struct State;  // implementation detail (ucx_layer_sink.cc); public for its callbacks

 private:
  void Post(PutOp* op, const void* data, uint64_t length, uint64_t dest_offset, ucp_mem_h memh);
  State* state_;  // reference-counted with the operations in flight
  bool finished_ = false;
};

}  // namespace oc::storage
