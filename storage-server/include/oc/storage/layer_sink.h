#pragma once
// LayerSink is where the layer-major assembler delivers one request's payload (docs/design.md,
// "Delivery"). The assembler borrows a staging buffer from the sink, fills it with
// assembled bytes, hands it back with Write() and the target offset those bytes belong at,
// and calls LayerReady(l) once every byte of layer l has been handed over. Finish() ends
// the request with success or an error the client sees.
//
// Two implementations: the UCX sink (src/data_plane/ucx_layer_sink.h) puts each buffer into
// the client's registered memory and sends a layer-ready message ordered after the bytes;
// the HTTP sink (gateway) streams the same bytes in the response body.
//
// Flow control: the sink owns a bounded set of staging buffers. Write() only starts the
// transfer; the buffer returns to the sink when the transfer is done, and AcquireBuffer()
// blocks (up to the sink's timeout) while all of them are in flight. So the assembler may
// fill layer l+1 while layer l is still being written, and memory stays bounded whatever
// the payload size. Staging buffers come from the sink because the UCX sink needs memory
// registered once (ucp_mem_map) and reused.
//
// Thread safety: a sink serves one request. Its methods are called by one thread at a
// time (the request's assembler), never concurrently; completions happen on the sink's own
// threads. A StagingBuffer may be destroyed on any thread.

#include <cstdint>
#include <memory>
#include <utility>

#include "oc/common/bytes.h"
#include "oc/common/result.h"
#include "oc/common/status.h"

namespace oc::storage {

// A staging buffer lent by a sink: movable, not copyable; destroying one that was not
// handed to Write() gives it back unused.
class StagingBuffer {
 public:
  // Whoever lends buffers takes them back through this.
  class Owner {
   public:
    virtual void Release(uint32_t slot) noexcept = 0;

   protected:
    ~Owner() = default;
  };

  StagingBuffer() = default;
  StagingBuffer(Owner* owner, uint32_t slot, MutableByteSpan bytes)
      : owner_(owner), slot_(slot), bytes_(bytes) {}
  StagingBuffer(StagingBuffer&& other) noexcept
      : owner_(std::exchange(other.owner_, nullptr)), slot_(other.slot_), bytes_(other.bytes_) {}
  StagingBuffer& operator=(StagingBuffer&& other) noexcept {
    if (this != &other) {
      Reset();
      owner_ = std::exchange(other.owner_, nullptr);
      slot_ = other.slot_;
      bytes_ = other.bytes_;
    }
    return *this;
  }
  StagingBuffer(const StagingBuffer&) = delete;
  StagingBuffer& operator=(const StagingBuffer&) = delete;
  ~StagingBuffer() { Reset(); }

  bool valid() const { return owner_ != nullptr; }
  // Who lent it (nullptr once detached or given back); lets a sink refuse foreign buffers.
  const Owner* owner() const { return owner_; }
  MutableByteSpan bytes() const { return bytes_; }
  uint32_t slot() const { return slot_; }

  // For sinks: takes the buffer in flight; the sink now returns `slot` itself. The handle
  // becomes empty.
  uint32_t Detach() {
    owner_ = nullptr;
    return slot_;
  }
  // Gives the buffer back now (also done by the destructor).
  void Reset() {
    if (owner_ != nullptr) {
      std::exchange(owner_, nullptr)->Release(slot_);
    }
  }

 private:
  Owner* owner_ = nullptr;
  uint32_t slot_ = 0;
  MutableByteSpan bytes_;
};

class LayerSink {
 public:
  virtual ~LayerSink() = default;

  // Bytes of every staging buffer this sink lends; the assembler splits a layer larger
  // than this into several Write() calls.
  virtual uint64_t buffer_bytes() const = 0;

  // Lends a staging buffer of buffer_bytes() bytes, blocking while every buffer is in
  // flight. kUnavailable if none came back within the sink's timeout; the request's first
  // transfer error if the request has already failed (then the assembler should stop and
  // call Finish()).
  virtual Result<StagingBuffer> AcquireBuffer() = 0;

  // As AcquireBuffer, without waiting: an empty (invalid) StagingBuffer when none is free now.
  // The assembler calls it while it holds buffers of its own not yet handed to Write() (reads
  // running ahead), so that it never blocks on a shared pool holding buffers another request
  // may be waiting for; it hands its oldest one over instead. The default lends none, which
  // makes such a request hand over everything it holds before it waits.
  virtual Result<StagingBuffer> TryAcquireBuffer() { return StagingBuffer(); }

  // Starts writing the first `length` bytes of `buffer` at `dest_offset` of the target and
  // returns; the buffer goes back to the sink when the write is done. Nothing is written if
  // [dest_offset, dest_offset + length) is not inside the target: kOutOfRange. kInvalidArgument
  // if `buffer` is not one of this sink's or `length` exceeds it; the request's first
  // transfer error if it has failed.
  // REQUIRES: Finish() not called yet.
  virtual Status Write(uint64_t dest_offset, StagingBuffer buffer, uint64_t length) = 0;

  // Zero-copy writes (optional): true if WritePinned() works. The assembler then hands over
  // bytes the store lends (Store::PinSlices) instead of copying them into staging buffers.
  virtual bool accepts_pinned() const { return false; }

  // True if the target is memory this process writes itself (mapped here), so a write costs
  // its copy and nothing per write beyond it: then pinned slices are worth handing over
  // whatever their size.
  virtual bool writes_in_place() const { return false; }

  // Starts writing `bytes` at `dest_offset` of the target straight from the caller's memory,
  // which stays valid while `hold` lives; the sink keeps `hold` until the write is done. Blocks
  // (up to the sink's timeout) while the sink's bound on bytes in flight is reached. Errors as
  // Write(); kUnimplemented unless accepts_pinned(). REQUIRES: Finish() not called yet.
  virtual Status WritePinned(uint64_t dest_offset, ByteSpan bytes,
                             std::shared_ptr<const void> hold) {
    (void)dest_offset;
    (void)bytes;
    (void)hold;
    return Status::Unimplemented("this sink takes staging buffers only");
  }

  // Tells the client that layer `layer` is complete. The notification is ordered after every
  // byte of every Write() and WritePinned() issued before it: a client that sees it can read the
  // layer. Notifications reach the client in the order of the calls. Returns as Write() does.
  // REQUIRES: Finish() not called yet.
  virtual Status LayerReady(uint32_t layer) = 0;

  // Ends the request: waits for every write in flight (bounded by the sink's timeout), then
  // sends the client "done" if `final` is OK and no transfer failed, else an error carrying
  // `final` (or the transfer's error). Returns the first error of the whole request (OK if
  // the client was told "done"). Call exactly once, last.
  virtual Status Finish(const Status& final) = 0;
};

}  // namespace oc::storage
