// Layer-major (and chunk-major) assembly of a descriptor request into a LayerSink
// (kv_engine.h, docs/design.md "Delivery"). Every offset comes from descriptor::ChunkGeometry.

#include <algorithm>
#include <optional>

#include <fmt/core.h>

#include "kv/kv_engine.h"
#include "kv/layer_pipeline.h"
#include "kv/read_ahead.h"
#include "oc/common/log.h"
#include "oc/descriptor/layout.h"

namespace oc::storage::kv {
namespace {

const Logger kLog{"kv"};

uint64_t Micros(Clock::duration d) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
}

// Slices per PinSlices call at most (zero-copy path).
constexpr size_t kMaxPinBatch = 64;

// A slice planned present with the right size is gone or shrunk now: deleted or overwritten
// under the request.
Status ChangedStatus(std::string_view name) {
  return Status(Code::kFailedPrecondition, Subject::kKey, "",
                fmt::format("chunk {} changed during the request", name));
}

// Cuts a request into pipeline units (layer_pipeline.h): contiguous destination runs packed
// into staging buffers, or, when the source lends its memory and the sink takes it (`pinned`),
// batches of slices of one staging buffer's worth that the sink gets where the backend holds
// them. The pipeline reads the units (here on the request thread, or on shared workers) and
// hands them to the sink in order.
class Assembler {
 public:
  // `reads`: the request's ReadSession; `read_ahead`: where reads go instead of straight to
  // `reads` (may be null; its windows are per request, so its reads are never run in parallel).
  Assembler(SliceSource& source, std::string_view bucket, ReadSession& reads,
            const PlanResult& plan, LayerSink& sink, bool pinned, ReadAhead* read_ahead)
      : source_(source),
        bucket_(bucket),
        reads_(reads),
        plan_(plan),
        sink_(sink),
        pinned_(pinned),
        read_ahead_(read_ahead) {}

  void Start(LayerPipeline& pipeline) { pipeline_ = &pipeline; }
  // The layer of the slices added next.
  void set_layer(uint32_t layer) { layer_ = layer; }

  // Reads one unit's slices (the pipeline's ReadFn).
  Status Read(PipelineUnit& u) {
    if (!u.pins.empty()) {
      Result<std::vector<SliceStatus>> statuses = source_.PinSlices(bucket_, u.pins, &u.pieces);
      OC_RETURN_IF_ERROR(statuses.status());
      for (size_t i = 0; i < u.pins.size(); ++i) {
        if ((*statuses)[i] != SliceStatus::kOk) {
          return ChangedStatus(u.pins[i].name);
        }
      }
      return Status::Ok();
    }
    Result<std::vector<SliceStatus>> statuses =
        read_ahead_ != nullptr ? read_ahead_->Read(u.reads, u.keys) : reads_.ReadSlices(u.reads);
    OC_RETURN_IF_ERROR(statuses.status());
    for (size_t i = 0; i < u.reads.size(); ++i) {
      if ((*statuses)[i] != SliceStatus::kOk) {
        return ChangedStatus(u.reads[i].name);
      }
    }
    return Status::Ok();
  }

  // Adds `length` bytes of chunk j's range `slot` (kv_2ltd: 0 for K, 1 for V) from `source`
  // in its object to land at `dest`.
  Status Add(uint64_t chunk, uint32_t slot, uint64_t source, uint64_t dest, uint64_t length) {
    if (pinned_) {
      if (unit_ == nullptr) {
        unit_ = NewUnit();
      }
      unit_->pins.push_back(SlicePin{plan_.names[chunk], source, length});
      unit_->pin_dests.push_back(dest);
      unit_->bytes += length;
      if (unit_->bytes >= sink_.buffer_bytes() || unit_->pins.size() >= kMaxPinBatch) {
        return Flush();
      }
      return Status::Ok();
    }
    while (length > 0) {
      if (unit_ != nullptr &&
          (unit_->run_start + unit_->fill != dest || unit_->fill == unit_->buffer.bytes().size())) {
        OC_RETURN_IF_ERROR(Flush());
      }
      if (unit_ == nullptr) {
        OC_ASSIGN_OR_RETURN(StagingBuffer buffer, NextBuffer());
        if (buffer.bytes().empty()) {
          return Status::Internal("sink lent an empty staging buffer");
        }
        unit_ = NewUnit();
        unit_->buffer = std::move(buffer);
        unit_->run_start = dest;
      }
      PipelineUnit& u = *unit_;
      const uint64_t n = std::min<uint64_t>(length, u.buffer.bytes().size() - u.fill);
      // Reads of one buffer are contiguous in it: one that also continues the last one's
      // range of the object extends it (chunk by chunk, a run is then a whole chunk).
      if (!u.reads.empty() && u.keys.back().chunk == chunk && u.keys.back().slot == slot &&
          u.reads.back().offset + u.reads.back().dest.size() == source) {
        SliceRead& last = u.reads.back();
        last.dest = MutableByteSpan(last.dest.data(), last.dest.size() + n);
      } else {
        u.reads.push_back(
            SliceRead{plan_.names[chunk], source, u.buffer.bytes().subspan(u.fill, n)});
        u.keys.push_back(WindowKey{chunk, slot});
      }
      u.fill += n;
      u.bytes += n;
      source += n;
      dest += n;
      length -= n;
    }
    return Status::Ok();
  }

