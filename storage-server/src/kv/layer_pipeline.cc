#include "kv/layer_pipeline.h"

#include <algorithm>
#include <utility>

namespace oc::storage::kv {
namespace {

using Clock = std::chrono::steady_clock;

uint64_t Micros(Clock::duration d) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
}

// Layers spanned by the units queued: the newest unit's layer - the oldest's + 1.
uint32_t LayersSpanned(const std::deque<std::shared_ptr<PipelineUnit>>& q) {
  if (q.empty()) {
    return 0;
  }
  return q.back()->layer - q.front()->layer + 1;
}

}  // namespace

LayerPipeline::LayerPipeline(LayerSink& sink, KvGetReport& report, Options options, ReadFn read)
    : sink_(sink),
      report_(report),
      options_(options),
      read_(std::move(read)),
      max_bytes_(std::max<uint64_t>(options.layers_in_flight, 1) * options.layer_bytes) {}

LayerPipeline::~LayerPipeline() { Abort(); }

void LayerPipeline::RunRead(Shared& shared, const ReadFn& read, PipelineUnit& unit,
                            bool by_worker) {
  const Clock::time_point t0 = Clock::now();
  Status s = read(unit);
  const uint64_t us = Micros(Clock::now() - t0);
  std::lock_guard<std::mutex> lock(shared.mu);
  unit.status = std::move(s);
  unit.read_us = us;
  unit.by_worker = by_worker;
  unit.done = true;
  shared.cv.notify_all();
}

Status LayerPipeline::Push(std::unique_ptr<PipelineUnit> owned) {
  std::shared_ptr<PipelineUnit> unit(std::move(owned));
  const uint32_t k = std::max<uint32_t>(options_.layers_in_flight, 1);
  // Keep the bound: the new unit may not take the queue past K layers' bytes, nor (layer by
  // layer) past K layers.
  while (!queue_.empty() && (queued_bytes_ + unit->bytes > max_bytes_ ||
                             (options_.layerwise && unit->layer >= queue_.front()->layer + k))) {
    OC_RETURN_IF_ERROR(HandOverOne());
  }
  queue_.push_back(unit);
  queued_bytes_ += unit->bytes;
  report_.peak_bytes_ahead = std::max(report_.peak_bytes_ahead, queued_bytes_);
  report_.peak_layers_ahead = std::max(report_.peak_layers_ahead, LayersSpanned(queue_));
  if (options_.workers == nullptr) {
    // Sequential: read now, hand over now.
    unit->claimed.store(true, std::memory_order_relaxed);
    RunRead(*shared_, read_, *unit, /*by_worker=*/false);
    return Drain();
  }
  // A worker reads it unless the request thread gets to it first (HandOverOne). The task
  // holds the unit and the completion state, never the pipeline, which may be gone when a
  // task that lost the race runs.
  std::shared_ptr<Shared> shared = shared_;
  ReadFn read = read_;
  Status submitted = options_.workers->Submit([unit, shared, read] {
    if (unit->claimed.exchange(true, std::memory_order_acq_rel)) {
      return;  // taken by the request thread, or dropped
    }
    RunRead(*shared, read, *unit, /*by_worker=*/true);
  });
  (void)submitted;  // refused (queue full, shutting down): the request thread reads it
  return Status::Ok();
}

Status LayerPipeline::PushLayerEnd(uint32_t layer) {
  auto marker = std::make_unique<PipelineUnit>();
  marker->layer = layer;
  marker->marker = true;
  marker->claimed.store(true, std::memory_order_relaxed);
  marker->done = true;
  if (options_.workers == nullptr) {
    return Write(*marker);
  }
  queue_.push_back(std::shared_ptr<PipelineUnit>(std::move(marker)));
  return Status::Ok();
}

Status LayerPipeline::HandOverOne() {
  std::shared_ptr<PipelineUnit> unit = queue_.front();
  if (!unit->claimed.exchange(true, std::memory_order_acq_rel)) {
    RunRead(*shared_, read_, *unit, /*by_worker=*/false);  // no worker started it: read it here
  } else {
    std::unique_lock<std::mutex> lock(shared_->mu);
    shared_->cv.wait(lock, [&] { return unit->done; });
  }
  queue_.pop_front();
  queued_bytes_ -= unit->bytes;
  Status s = Write(*unit);
  // What Write did not hand to the sink (a failed read's buffer, its pins) goes back here, on
  // the request thread: the worker's task may hold the last reference to the unit and drop it
  // after this request returned and its sink, with the pool that lent the buffer, is gone.
  unit->buffer.Reset();
  unit->pieces.clear();
  return s;
}

Status LayerPipeline::Write(PipelineUnit& unit) {
  if (unit.marker) {
    OC_RETURN_IF_ERROR(sink_.LayerReady(unit.layer));
    ++report_.layers_notified;
    return Status::Ok();
  }
  report_.timings.read_us += unit.read_us;
  if (unit.by_worker) {
    ++report_.worker_reads;
  }
  OC_RETURN_IF_ERROR(unit.status);
  if (options_.layerwise && options_.pacer != nullptr &&
      (!paced_layer_.has_value() || *paced_layer_ != unit.layer)) {
    // Layer l's bytes leave only once the pacer dispatched them, however early they were read.
    paced_layer_ = unit.layer;
    OC_RETURN_IF_ERROR(options_.pacer->BeforeLayer(unit.layer, options_.layer_bytes));
  }
  if (options_.layerwise && options_.pacer != nullptr) {
    // A pacer that lets a layer go in parts holds each write until its bytes have left.
    OC_RETURN_IF_ERROR(options_.pacer->BeforeBytes(unit.bytes));
  }
  if (!first_write_.has_value()) {
    first_write_ = Clock::now();
  }
  if (!unit.pins.empty()) {
    for (PinnedPiece& p : unit.pieces) {
      ++report_.writes;
      OC_RETURN_IF_ERROR(
          sink_.WritePinned(unit.pin_dests[p.slice] + p.within, p.bytes, std::move(p.hold)));
    }
    unit.pieces.clear();
    return Status::Ok();
  }
  ++report_.writes;
  return sink_.Write(unit.run_start, std::move(unit.buffer), unit.fill);
}

Status LayerPipeline::Drain() {
  while (!queue_.empty()) {
    OC_RETURN_IF_ERROR(HandOverOne());
  }
  return Status::Ok();
}

void LayerPipeline::Abort() {
  for (const std::shared_ptr<PipelineUnit>& unit : queue_) {
    if (unit->claimed.exchange(true, std::memory_order_acq_rel)) {
      // A worker is reading into it (or it is done): wait, then drop it.
      std::unique_lock<std::mutex> lock(shared_->mu);
      shared_->cv.wait(lock, [&] { return unit->done; });
    }
    unit->buffer.Reset();
    unit->pieces.clear();
    unit->reads.clear();
  }
  queue_.clear();
  queued_bytes_ = 0;
}

}  // namespace oc::storage::kv
