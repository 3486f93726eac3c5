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
// Thread safety: one producer thread (LayerSink calls) and one consumer (the reader) at a time.

#include <chrono>
#include <cstdint>
#include <memory>

#include "oc/storage/kv.h"
#include "oc/storage/layer_sink.h"
#include "oc/storage/store.h"

namespace oc::gateway {

class HttpLayerSink final : public storage::LayerSink {
 public:
  struct Pipe;
  // `buffers` staging buffers of `buffer_bytes` each; `timeout` bounds each wait on either
  // side. `object` is the metadata the body reader reports (size = the payload).
  HttpLayerSink(uint32_t buffers, uint64_t buffer_bytes, std::chrono::milliseconds timeout);
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
  // lent buffer goes back to the pool at the reader's next call. Call once; the reader may
  // outlive the sink.
  std::unique_ptr<storage::ObjectReader> Body(uint64_t length);

 private:
  std::shared_ptr<Pipe> pipe_;
};

}  // namespace oc::gateway