  // Hands the unit being filled to the pipeline.
  Status Flush() {
    if (unit_ == nullptr) {
      return Status::Ok();
    }
    return pipeline_->Push(std::move(unit_));
  }

  void Drop() { unit_.reset(); }

 private:
  std::unique_ptr<PipelineUnit> NewUnit() const {
    auto u = std::make_unique<PipelineUnit>();
    u->layer = layer_;
    return u;
  }

  // A staging buffer for the next unit. While the pipeline holds units of this request (read
  // ahead, not handed over) it only takes a buffer that is free now and otherwise hands its
  // oldest unit over: blocking on the sink's pool while holding buffers could leave requests
  // sharing the pool (the data plane's) each waiting for buffers another holds, until the
  // timeout (docs/decisions/kv-one-assembler.md). Holding none, it
  // waits as the sequential assembler did.
  Result<StagingBuffer> NextBuffer() {
    while (pipeline_->holding()) {
      OC_ASSIGN_OR_RETURN(StagingBuffer b, sink_.TryAcquireBuffer());
      if (b.valid()) {
        return b;
      }
      OC_RETURN_IF_ERROR(pipeline_->HandOverOne());
    }
    return sink_.AcquireBuffer();
  }

  SliceSource& source_;
  const std::string_view bucket_;
  ReadSession& reads_;
  const PlanResult& plan_;
  LayerSink& sink_;
  const bool pinned_;
  ReadAhead* const read_ahead_;
  LayerPipeline* pipeline_ = nullptr;
  uint32_t layer_ = 0;
  std::unique_ptr<PipelineUnit> unit_;  // being filled
};

Status Deliver(Assembler& a, LayerPipeline& pipeline, const descriptor::Descriptor& d,
               const PlanResult& plan, LayerSink& sink, bool dense, bool chunk_outer,
               KvGetReport& report) {
  const uint64_t m = plan.plan.matched;
  if (m == 0) {
    return Status::Ok();  // nothing to deliver; the client learns M = 0
  }
  OC_ASSIGN_OR_RETURN(
      descriptor::ChunkGeometry source,
      descriptor::ChunkGeometry::Make(d.layout, plan.plan.num_chunks, d.num_layers, d.layer_bytes));
  // A body is dense in M; a target keeps the descriptor's N (docs/protocol.md).
  OC_ASSIGN_OR_RETURN(descriptor::ChunkGeometry dest,
                      descriptor::ChunkGeometry::Make(d.layout, dense ? m : plan.plan.num_chunks,
                                                      d.num_layers, d.layer_bytes));
  const uint32_t layers = d.num_layers;
  auto slice = [&](uint32_t l, uint64_t j) -> Status {
    const uint64_t base = dest.DestinationOffset(d.delivery, l, j);
    const descriptor::LayerSource src = source.Source(l);
    uint32_t slot = 0;
    for (const descriptor::SliceCopy& c : src.view()) {
      OC_RETURN_IF_ERROR(a.Add(j, slot++, c.source_offset, base + c.slice_offset, c.length));
    }
    return Status::Ok();
  };
  const bool layerwise = plan.plan.mode == descriptor::ServeMode::kLayerwise;
  if (chunk_outer) {
    for (uint64_t j = 0; j < m; ++j) {
      for (uint32_t l = 0; l < layers; ++l) {
        a.set_layer(l);
        OC_RETURN_IF_ERROR(slice(l, j));
      }
    }
  } else {
    for (uint32_t l = 0; l < layers; ++l) {
      // The pipeline calls the pacer before layer l's first write (LayerPipeline::Options).
      a.set_layer(l);
      for (uint64_t j = 0; j < m; ++j) {
        OC_RETURN_IF_ERROR(slice(l, j));
      }
      if (layerwise) {
        // A buffer never spans two layers, so layer l is announced right after its bytes.
        OC_RETURN_IF_ERROR(a.Flush());
        OC_RETURN_IF_ERROR(pipeline.PushLayerEnd(l));
      }
    }
  }
  OC_RETURN_IF_ERROR(a.Flush());
  OC_RETURN_IF_ERROR(pipeline.Drain());
  if (report.layers_notified == 0) {
    // Chunkwise (or chunk by chunk): every layer is complete only now.
    for (uint32_t l = 0; l < layers; ++l) {
      OC_RETURN_IF_ERROR(sink.LayerReady(l));
      ++report.layers_notified;
    }
  }
  return Status::Ok();
}

}  // namespace

