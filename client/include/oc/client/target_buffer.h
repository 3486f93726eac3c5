#pragma once
// The client's end of the data plane (docs/design.md, "Data plane"): memory the storage server
// writes layers into, and the notifications that say a layer has landed.
//
// DataPlane owns the client's UCX context, one worker and its progress thread. From it:
//  - Connect(): the connection to a storage server's data plane (the address the gateway's
//    discovery answer gives: GET /{bucket}?objectcache&data-plane). Its UCX connects to the
//    server's listener and the server answers with a connection id, which descriptors name
//    (docs/protocol.md, "Data plane: connecting"). One connection per server, reused.
//  - TargetBuffer: memory (allocated here, or the caller's, wrapped) mapped for remote
//    access. Target(connection) gives exactly the descriptor's data-plane target fields:
//    connection id, packed rkey, buffer address and length.
//  - Delivery: the notifications of one request. The server sends "layer l ready" after
//    the bytes of layer l are in the buffer, then "done" or an error. The bytes arrive either
//    as one-sided puts or as rendezvous messages that the progress thread receives into the
//    buffer, each only if it falls wholly inside a buffer mapped here (docs/protocol.md).
//    WaitLayer(l) and Wait() block with a timeout; a per-layer callback is the push form.
// A request is recognised by its target address (the descriptor's x-oc-target-address, the
// start of the range the server writes into): call Expect() with it before sending the
// descriptor, and give concurrent requests disjoint ranges.
// No UCX type appears here; the implementation is client/src/ucx_receiver.cc.
//
// Thread safety: DataPlane and Delivery methods may be called from any thread. Callbacks run
// on the data plane's progress thread and must not block. A DataPlane must outlive its
// buffers and deliveries; a TargetBuffer must not be destroyed while a server writes into it.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "oc/common/bytes.h"
#include "oc/common/result.h"
#include "oc/common/status.h"
#include "oc/descriptor/descriptor.h"

namespace oc::client {

struct DataPlaneOptions {
  // UCX transports, as UCX_TLS spells them ("tcp", "shm,cma"...); empty: UCX's own
  // configuration (the UCX_TLS environment variable, else all the machine has).
  // Default: ""
  std::string transports;
  // UCX keepalive interval on this side's endpoints ("" = UCX's default).
  // Default: ""
  std::string keepalive_interval;
  // How long destroying a TargetBuffer or the DataPlane waits for rendezvous receives
  // still landing in it to complete (they normally finish in microseconds; a peer that
  // died mid-transfer fails them once UCX notices), and then, for the DataPlane, for its
  // worker's endpoints to flush. A buffer whose receives outlive it is leaked (owned memory)
  // and a data plane whose receives or flush outlive it leaks its UCX worker, both logged,
  // rather than freeing memory UCX may still write or aborting inside UCX.
  // Default: 5 s
  std::chrono::milliseconds teardown_timeout{5'000};
  // Longest wait for a server's welcome when connecting (Connect).
  // Default: 10 s
  std::chrono::milliseconds connect_timeout{10'000};
};

// Called once per layer-ready notification, in arrival order, on the progress thread.
using LayerCallback = std::function<void(uint32_t layer)>;

class TargetBuffer {
 public:
  virtual ~TargetBuffer() = default;

  // The whole buffer; its bytes are valid until the TargetBuffer is destroyed.
  virtual MutableByteSpan bytes() const = 0;
  uint64_t address() const { return reinterpret_cast<uint64_t>(bytes().data()); }
  uint64_t length() const { return bytes().size(); }
  // The packed remote key of the mapping (opaque bytes).
  virtual ByteSpan rkey() const = 0;

  // The descriptor's target for bytes [offset, offset + length) of this buffer, written by
  // the data plane that issued `connection` (DataPlane::Connect). kOutOfRange if that range
  // is not inside the buffer or is empty.
  Result<descriptor::DataPlaneTarget> Target(const descriptor::ConnectionId& connection,
                                             uint64_t offset, uint64_t length) const;
  // The descriptor's target for the whole buffer.
  descriptor::DataPlaneTarget Target(const descriptor::ConnectionId& connection) const;
};

class Delivery {
 public:
  virtual ~Delivery() = default;  // stops listening for this request

  // Waits until layer `layer` has landed. OK once it has; the request's error if the
  // server reported one first; kOutOfRange if the server finished without sending it (a
  // partial hit) or `layer` >= the number of layers expected; on timeout kUnavailable with
  // ErrorInfo::timed_out (oc/client/errors.h).
  virtual Status WaitLayer(uint32_t layer, std::chrono::milliseconds timeout) = 0;
  // Waits for the end of the request: OK on "done"; the server's error (its code and
  // message) on an error; kCorruption if a notification broke the protocol; on timeout
  // kUnavailable with ErrorInfo::timed_out.
  virtual Status Wait(std::chrono::milliseconds timeout) = 0;
  // Layers notified so far.
  virtual uint32_t layers_ready() const = 0;
  // True once the request ended: "done", an error, or Abort().
  virtual bool finished() const = 0;
  // Ends the request with `error` when it failed where the data plane cannot see it (the
  // HTTP answer was an error, so no notification will come): WaitLayer of a layer not yet
  // landed, and Wait, return `error` at once. No effect once the server reported the end.
  virtual void Abort(const Status& error) = 0;
};

class DataPlane {
 public:
  // Creates the UCX context and worker and starts the progress thread. UCX failures are
  // translated to Status (kUnimplemented if UCX lacks multi-thread support).
  static Result<std::unique_ptr<DataPlane>> Open(const DataPlaneOptions& options);
  virtual ~DataPlane() = default;

  // The connection to the storage server's data plane listening at `address` ("ip:port" or
  // "[v6]:port": the discovery answer's x-oc-data-plane-address), connecting on first use:
  // returns the id the server issued, the x-oc-target-connection of descriptors it serves.
  // `server_shared_memory` is the answer's x-oc-data-plane-shm (both ends derive UCX's
  // error-handling mode from it). A healthy connection is reused; one the server closed or
  // that failed is replaced. kInvalidArgument (field "address") if the address does not
  // resolve; kUnavailable if the server does not welcome the connection within
  // DataPlaneOptions::connect_timeout, or closes it.
  virtual Result<descriptor::ConnectionId> Connect(std::string_view address,
                                                   bool server_shared_memory) = 0;
  // Closes the connection to `address` if its id is still `id`, so the next Connect makes a
  // new one (after the server answered that it does not know the id).
  virtual void Disconnect(std::string_view address, const descriptor::ConnectionId& id) = 0;

  // Allocates `length` bytes (page-aligned, zeroed) and maps them. kInvalidArgument if
  // length is 0; kResourceExhausted if the memory cannot be had.
  virtual Result<std::unique_ptr<TargetBuffer>> Allocate(uint64_t length) = 0;
  // Maps caller memory, which must outlive the returned buffer. kInvalidArgument if empty.
  virtual Result<std::unique_ptr<TargetBuffer>> Wrap(MutableByteSpan memory) = 0;

  // Starts listening for the notifications of the request whose target starts at
  // `target_address` and holds `num_layers` layers; `on_layer` (optional) runs per layer.
  // kAlreadyExists if a live Delivery has that address; kInvalidArgument if num_layers is 0.
  virtual Result<std::unique_ptr<Delivery>> Expect(uint64_t target_address, uint32_t num_layers,
                                                   LayerCallback on_layer = {}) = 0;
};

}  // namespace oc::client
