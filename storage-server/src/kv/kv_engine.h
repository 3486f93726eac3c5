#pragma once
// KvEngine: the descriptor calls of the Store (kv.h, store.h) implemented over a backend's
// SliceSource (slice_source.h) — HeadMany for planning, ReadSlices/PinSlices for layer reads,
// PutGroup for chunk writes — plus a UCX data plane for data-plane targets and pulls
// (src/data_plane). OpenStore composes one over every backend it opens (composed_store.h);
// RemoteStore forwards the calls whole to the storage server, whose composed store runs them.
//
// Planning (PlanRequest): one HeadMany of the N names; M = the longest present prefix. A
// present chunk of the prefix whose size is not L·S, or whose stored ChunkShape disagrees
// with the descriptor, is an error naming the descriptor field (never a silent partial).
//
// Delivery (Assemble): the slices (layer l, chunk j < M) are visited in an order whose
// destination offsets suit the sink (layer by layer, or chunk by chunk for chunk-major into
// a body sink, whose offsets must increase), packed into the sink's staging buffers as
// contiguous destination runs and read straight into them with one ReadSlices per buffer.
// The buffers' reads run on shared assembly workers, up to K layers ahead of the sink, and
// are handed to Write() in order by the request's thread (layer_pipeline.h), so one request
// reads on several cores while earlier buffers are written. Layerwise, a buffer never spans two
// layers and LayerReady(l) follows layer l's last write; chunkwise, buffers span layers and every
// layer is announced after the last write. Zero-copy (into a sink that accepts_pinned(), from a
// source that SupportsPinnedSlices()): the same visit, but each slice's bytes are pinned where the
// backend holds them (one PinSlices per staging buffer's worth) and handed to WritePinned() without
// a copy on this side. Thread safety: KvEngine methods may be called concurrently.

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kv/slice_source.h"
#include "oc/common/executor.h"
#include "oc/common/result.h"
#include "oc/common/thread_annotations.h"
#include "oc/descriptor/descriptor.h"
#include "oc/storage/kv.h"
#include "oc/storage/layer_sink.h"

namespace oc::storage {

class UcxDataPlane;

namespace kv {

class PacingService;

using Clock = std::chrono::steady_clock;

// Structural checks of a descriptor on the storage side, whatever limits the gateway
// applied: descriptor::Validate with no size limits (N, L, G, S non-zero, S even for
// kv_2ltd, N·L·S without overflow, the target whole and at least N·L·S).
Status CheckDescriptor(const descriptor::Descriptor& d);

struct PlanResult {
  KvPlan plan;
  std::vector<std::string> names;              // object names of chunks 0..M-1
  std::vector<std::optional<uint64_t>> sizes;  // every chunk's size, nullopt if absent
};

// Plans a descriptor request (see the header comment). `threshold` is Θ.
Result<PlanResult> PlanRequest(SliceSource& source, std::string_view bucket,
                               const descriptor::Descriptor& d, uint64_t threshold);

struct AssembleOptions {
  // True for a body sink: offsets dense in M and strictly increasing.
  bool dense = false;
  // Called before each layer's first write in layerwise delivery; none: unpaced.
  LayerPacer* pacer = nullptr;
  // Hand the backend's own memory to a sink that takes it (LayerSink::WritePinned) instead of
  // copying through staging buffers, when the source can lend it and each stored range of a
  // slice (S, or S/2 for kv_2ltd) is at least zero_copy_min_bytes: every range is then its
  // own message, and below ~128 KiB the messages cost more CPU than the copy they save
  // (kv_bench, docs/decisions/kv-zero-copy-from-block-cache.md).
  bool zero_copy = true;
  uint64_t zero_copy_min_bytes = 128 << 10;
  // Shared workers that read units ahead of the sink (layer_pipeline.h); null: every read on
  // the request's thread, one unit at a time, each handed over right after its read.
  BoundedExecutor* workers = nullptr;
  // K: layers (and layers' bytes) read ahead of the sink at most (KvOptions::layers_in_flight).
  uint32_t layers_in_flight = 1;
};

// Delivers plan's M chunks into `sink` and ends it with Finish() (also on error). Returns
// the report; the first error of reads or the sink otherwise. `started` is when the
// request began (for total_us).
Result<KvGetReport> Assemble(SliceSource& source, std::string_view bucket,
                             const descriptor::Descriptor& d, const PlanResult& plan,
                             LayerSink& sink, const AssembleOptions& options,
                             Clock::time_point started);

// Stores the N chunks of `d` (see Store::PutChunks): pulled over `plane` from d.target when
// set (REQUIRES plane then), else read from `body`.
Result<KvPutReport> PutChunks(SliceSource& source, std::string_view bucket,
                              const descriptor::Descriptor& d, ChunkSource* body,
                              UcxDataPlane* plane, const KvOptions& options);

class KvEngine {
 public:
  // `source` must outlive the engine.
  KvEngine(SliceSource& source, KvOptions options);
  ~KvEngine();
  KvEngine(const KvEngine&) = delete;
  KvEngine& operator=(const KvEngine&) = delete;

  Result<KvProbeResult> ProbeChunks(std::string_view bucket, const descriptor::Descriptor& d);
  Result<KvGetReport> GetLayers(std::string_view bucket, const descriptor::Descriptor& d,
                                LayerSink* body_sink,
                                const std::function<Status(const KvPlan&)>& on_plan);
  Result<KvPutReport> PutChunks(std::string_view bucket, const descriptor::Descriptor& d,
                                ChunkSource* body);

  // The data plane, opened on first use. kUnavailable-class errors from UCX.
  Result<UcxDataPlane*> DataPlane();
  // Where clients connect to it (Store::DataPlane), opening it on first use.
  Result<storage::DataPlaneInfo> DataPlaneInfo();
  // The scheduler's pacing of layerwise requests; null when KvOptions::scheduler is unset or
  // invalid (logged at construction).
  PacingService* pacing() { return pacing_.get(); }

  // The store's descriptor executor (Store::descriptor_executor): DescriptorThreadsFor(
  // KvOptions::descriptor_threads) workers and the admission queue (DescriptorExecutorOptions).
  BoundedExecutor& executor() { return executor_; }
  // Refuses new descriptor tasks and waits for the running ones to end: the store calls it
  // before it tears the engine (and what its tasks read) down. Idempotent.
  void Shutdown() {
    executor_.Shutdown();
    assembly_.Shutdown();  // after the tasks that submit to it
  }
  // The shared assembly workers (KvOptions::assembly_threads).
  BoundedExecutor& assembly_workers() { return assembly_; }

 private:
  SliceSource& source_;
  const KvOptions options_;
  BoundedExecutor executor_;
  BoundedExecutor assembly_;  // reads ahead for every GET (LayerPipeline)
  std::mutex plane_mu_;
  std::unique_ptr<UcxDataPlane> plane_ OC_GUARDED_BY(plane_mu_);
  std::unique_ptr<PacingService> pacing_;
};

}  // namespace kv
}  // namespace oc::storage
