#pragma once
// HttpLayerSink: the LayerSink (storage/layer_sink.h) of a descriptor GET without a data-plane
// target (docs/design.md, Delivery: "the same bytes stream in the HTTP response body"). The
// assembler, running Store::GetLayers on the descriptor executor, fills staging buffers from a
// bounded HeapBufferPool and hands them over in body order; the session reads the same buffers back
// through Body() (a storage::ObjectReader, which the session already streams in bounded
// pieces, lent by Body()'s Lend without a copy) and each buffer returns to the pool once the
// session has written its bytes. So staging memory is the pool's count x size whatever the
// payload, and the one copy per byte is the one into the socket's write buffer.
//
// Either side may go away first: when the body reader is destroyed (the client disconnected,
// the session gave up) the sink fails every later call with kCancelled so GetLayers ends
// quickly; when GetLayers fails mid-body, the reader returns its error after the bytes already
// queued, and the session closes the connection (the client sees a short body).
//
// A client that stops reading must cost its own connection, not the service (docs/design.md,
// "Delivery"; docs/decisions/slow-body-readers.md): while every staging buffer is queued, the
// producer (a descriptor-executor worker) waits in steps of StallPolicy::step; after a step in
// which the reader took no byte, if another request waits for a worker (others_waiting), the
// producer gives up (kUnavailable, so GetLayers ends and the worker is free) and the
// connection is closed through the hook the session installed (StallHook), which frees the
// staging at once. Without a waiter, a stalled reader keeps its worker up to `timeout` (and
// the session's own write timeout).
// Thread safety: one producer thread (LayerSink calls) and one consumer (the reader) at a time.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "oc/storage/kv.h"
#include "oc/storage/layer_sink.h"
#include "oc/storage/store.h"

namespace oc::gateway {

class HttpLayerSink final : public storage::LayerSink {
 public:
  struct Pipe;
  // When the producer gives up on a reader that stopped taking bytes (see above).
  struct StallPolicy {
    // Length of one wait step of the producer for a staging buffer; 0: never give up early.
    std::chrono::milliseconds step{0};
    // True when another request waits for the producer's worker; called at most once a step,
    // on the producer's thread.
    std::function<bool()> others_waiting;
    // Named in the log line of a reader given up on.
    std::string request_id;
  };
  // `buffers` staging buffers of `buffer_bytes` each; `timeout` bounds each wait on either
  // side. Without a StallPolicy the producer never gives up early.
  HttpLayerSink(uint32_t buffers, uint64_t buffer_bytes, std::chrono::milliseconds timeout);
  HttpLayerSink(uint32_t buffers, uint64_t buffer_bytes, std::chrono::milliseconds timeout,
                StallPolicy stall);
  ~HttpLayerSink() override;

  uint64_t buffer_bytes() const override;
  Result<storage::StagingBuffer> AcquireBuffer() override;
  Result<storage::StagingBuffer> TryAcquireBuffer() override;
  // REQUIRES (else kInvalidArgument): dest_offset is exactly the number of bytes written so
  // far (body bytes are gap-free and in order, as GetLayers promises for a body sink).
  Status Write(uint64_t dest_offset, storage::StagingBuffer buffer, uint64_t length) override;
  Status LayerReady(uint32_t layer) override;
  Status Finish(const Status& final) override;

  // The response body: Read() and Lend() block until bytes are queued, return 0 (an empty
  // span) after a successful Finish() once everything was read, or the request's error. A
  // lent buffer goes back to the pool at the reader's next call (BodyPieceReady says whether
  // the next call would wait). Call once; the reader may outlive the sink.
  std::unique_ptr<storage::ObjectReader> Body(uint64_t length);

  // Installs the session's `close` (closes the client's connection; may run on any thread,
  // must not block): run once if the producer gives up on a stalled reader, at once if it
  // already has; never after the body reader was destroyed. The returned function may outlive
  // the sink.
  std::function<void(std::function<void()>)> StallHook();

 private:
  std::shared_ptr<Pipe> pipe_;
};

// True when `reader` is an HttpLayerSink body whose next Read or Lend returns without waiting
// (a piece is queued, or the body ended). The session then takes the piece on its I/O thread
// instead of a Store pool trip; a virtual on storage::ObjectReader would say the same for
// every reader, but no other reader can tell, and store.h is under most of the tree.
bool BodyPieceReady(const storage::ObjectReader& reader);

}  // namespace oc::gateway