Result<KvGetReport> Assemble(SliceSource& source, std::string_view bucket,
                             const descriptor::Descriptor& d, const PlanResult& plan,
                             LayerSink& sink, const AssembleOptions& options,
                             Clock::time_point started) {
  KvGetReport report;
  report.plan = plan.plan;
  if (options.pacer != nullptr) {
    report.assigned_rate_gbps = options.pacer->assigned_rate_gbps();
  }
  // Zero-copy into a data-plane target when both ends can; a body sink needs contiguous bytes
  // in offset order, which staging buffers give.
  const uint64_t range_bytes =
      d.layout == descriptor::StoredLayout::k2LTD ? d.layer_bytes / 2 : d.layer_bytes;
  const bool pinned = !options.dense && options.zero_copy &&
                      (range_bytes >= options.zero_copy_min_bytes || sink.writes_in_place()) &&
                      sink.accepts_pinned() && source.SupportsPinnedSlices();
  // One ReadSession for all of the request's reads (RADOS: the chunks' index records read
  // once, in one batch before the first read: Prepare); it outlives the read-ahead and the
  // pipeline, whose reads use it.
  const std::unique_ptr<ReadSession> reads = source.OpenReads(bucket);
  // Read ahead when the backend asks for it (RADOS: per-op costs); zero-copy lends instead.
  std::optional<ReadAhead> read_ahead;
  if (!pinned && plan.plan.matched > 0) {
    reads->Prepare(std::span(plan.names).first(plan.plan.matched));
    const ReadAheadPolicy policy = source.read_ahead();
    if (policy.window_bytes > 0) {
      read_ahead.emplace(*reads, policy, plan.plan.matched,
                         d.layout == descriptor::StoredLayout::k2LTD ? 2 : 1,
                         uint64_t{d.num_layers} * d.layer_bytes, range_bytes, options.workers);
    }
  }
  const bool windows = read_ahead.has_value() && read_ahead->active();
  Assembler a(source, bucket, *reads, plan, sink, pinned, windows ? &*read_ahead : nullptr);
  const bool layerwise = plan.plan.mode == descriptor::ServeMode::kLayerwise;
  // Chunk-major into a body must be written in increasing offsets: chunk by chunk. Chunkwise
  // chunk-major is also read chunk by chunk: its runs are then whole chunks.
  const bool chunk_outer =
      d.delivery == descriptor::Delivery::kChunkMajor && (options.dense || !layerwise);
  LayerPipeline::Options po;
  // Read-ahead windows belong to the request: the units' reads stay on its thread, one at a
  // time, and the windows' loads ahead run on the workers.
  po.workers = windows ? nullptr : options.workers;
  po.layers_in_flight = std::max<uint32_t>(options.layers_in_flight, 1);
  po.layer_bytes = plan.plan.matched * d.layer_bytes;
  po.layerwise = layerwise && !chunk_outer;
  po.pacer = po.layerwise ? options.pacer : nullptr;
  LayerPipeline pipeline(sink, report, po, [&a](PipelineUnit& u) { return a.Read(u); });
  a.Start(pipeline);
  Status delivered = Deliver(a, pipeline, d, plan, sink, options.dense, chunk_outer, report);
  // Reads still running end, and every buffer not handed over goes back, before Finish waits
  // for the writes in flight; nothing is written after this.
  pipeline.Abort();
  a.Drop();
  Status finished = sink.Finish(delivered);
  const Clock::time_point end = Clock::now();
  if (std::optional<Clock::time_point> t = pipeline.first_write(); t.has_value()) {
    report.timings.transfer_us = Micros(end - *t);
  }
  report.timings.total_us = Micros(end - started);
  if (!delivered.ok()) {
    kLog.Warn("descriptor GET failed req={} matched={} status={}", plan.plan.request_id,
              plan.plan.matched, delivered.ToString());
    return delivered;
  }
  if (!finished.ok()) {
    kLog.Warn("descriptor GET delivery failed req={} status={}", plan.plan.request_id,
              finished.ToString());
    return finished;
  }
  kLog.Debug(
      "descriptor GET req={} mode={} matched={} bytes={} writes={} read_us={} "
      "transfer_us={} total_us={} read_ahead={} source_reads={} loads_ahead={} "
      "by_workers={} worker_reads={} peak_layers_ahead={}",
      plan.plan.request_id, descriptor::ServeModeName(plan.plan.mode), plan.plan.matched,
      plan.plan.payload_bytes, report.writes, report.timings.read_us, report.timings.transfer_us,
      report.timings.total_us, read_ahead.has_value() ? read_ahead->window_bytes() : 0,
      read_ahead.has_value() ? read_ahead->source_reads() : 0,
      read_ahead.has_value() ? read_ahead->loads_ahead() : 0,
      read_ahead.has_value() ? read_ahead->loads_ahead_by_workers() : 0, report.worker_reads,
      report.peak_layers_ahead);
  return report;
}

}  // namespace oc::storage::kv
