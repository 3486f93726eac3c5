#pragma once
// The KV-cache side of the Store (docs/design.md: "The descriptor", "Delivery", "Data plane"):
// the value types of the three descriptor calls every Store implements (store.h:
// ProbeChunks, GetLayers, PutChunks), the options that steer them, and the two small
// interfaces a caller plugs in: ChunkSource (where PutChunks pulls chunk bytes from) and
// LayerPacer (the scheduler's seam in GetLayers). HeapBufferPool is a bounded pool of plain
// staging buffers for LayerSinks that need no registered memory (the gateway's HTTP body
// sink, the RPC's streaming sink, tests).
//
// Every offset of a descriptor request comes from descriptor/layout.h (ChunkGeometry); this
// module never re-derives one.
// Thread safety: value types; HeapBufferPool may be used from any thread. A ChunkSource or
// LayerPacer is called by one thread at a time (the request's).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "oc/common/bytes.h"
#include "oc/common/executor.h"
#include "oc/common/result.h"
#include "oc/common/status.h"
#include "oc/common/thread_annotations.h"
#include "oc/descriptor/codec.h"
#include "oc/descriptor/descriptor.h"
#include "oc/storage/layer_sink.h"

namespace oc::sched {
struct SchedulerOptions;  // oc/sched/options.h
}  // namespace oc::sched

