#pragma once
// UcxDataPlane: the storage server's end of the UCX data plane (docs/design.md, "Data plane").
// It owns one UcxWorker (ucp context + worker + progress thread), a UCX listener on a socket
// address that clients connect to (oc/descriptor/data_plane_wire.h; docs/protocol.md, "Data plane:
// connecting"), the EndpointCache of their connections and the registered StagingPool, and hands
// out one UcxLayerSink per descriptor request with a data-plane target. For a descriptor PUT it
// pulls bytes out of the client's registered buffer with ReadRemote(). Thread safety: every method
// may be called from any thread. The data plane must outlive every sink it opened.

#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "data_plane/copy_engine.h"
#include "data_plane/endpoint_cache.h"
#include "data_plane/staging_pool.h"
#include "oc/common/result.h"
#include "oc/descriptor/descriptor.h"
#include "oc/storage/layer_sink.h"
#include "oc/ucx/worker.h"

namespace oc::storage {

// How a layer-ready notification is ordered after the layer's puts
// (docs/decisions/data-plane-layer-ready-ordering.md).
enum class LayerOrdering {
  kFlush,  // ucp_ep_flush_nbx, then the active message from the flush completion
  kFence,  // ucp_worker_fence, then the active message at once
};

// How layer bytes reach the client (docs/decisions/data-plane-ucx-puts-over-shm.md).
enum class WriteMode {
  kPut,         // ucp_put_nbx into the target: one-sided, the RDMA path
  kRendezvous,  // a rendezvous active message the client receives into the target (one CMA
                // copy on one host with UCX 1.13, whose shared-memory puts are emulated)
};

struct DataPlaneOptions {
  // Socket address ("host:port", "[v6]:port") of the listener clients connect to; port 0
  // picks a free one. The discovery answer (Store::DataPlane) hands clients the address
  // actually bound, so it must be one they can reach.
  // Default: "127.0.0.1:0"
  std::string listen = "127.0.0.1:0";
  // UCX transports (UCX_TLS syntax); empty: UCX's own configuration. tcp is added when
  // missing, for UCX's connection manager (oc/ucx/transports.h).
  // Default: ""
  std::string transports;
  // Client connections kept; the least recently used is closed beyond this.
  // Default: 256
  uint64_t max_endpoints = 256;
  // Registered staging buffers shared by all requests: bounds staging memory.
  // Default: 8
  uint32_t staging_buffers = 8;
  // Bytes of one staging buffer: the largest single put.
  // Default: 4 MiB
  uint64_t staging_buffer_bytes = 4ull << 20;
  // Longest wait for a staging buffer, for a read, or for a request's writes at Finish().
  // Default: 30 s
  std::chrono::milliseconds op_timeout{30'000};
  // Default: kFlush
  LayerOrdering ordering = LayerOrdering::kFlush;
  // kRendezvous measured 37x kPut over shared memory and ~2x over TCP for 4 MiB layers with
  // UCX 1.13 (docs/decisions/data-plane-rendezvous-default.md); kPut is the
  // one-sided path for RDMA.
  // Default: kRendezvous
  WriteMode write_mode = WriteMode::kRendezvous;
  // UCX keepalive interval for noticing vanished clients on endpoints with peer error
  // handling ("" = UCX's default).
  // Default: ""
  std::string keepalive_interval;
  // When UCX has attached the client's target here (same host, memory the client's UCX
  // allocated in System V shared memory: client::DataPlane::Allocate), write it in place:
  // one memcpy from the block cache per byte, no message per write, no client CPU
  // (docs/decisions/data-plane-direct-writes-shm.md).
  // Default: true
  bool direct_writes = true;
  // Threads copying in-place writes (CopyEngine): one request's slices are copied on this
  // many cores at once. KvOptions::data_plane_copy_threads resolves its 0 to the usable cores.
  // Default: 1
  uint32_t copy_threads = 1;

  // kInvalidArgument naming the field: zero counts or sizes, staging buffers outside
  // 4 KiB..1 GiB, more than 1024 buffers, or a zero timeout.
  Status Validate() const;
};

// True while System V segment `id` has an attachment besides the server's own: the client's,
// whose target it is (UcxDataPlane attaches such targets to write them in place).
bool SegmentInUse(int id);

class UcxDataPlane {
 public:
  static Result<std::unique_ptr<UcxDataPlane>> Create(const DataPlaneOptions& options);
  ~UcxDataPlane();
  UcxDataPlane(const UcxDataPlane&) = delete;
  UcxDataPlane& operator=(const UcxDataPlane&) = delete;

