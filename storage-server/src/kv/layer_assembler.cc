// Layer-major (and chunk-major) assembly of a descriptor request into a LayerSink
// (kv_engine.h, docs/design.md "Delivery"). Every offset comes from descriptor::ChunkGeometry.

#include <algorithm>
#include <optional>

#include <fmt/core.h>

#include "kv/kv_engine.h"
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

// Fills staging buffers with contiguous destination runs and hands them to the sink; or, when
// the source lends its memory and the sink takes it (`pinned`), hands the sink each slice's
// bytes where the backend holds them, in batches of one staging buffer's worth.
class Assembler {
 public:
  // `read_ahead`: where reads go instead of straight to `source` (may be null).
  Assembler(SliceSource& source, std::string_view bucket, const PlanResult& plan, LayerSink& sink,
            KvGetReport& report, bool pinned, ReadAhead* read_ahead)
      : source_(source),
        bucket_(bucket),
        plan_(plan),
        sink_(sink),
        report_(report),
        pinned_(pinned),
        read_ahead_(read_ahead) {}

  // Adds `length` bytes of chunk j's range `slot` (kv_2ltd: 0 for K, 1 for V) from `source`
  // in its object to land at `dest`.
  Status Add(uint64_t chunk, uint32_t slot, uint64_t source, uint64_t dest, uint64_t length) {
    if (pinned_) {
      pins_.push_back(SlicePin{plan_.names[chunk], source, length});
      pin_dests_.push_back(dest);
      pin_bytes_ += length;
      if (pin_bytes_ >= sink_.buffer_bytes() || pins_.size() >= kMaxPinBatch) {
        return Flush();
      }
      return Status::Ok();
    }
    while (length > 0) {
      if (buffer_.valid() && (run_start_ + fill_ != dest || fill_ == buffer_.bytes().size())) {
        OC_RETURN_IF_ERROR(Flush());
      }
      if (!buffer_.valid()) {
        OC_ASSIGN_OR_RETURN(buffer_, sink_.AcquireBuffer());
        if (buffer_.bytes().empty()) {
          return Status::Internal("sink lent an empty staging buffer");
        }
        run_start_ = dest;
        fill_ = 0;
      }
      const uint64_t n = std::min<uint64_t>(length, buffer_.bytes().size() - fill_);
      // Reads of one buffer are contiguous in it: one that also continues the last one's
      // range of the object extends it (chunk by chunk, a run is then a whole chunk).
      if (!reads_.empty() && keys_.back().chunk == chunk && keys_.back().slot == slot &&
          reads_.back().offset + reads_.back().dest.size() == source) {
        SliceRead& last = reads_.back();
        last.dest = MutableByteSpan(last.dest.data(), last.dest.size() + n);
      } else {
        reads_.push_back(SliceRead{plan_.names[chunk], source, buffer_.bytes().subspan(fill_, n)});
        keys_.push_back(WindowKey{chunk, slot});
      }
      fill_ += n;
      source += n;
      dest += n;
      length -= n;
    }
    return Status::Ok();
  }

  // Reads the current buffer's (or batch's) slices and hands them to the sink.
  Status Flush() {
    if (pinned_) {
      return FlushPinned();
    }
    if (!buffer_.valid()) {
      return Status::Ok();
    }
    const Clock::time_point t0 = Clock::now();
    Result<std::vector<SliceStatus>> statuses = read_ahead_ != nullptr
                                                    ? read_ahead_->Read(reads_, keys_)
                                                    : source_.ReadSlices(bucket_, reads_);
    report_.timings.read_us += Micros(Clock::now() - t0);
    OC_RETURN_IF_ERROR(statuses.status());
    for (size_t i = 0; i < reads_.size(); ++i) {
      if ((*statuses)[i] != SliceStatus::kOk) {
        return ChangedStatus(reads_[i].name);
      }
    }
    reads_.clear();
    keys_.clear();
    if (report_.writes == 0) {
      transfer_start_ = Clock::now();
    }
    const uint64_t fill = fill_;
    fill_ = 0;
    ++report_.writes;
    return sink_.Write(run_start_, std::move(buffer_), fill);
  }

  Status FlushPinned() {
    if (pins_.empty()) {
      return Status::Ok();
    }
    const Clock::time_point t0 = Clock::now();
    std::vector<PinnedPiece> pieces;
    Result<std::vector<SliceStatus>> statuses = source_.PinSlices(bucket_, pins_, &pieces);
    report_.timings.read_us += Micros(Clock::now() - t0);
    OC_RETURN_IF_ERROR(statuses.status());
    for (size_t i = 0; i < pins_.size(); ++i) {
      if ((*statuses)[i] != SliceStatus::kOk) {
        return ChangedStatus(pins_[i].name);
      }
    }
    if (report_.writes == 0) {
      transfer_start_ = Clock::now();
    }
    for (PinnedPiece& p : pieces) {
      ++report_.writes;
      OC_RETURN_IF_ERROR(
          sink_.WritePinned(pin_dests_[p.slice] + p.within, p.bytes, std::move(p.hold)));
    }
    pins_.clear();
    pin_dests_.clear();
    pin_bytes_ = 0;
    return Status::Ok();
  }