namespace oc::storage {

// Defaults of KvOptions::admission_queue and admission_timeout (also the gateway's own
// executor's in front of a remote store).
inline constexpr uint32_t kDefaultAdmissionQueue = 1024;
inline constexpr std::chrono::milliseconds kDefaultAdmissionTimeout{10'000};
// Largest admission_queue accepted.
inline constexpr uint32_t kMaxAdmissionQueue = 1 << 16;

struct KvOptions {
  // Θ: a request whose matched payload W = M·L·S is at least this is delivered layerwise
  // (one layer at a time, layer-ready after each, paced); smaller ones chunkwise (one batch,
  // every layer announced together at the end). The paper uses 512 MB at 100 Gbps, about
  // 40 ms of transfer; this machine's aggregation path moves 3-5 GB/s, so the same 40 ms is
  // ~128 MiB (docs/decisions/kv-theta-128mib.md).
  // Default: 128 MiB
  uint64_t layerwise_threshold_bytes = 128ull << 20;
  // The store's own UCX data plane (opened on the first discovery or request with a target):
  // transports in UCX_TLS syntax, "" for UCX's own configuration (tcp is added for UCX's
  // connection manager when missing).
  // Default: ""
  std::string data_plane_transports;
  // Socket address its listener binds, "host:port"; port 0 picks a free one. Clients learn
  // the bound address from the discovery request (docs/protocol.md, "Data plane:
  // connecting"), so it must be an address they can reach.
  // Default: "127.0.0.1:0"
  std::string data_plane_listen = "127.0.0.1:0";
  // Registered staging buffers of that data plane, shared by every request: the bound on
  // staging memory of all UCX deliveries and pulls together.
  // Default: 8
  uint32_t data_plane_staging_buffers = 8;
  // Bytes of one of those buffers: the largest single put or get.
  // Default: 4 MiB
  uint64_t data_plane_staging_buffer_bytes = 4ull << 20;
  // Longest wait for a staging buffer, a remote read, or a request's writes at the end.
  // Default: 30 s
  std::chrono::milliseconds data_plane_timeout{30'000};
  // Write a target in place when UCX has attached it here (a client on this host whose
  // buffer UCX allocated in System V shared memory); else the bytes go over UCX
  // (DataPlaneOptions::direct_writes).
  // Default: true
  bool data_plane_direct_writes = true;
  // Deliveries into a data-plane target send the layer slices straight from the store's
  // block cache (pinned while in flight, bounded like the staging memory) instead of copying
  // them into staging buffers first: one copy per byte fewer
  // (docs/decisions/kv-zero-copy-from-block-cache.md). Bodies always go through staging.
  // Default: true
  bool zero_copy = true;
  // Most bytes PutChunks takes from a ChunkSource per Peek; a source that cannot lend its
  // bytes (the default Peek) reads this many into a buffer of its own, the request's only
  // buffer besides the store's writers.
  // Default: 1 MiB
  uint64_t put_read_bytes = 1ull << 20;
  // Workers of the store's descriptor executor (Store::descriptor_executor): the descriptor
  // GETs and PUTs that move bytes (into a body, a data-plane target, or from either) at once,
  // in this process, whichever front end (gateway or RPC server) took them
  // (docs/decisions/one-bounded-executor.md). 0 sizes it from the
  // cores this process may use (oc::UsableCores): DescriptorThreadsFor(0).
  // Default: 0 (kDescriptorThreadsPerCore per usable core, at least kMinDescriptorThreads)
  uint32_t descriptor_threads = 0;
  // Descriptor GETs that may wait, in arrival order, for one of those workers when all are
  // busy; one more is refused with kResourceExhausted naming kv.descriptor_threads and
  // saying the queue is full (the gateway answers 503 SlowDown). A waiting GET holds no
  // thread and no staging memory (the gateway's session is suspended on a deferred
  // response). PUTs and the RPC server's calls never wait: they start at once or are refused
  // (docs/decisions/many-clients-admission-queue.md).
  // Default: 1024
  uint32_t admission_queue = kDefaultAdmissionQueue;
  // Longest a GET waits in that queue; one still waiting then is refused the same way, saying
  // the deadline passed.
  // Default: 10 s
  std::chrono::milliseconds admission_timeout{kDefaultAdmissionTimeout};
  // Threads of the KV engine's assembly pool, shared by every descriptor GET: they read a
  // request's next staging buffers or pinned batches (ReadSlices, PinSlices) while the
  // request's own thread hands earlier ones to the sink in order, so one large GET reads on
  // several cores (docs/decisions/one-descriptor-get-several-cores.md). 0: one per
  // usable core (oc::UsableCores). 1..kMaxAssemblyThreads.
  // Default: 0 (the usable cores)
  uint32_t assembly_threads = 0;
  // K: layers one GET reads ahead of its sink at most, and at most K layers' bytes (K·M·S):
  // the bound on what a request stages or pins beyond what its sink has taken. 1 still splits
  // a layer across the assembly threads. 0: the usable cores, at least 2.
  // 1..kMaxLayersInFlight.
  // Default: 0 (the usable cores, at least 2)
  uint32_t layers_in_flight = 0;
  // Threads copying in-place writes into shared-memory targets (the data plane's copy
  // engine), shared by every request. 0: one per usable core. 1..kMaxAssemblyThreads.
  // Default: 0 (the usable cores)
  uint32_t data_plane_copy_threads = 0;

  // kInvalidArgument naming the field for zero counts, sizes or timeouts.
  // The [scheduler] table (oc/sched/options.h): when set, layerwise GetLayers are admitted into
  // the shared cap and paced (src/kv/pacing.h); chunkwise ones bypass it. The binaries set it
  // from their config; a null pointer delivers unpaced.
  // Default: null
  std::shared_ptr<const sched::SchedulerOptions> scheduler;

  Status Validate() const;
};

// Sizing of the descriptor executor when KvOptions::descriptor_threads is 0. A transfer holds
// its worker for its whole length but mostly waits (a client reading the body, the pacer, the
// data plane's completions), so a core keeps many in flight; each body-delivered GET also
// stages 4 MiB, so the bound is one on staging memory too.
inline constexpr uint32_t kDescriptorThreadsPerCore = 16;
inline constexpr uint32_t kMinDescriptorThreads = 16;
// Largest descriptor_threads accepted.
inline constexpr uint32_t kMaxDescriptorThreads = 4096;

// The executor size for `configured` (KvOptions::descriptor_threads): itself when non-zero,
// else kDescriptorThreadsPerCore x oc::UsableCores() (affinity and cgroup quota; at least
// kMinDescriptorThreads, at most kMaxDescriptorThreads).
uint32_t DescriptorThreadsFor(uint32_t configured);

// The options of a descriptor executor: DescriptorThreadsFor(descriptor_threads) workers all
// started at once, admission_queue waiting GETs for at most admission_timeout, refusals naming
// kv.descriptor_threads.
BoundedExecutor::Options DescriptorExecutorOptions(uint32_t descriptor_threads,
                                                   uint32_t admission_queue,
                                                   std::chrono::milliseconds admission_timeout);

// Largest assembly_threads and data_plane_copy_threads accepted.
inline constexpr uint32_t kMaxAssemblyThreads = 256;
// Largest layers_in_flight accepted.
inline constexpr uint32_t kMaxLayersInFlight = 64;
// The resolved KvOptions::assembly_threads, layers_in_flight and data_plane_copy_threads:
// `configured` when non-zero, else from oc::UsableCores() as each field's comment says.
uint32_t AssemblyThreadsFor(uint32_t configured);
uint32_t LayersInFlightFor(uint32_t configured);
uint32_t CopyThreadsFor(uint32_t configured);

// What GetLayers decided before any byte moves; the gateway builds its response headers
// from it (x-oc-matched-chunks, x-oc-mode, Content-Length, x-oc-request-id).
struct KvPlan {
  uint64_t num_chunks = 0;  // N, as the descriptor named them
  uint64_t matched = 0;     // M: chunks 0..M-1 are present with the descriptor's shape
  descriptor::ServeMode mode = descriptor::ServeMode::kChunkwise;
  // M·L·S: bytes delivered. Into a body sink they are dense in M (offsets computed with N
  // replaced by M); into a data-plane target at the descriptor's offsets (with N).
  uint64_t payload_bytes = 0;
  std::string request_id;
};

struct KvTimings {
  uint64_t plan_us = 0;      // descriptor checks, the batch HEAD and the shape checks
  uint64_t read_us = 0;      // time spent in ReadSlices (storage reads into staging)
  uint64_t transfer_us = 0;  // from the first write handed to the sink to Finish() returning
  uint64_t total_us = 0;     // the whole call
};

struct KvGetReport {
  KvPlan plan;
  KvTimings timings;
  uint32_t layers_notified = 0;  // LayerReady calls made
  uint64_t writes = 0;           // sink Write() calls made
  // The read-ahead pipeline (docs/decisions/one-descriptor-get-several-cores.md): the
  // most layers and bytes read ahead of the sink at once (at most layers_in_flight layers and
  // as many layers' bytes), and the units whose read a shared assembly worker ran.
  uint32_t peak_layers_ahead = 0;
  uint64_t peak_bytes_ahead = 0;
  uint64_t worker_reads = 0;
  // Rate the scheduler assigned at admission, Gbps; 0 when not paced (chunkwise, or no
  // KvOptions::scheduler). Under epochs an arrival may be admitted at 0 and get its share at
  // the next boundary.
  double assigned_rate_gbps = 0;
};

// The batch existence answer: how many leading chunks are present with the descriptor's
// shape, and each chunk's stored size (nullopt when absent).
struct KvProbeResult {
  uint64_t matched = 0;
  std::vector<std::optional<uint64_t>> sizes;
};

struct KvPutReport {
  uint64_t chunks = 0;          // chunk objects committed (written or, below, left as they were)
  uint64_t bytes = 0;           // bytes received, N·L·S
  uint64_t receive_us = 0;      // pulling bytes from the source (body or UCX gets)
  uint64_t commit_wait_us = 0;  // waiting for commits after the last byte arrived
  uint64_t total_us = 0;
  std::string request_id;
  // With Descriptor::if_none_match (create-if-absent): one entry per chunk, in descriptor
  // order, true where the chunk was present at the commit and left as it was (this request's
  // bytes for it were freed). Empty without it.
  std::vector<bool> existed;
};

// Where PutChunks pulls chunk bytes from when the descriptor has no data-plane target: the
// N chunk objects back to back (chunk j at [j·L·S, (j+1)·L·S), each in its stored layout),
// e.g. an HTTP request body. PutChunks commits only once Read has returned 0, so a source
// whose bytes are checked (a payload hash, aws-chunked signatures, the body's length) must
// return 0 only after every check passed, and an error otherwise: the gateway's pipe returns
// 0 once the session vouched for the whole body, the RPC's once the caller sent kCommit.
// PutChunks takes the bytes with Peek and Consume, which a source holding its bytes in memory
// (the gateway's pipe) overrides to lend them without a copy; the default reads them with
// Read into a buffer of the source's (docs/decisions/put-copies-lent-buffers.md). A caller
// uses either Read or Peek/Consume on one source, never both.
class ChunkSource {
 public:
  virtual ~ChunkSource() = default;
  // Fills up to out.size() bytes; returns how many (0 only at the verified end of the
  // source). An error if the source was abandoned or failed its checks.
  virtual Result<uint64_t> Read(MutableByteSpan out) = 0;
  // The next bytes of the source, not yet consumed: at least one and at most max_bytes, the
  // source's own memory, valid until the next call on the source; empty only at the
  // verified end (as Read's 0). Errors as Read. The default holds at most max_bytes (the
  // largest asked) of a Read. REQUIRES: max_bytes > 0.
  virtual Result<ByteSpan> Peek(uint64_t max_bytes);
  // Drops the first n bytes of what Peek returned (the rest is returned again by the next
  // Peek). kFailedPrecondition if n exceeds that span.
  virtual Status Consume(uint64_t n);

 private:
  // The default Peek's buffer and its unconsumed bytes [peek_pos_, peek_end_).
  std::unique_ptr<std::byte[]> peek_buffer_;
  uint64_t peek_capacity_ = 0;
  uint64_t peek_pos_ = 0;
  uint64_t peek_end_ = 0;
};

// The scheduler's seam in layerwise delivery: BeforeLayer is called before the first write of
// each layer with that layer's bytes, then BeforeBytes before each write of that layer with the
// write's bytes; either may block to pace the request, or fail it (the error ends the request and
// reaches the client). A pacer that lets whole layers go needs only BeforeLayer; one that paces
// parts of a layer (docs/decisions/pacer-sub-layer-parts.md) holds each write in BeforeBytes
// until its bytes are dispatched. GetLayers uses kv::RequestPacer (src/kv/pacing.h) for
// layerwise requests when KvOptions::scheduler is set.
class LayerPacer {
 public:
  virtual ~LayerPacer() = default;
  virtual Status BeforeLayer(uint32_t layer, uint64_t bytes) = 0;
  // Before `bytes` more of the layer last named by BeforeLayer are written. Default: no wait.
  virtual Status BeforeBytes(uint64_t bytes) {
    (void)bytes;
    return Status::Ok();
  }
  // The rate this request was assigned, Gbps (reported in KvGetReport).
  virtual double assigned_rate_gbps() const = 0;
};

// A fixed set of equal heap buffers lent as StagingBuffers; Acquire blocks while all are
// lent. Counts the most buffers ever lent at once (tests check staging bounds with it).
class HeapBufferPool final : public StagingBuffer::Owner {
 public:
  // REQUIRES: count > 0, buffer_bytes > 0 (checked).
  HeapBufferPool(uint32_t count, uint64_t buffer_bytes);
  HeapBufferPool(const HeapBufferPool&) = delete;
  HeapBufferPool& operator=(const HeapBufferPool&) = delete;

  // kUnavailable if no buffer came back within `timeout`.
  Result<StagingBuffer> Acquire(std::chrono::milliseconds timeout);
  void Release(uint32_t slot) noexcept override;
  // True if `buffer` was lent by this pool.
  bool Owns(const StagingBuffer& buffer) const { return buffer.owner() == this; }

  uint32_t count() const { return count_; }
  uint64_t buffer_bytes() const { return buffer_bytes_; }
  uint32_t free_count() const;
  uint32_t peak_lent() const;

 private:
  const uint32_t count_;
  const uint64_t buffer_bytes_;
  std::unique_ptr<std::byte[]> memory_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<uint32_t> free_ OC_GUARDED_BY(mu_);
  uint32_t peak_lent_ OC_GUARDED_BY(mu_) = 0;
};

}  // namespace oc::storage