  // A sink writing into `target` for one request. Checks the target before any I/O:
  // kInvalidArgument naming x-oc-target-connection if no such connection is open here;
  // kPermissionDenied naming it if another principal named it first; kInvalidArgument naming
  // x-oc-target-rkey / x-oc-target-address if the rkey is empty, oversized or refused
  // (CheckRkey), or address + length overflows, or x-oc-target-length if the target is
  // shared memory of the client but reaches outside it; kPermissionDenied (field
  // x-oc-target-rkey) if the rkey names shared memory whose owner page does not name that
  // connection; kUnavailable if the connection has failed.
  Result<std::unique_ptr<LayerSink>> OpenSink(const descriptor::DataPlaneTarget& target);

  // The bytes of a descriptor PUT's source when UCX attached them here (a client on this host
  // whose UCX allocated the buffer in System V shared memory: the sources ReadRemote() reads
  // with a memcpy), to be read in place with no staging copy; `mapping` keeps them attached.
  struct InPlaceSource {
    std::shared_ptr<const void> mapping;
    ByteSpan bytes;  // the whole target: [address, address + length) of the client
  };
  // The source read in place, its page tables populated in one call (a read fault per 4 KiB
  // page cost a quarter of the server's CPU on a 448 MiB PUT: docs/decisions/
  // kv-put-pull-in-place.md); nullopt when UCX did not attach it (pull it with ReadRemote()).
  // Errors as ReadRemote()'s target checks.
  Result<std::optional<InPlaceSource>> SourceInPlace(const descriptor::DataPlaneTarget& source);
  // A registered staging buffer for ReadRemote(); kUnavailable if none is free in time.
  Result<StagingBuffer> AcquireStaging();
  // Reads `length` bytes at `src_offset` of the client's buffer `source` into the first
  // bytes of `into` (ucp_get_nbx), waiting for completion. kOutOfRange if the range is not
  // inside the source or does not fit `into` (nothing is read); kInvalidArgument and
  // kPermissionDenied as for OpenSink; kUnavailable on timeout or a failed endpoint.
  Status ReadRemote(const descriptor::DataPlaneTarget& source, uint64_t src_offset,
                    const StagingBuffer& into, uint64_t length);

  // The address the listener is bound to ("ip:port"): what clients connect to.
  const std::string& listen_address() const { return listen_address_; }
  // True if this server's transports allow shared memory (the discovery answer's
  // x-oc-data-plane-shm; oc/ucx/transports.h, ErrorMode).
  bool shared_memory() const { return shared_memory_; }
  EndpointCache& endpoints() { return *endpoints_; }
  StagingPool& staging() { return *pool_; }
  // Bytes of zero-copy writes in flight, bounded like the staging memory (count x bytes).
  ByteBudget& pinned_budget() { return *pinned_; }
  const DataPlaneOptions& options() const { return options_; }
  ucx::UcxWorker& worker() { return *worker_; }
  // Copies the bytes of in-place writes (started on first use).
  CopyEngine& copier();

 private:
  explicit UcxDataPlane(const DataPlaneOptions& options);
  // Creates the listener and registers the hello handler. REQUIRES: before worker_->Start().
  Status Listen(const sockaddr_storage& address);
  struct Remote;    // endpoint + unpacked rkey of one target
  struct Attached;  // a client segment attached here, written in place
  class AttachedTargets;
  // `in_place`: attach the target when UCX mapped it here (AttachedTargets), to be written or
  // read without UCX.
  Result<Remote> Connect(const descriptor::DataPlaneTarget& target, bool in_place);

  const DataPlaneOptions options_;
  // Destruction order matters: endpoints, then pool, then worker (declared first).
  std::unique_ptr<ucx::UcxWorker> worker_;
  std::unique_ptr<StagingPool> pool_;
  std::unique_ptr<ByteBudget> pinned_;
  std::unique_ptr<EndpointCache> endpoints_;
  std::unique_ptr<AttachedTargets> attached_;  // cleared before the worker goes
  ucp_listener_h listener_ = nullptr;          // destroyed once the progress thread stopped
  std::string listen_address_;
  bool shared_memory_ = true;
  std::once_flag copier_once_;
  std::unique_ptr<CopyEngine> copier_;
};

}  // namespace oc::storage