  void Drop() {
    buffer_.Reset();
    reads_.clear();
    keys_.clear();
    pins_.clear();
    pin_dests_.clear();
  }
  std::optional<Clock::time_point> transfer_start() const {
    return report_.writes > 0 ? std::optional(transfer_start_) : std::nullopt;
  }

 private:
  SliceSource& source_;
  const std::string_view bucket_;
  const PlanResult& plan_;
  LayerSink& sink_;
  KvGetReport& report_;
  const bool pinned_;
  ReadAhead* const read_ahead_;
  std::vector<SlicePin> pins_;       // pinned: the batch not yet read
  std::vector<uint64_t> pin_dests_;  // pinned: where each of pins_ lands
  uint64_t pin_bytes_ = 0;
  StagingBuffer buffer_;
  uint64_t run_start_ = 0;
  uint64_t fill_ = 0;
  std::vector<SliceRead> reads_;
  std::vector<WindowKey> keys_;  // reads_[i]'s chunk range
  Clock::time_point transfer_start_{};
};

Status Deliver(Assembler& a, const descriptor::Descriptor& d, const PlanResult& plan,
               LayerSink& sink, const AssembleOptions& options, KvGetReport& report) {
  const uint64_t m = plan.plan.matched;
  if (m == 0) {
    return Status::Ok();  // nothing to deliver; the client learns M = 0
  }
  OC_ASSIGN_OR_RETURN(
      descriptor::ChunkGeometry source,
      descriptor::ChunkGeometry::Make(d.layout, plan.plan.num_chunks, d.num_layers, d.layer_bytes));
  // A body is dense in M; a target keeps the descriptor's N (docs/protocol.md).
  OC_ASSIGN_OR_RETURN(
      descriptor::ChunkGeometry dest,
      descriptor::ChunkGeometry::Make(d.layout, options.dense ? m : plan.plan.num_chunks,
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
  // Chunk-major into a body must be written in increasing offsets: chunk by chunk. Chunkwise
  // chunk-major is also read chunk by chunk: its runs are then whole chunks.
  const bool chunk_outer =
      d.delivery == descriptor::Delivery::kChunkMajor && (options.dense || !layerwise);
  if (chunk_outer) {
    for (uint64_t j = 0; j < m; ++j) {
      for (uint32_t l = 0; l < layers; ++l) {
        OC_RETURN_IF_ERROR(slice(l, j));
      }
    }
  } else {
    for (uint32_t l = 0; l < layers; ++l) {
      if (layerwise && options.pacer != nullptr) {
        OC_RETURN_IF_ERROR(options.pacer->BeforeLayer(l, m * d.layer_bytes));
      }
      for (uint64_t j = 0; j < m; ++j) {
        OC_RETURN_IF_ERROR(slice(l, j));
      }
      if (layerwise) {
        // A buffer never spans two layers, so layer l is announced right after its bytes.
        OC_RETURN_IF_ERROR(a.Flush());
        OC_RETURN_IF_ERROR(sink.LayerReady(l));
        ++report.layers_notified;
      }
    }
  }
  OC_RETURN_IF_ERROR(a.Flush());
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
  // Read ahead when the backend asks for it (RADOS: per-op costs); zero-copy lends instead.
  std::optional<ReadAhead> read_ahead;
  if (!pinned && plan.plan.matched > 0) {
    const ReadAheadPolicy policy = source.read_ahead();
    if (policy.window_bytes > 0) {
      read_ahead.emplace(source, bucket, policy, plan.plan.matched,
                         d.layout == descriptor::StoredLayout::k2LTD ? 2 : 1,
                         uint64_t{d.num_layers} * d.layer_bytes, range_bytes);
    }
  }
  Assembler a(source, bucket, plan, sink, report, pinned,
              read_ahead.has_value() && read_ahead->active() ? &*read_ahead : nullptr);
  Status delivered = Deliver(a, d, plan, sink, options, report);
  a.Drop();  // a buffer not handed over goes back before Finish waits for the others
  Status finished = sink.Finish(delivered);
  const Clock::time_point end = Clock::now();
  if (std::optional<Clock::time_point> t = a.transfer_start(); t.has_value()) {
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
      "transfer_us={} total_us={} read_ahead={} source_reads={}",
      plan.plan.request_id, descriptor::ServeModeName(plan.plan.mode), plan.plan.matched,
      plan.plan.payload_bytes, report.writes, report.timings.read_us, report.timings.transfer_us,
      report.timings.total_us, read_ahead.has_value() ? read_ahead->window_bytes() : 0,
      read_ahead.has_value() ? read_ahead->source_reads() : 0);
  return report;
}

}  // namespace oc::storage::kv
