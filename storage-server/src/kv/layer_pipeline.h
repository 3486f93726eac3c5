#pragma once
// LayerPipeline: how one descriptor GET uses more than one core
// (docs/decisions/one-descriptor-get-several-cores.md). The assembler (layer_assembler.cc) cuts a
// request into units in delivery order: one staging buffer's slice reads, or one batch of pinned
// slices, plus a marker after each layer's last unit (layerwise). The pipeline runs the units'
// reads on the engine's shared assembly workers, several at once (the units of layer l+1 while
// layer l is handed over, and a large layer's units side by side), and hands the units to the sink
// strictly in order, from the request's own thread only: BeforeLayer(l) (the pacer) before layer
// l's first write, BeforeBytes (the pacer) and Write()/WritePinned() per unit, LayerReady(l) at
// its marker. So the sink sees
// exactly the calls, in exactly the order, of a request read alone.
//
// Bound: units read or being read but not yet handed over belong to at most
// `layers_in_flight` (K) consecutive layers in layerwise delivery, and hold at most K layers'
// bytes (K·M·S) in any delivery; a push that would pass either hands the oldest unit over
// first. Staging buffers come from the sink, which bounds them too (see
// Assembler::NextBuffer for how a request holding buffers never blocks on the sink's pool).
//
// A unit that no worker has started when the request needs it is read by the request's own
// thread (the unit is claimed once, by whoever comes first), so a pool busy with other
// requests makes a request no slower than reading alone; workers are shared by every request
// in arrival order, and no thread is started per request.
//
// Errors: the first unit (in order) whose read failed ends the hand-over with its error;
// Abort() then waits for the reads workers have started and drops every unit. Nothing is
// written to the sink after Abort(), so after the caller reports the error with Finish() no
// byte reaches the target.
//
// Thread safety: one request thread calls every method; workers touch only the units they
// claimed and the shared completion state.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "kv/read_ahead.h"
#include "kv/slice_source.h"
#include "oc/common/executor.h"
#include "oc/common/status.h"
#include "oc/storage/kv.h"
#include "oc/storage/layer_sink.h"

namespace oc::storage::kv {

// One unit of a request: the reads of one staging buffer (staging), or one batch of pinned
// slices (pinned), or a layer's end (marker).
struct PipelineUnit {
  uint32_t layer = 0;   // the layer of its first slice
  bool marker = false;  // LayerReady(layer), no bytes
  uint64_t bytes = 0;   // payload bytes it carries
  // Staging: `fill` bytes of `buffer` land at `run_start`, read by `reads` (`keys` per read).
  StagingBuffer buffer;
  uint64_t run_start = 0;
  uint64_t fill = 0;
  std::vector<SliceRead> reads;
  std::vector<WindowKey> keys;
  // Pinned: `pins` land at `pin_dests`; the read fills `pieces`.
  std::vector<SlicePin> pins;
  std::vector<uint64_t> pin_dests;
  std::vector<PinnedPiece> pieces;

  std::atomic<bool> claimed{false};  // a thread has taken (or dropped) its read
  bool done = false;                 // guarded by the pipeline's mutex: `status` is final
  Status status;
  uint64_t read_us = 0;
  bool by_worker = false;
};

class LayerPipeline {
 public:
  // Reads one unit's slices (ReadSlices into its buffer, or PinSlices into its pieces). Called
  // on workers and the request thread, concurrently for different units when `parallel`.
  using ReadFn = std::function<Status(PipelineUnit&)>;

  struct Options {
    // Shared workers that read ahead; null reads each unit on the request thread when it is
    // pushed and hands it over at once (one unit in flight: the sequential assembler).
    BoundedExecutor* workers = nullptr;
    // K (KvOptions::layers_in_flight). REQUIRES: >= 1.
    uint32_t layers_in_flight = 1;
    // M·S: bytes of one layer of this request; the byte bound is K times this.
    uint64_t layer_bytes = 0;
    // Units come layer by layer (the layer bound applies) and, with a pacer, are paced.
    bool layerwise = false;
    // Called before layer l's first write (layerwise only); null: unpaced.
    LayerPacer* pacer = nullptr;
  };

  LayerPipeline(LayerSink& sink, KvGetReport& report, Options options, ReadFn read);
  ~LayerPipeline();  // Abort()
  LayerPipeline(const LayerPipeline&) = delete;
  LayerPipeline& operator=(const LayerPipeline&) = delete;

  // Queues a unit after the ones pushed before it, first handing over as many of those as
  // the bound requires, and starts its read. The first error of a hand-over.
  Status Push(std::unique_ptr<PipelineUnit> unit);
  // Queues LayerReady(layer) after every unit pushed so far.
  Status PushLayerEnd(uint32_t layer);
  // True while units are queued (read ahead, not handed over).
  bool holding() const { return !queue_.empty(); }
  // Hands the oldest queued unit to the sink, waiting for its read (or reading it here if no
  // worker has started it). REQUIRES: holding().
  Status HandOverOne();
  // Hands every queued unit over.
  Status Drain();
  // Waits for the reads workers started, then drops every queued unit (buffers back to the
  // sink, pins released) without handing it over. Idempotent.
  void Abort();

  // When the first byte went to the sink, if any did.
  std::optional<std::chrono::steady_clock::time_point> first_write() const { return first_write_; }

 private:
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
  };
  static void RunRead(Shared& shared, const ReadFn& read, PipelineUnit& unit, bool by_worker);
  Status Write(PipelineUnit& unit);

  LayerSink& sink_;
  KvGetReport& report_;
  const Options options_;
  const ReadFn read_;
  const uint64_t max_bytes_;
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  std::deque<std::shared_ptr<PipelineUnit>> queue_;  // request thread only
  uint64_t queued_bytes_ = 0;
  std::optional<uint32_t> paced_layer_;  // the last layer BeforeLayer was called for
  std::optional<std::chrono::steady_clock::time_point> first_write_;
};

}  // namespace oc::storage::kv
