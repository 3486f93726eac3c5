#pragma once
// The two queues between a descriptor call's store work on the server's store pool and its
// connection's strand (server_kv_calls.cc): KvGetStream carries a descriptor GET's frames to
// the strand, KvPutStream a descriptor PUT's body from it. Each side wakes the other through
// a function the connection supplies (set_wake). Private to oc_storage_rpc_server.
//
// Thread safety: every method may be called from either side; state is guarded by mu_.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "oc/common/bytes.h"
#include "oc/common/result.h"
#include "oc/common/status.h"
#include "oc/common/thread_annotations.h"
#include "oc/storage/kv.h"
#include "oc/storage/layer_sink.h"
#include "oc/storage/store.h"
#include "rpc/wire.h"

namespace oc::storage::rpc {

// A descriptor GET into the body stages its payload in this many buffers of
// kStreamChunkBytes per connection: the assembler fills one while others are on the wire.
inline constexpr uint32_t kKvStreamBuffers = 4;
// A descriptor PUT from the body queues at most this many received bytes for the store.
inline constexpr uint64_t kKvPutQueueBytes = 4 * kStreamChunkBytes;

// The frames of a descriptor GET, from the store call on the pool (GetLayers' on_plan and,
// without a target, this LayerSink) to the connection's strand, which writes them in order.
// Staging buffers are a HeapBufferPool of kKvStreamBuffers: a buffer goes back when its frame
// is on the wire, so a slow caller (TCP backpressure) blocks AcquireBuffer and with it the
// assembler, and memory stays bounded whatever the payload. Once the connection fails
// (Fail), queued frames are dropped and every later call returns that error.
class KvGetStream final : public LayerSink {
 public:
  struct Frame {
    Op op = Op::kKvData;
    std::vector<std::byte> head;  // the body before the data: a plan, an offset, a layer
    StagingBuffer buffer;         // kKvData: the bytes; back to the pool once destroyed
    uint64_t length = 0;
  };

  // `with_pool`: the payload streams in frames (no data-plane target), so buffers are needed.
  KvGetStream(bool with_pool, std::chrono::milliseconds timeout);

  // Runs on the store pool after each push and at the end; posts a wake-up to the strand.
  void set_wake(std::function<void()> wake) { wake_ = std::move(wake); }

  Status PushPlan(const KvPlan& plan);
  // The end of the store call.
  void Done(Result<KvGetReport> result);
  // The strand's side: the next frame, or nullopt (then *done tells whether the call ended).
  std::optional<Frame> Next(bool* done);
  Result<KvGetReport> TakeResult();
  void Fail(const Status& error);
  uint64_t streamed() const { return next_offset_; }

  // LayerSink (the store pool's side).
  uint64_t buffer_bytes() const override { return kStreamChunkBytes; }
  Result<StagingBuffer> AcquireBuffer() override;
  Result<StagingBuffer> TryAcquireBuffer() override;
  Status Write(uint64_t dest_offset, StagingBuffer buffer, uint64_t length) override;
  Status LayerReady(uint32_t layer) override;
  Status Finish(const Status& final) override;

 private:
  Status Failed();
  Status Push(Frame f);

  const std::chrono::milliseconds timeout_;
  std::unique_ptr<HeapBufferPool> pool_;  // first: outlives the buffers in frames_
  std::function<void()> wake_;
  uint64_t next_offset_ = 0;  // the sink's side only
  std::mutex mu_;
  std::deque<Frame> frames_ OC_GUARDED_BY(mu_);
  Status failed_ OC_GUARDED_BY(mu_);
  std::optional<Result<KvGetReport>> result_ OC_GUARDED_BY(mu_);
};

// The body of a descriptor PUT, from the connection's strand (data frames) to the store call
// on the pool (this ChunkSource), at most kKvPutQueueBytes queued between them.
class KvPutStream final : public ChunkSource {
 public:
  explicit KvPutStream(std::chrono::milliseconds timeout) : timeout_(timeout) {}

  void set_wake(std::function<void()> wake) { wake_ = std::move(wake); }

  // The strand's side. True when another piece may be queued (or the call is over and
  // pieces are discarded).
  bool HasRoom();
  void Push(std::vector<std::byte> piece);
  // The body ended (kCommit) or was abandoned (kAbort, or the connection failed).
  void Close(bool abort);
  bool done();
  void Done(Result<KvPutReport> result);
  Result<KvPutReport> TakeResult();
  uint64_t received();

  // ChunkSource (the store pool's side). Peek lends the front piece in place.
  Result<uint64_t> Read(MutableByteSpan out) override;
  Result<ByteSpan> Peek(uint64_t max_bytes) override;
  Status Consume(uint64_t n) override;

 private:
  const std::chrono::milliseconds timeout_;
  std::function<void()> wake_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::vector<std::byte>> pieces_ OC_GUARDED_BY(mu_);
  uint64_t front_pos_ OC_GUARDED_BY(mu_) = 0;
  uint64_t queued_ OC_GUARDED_BY(mu_) = 0;
  uint64_t received_ OC_GUARDED_BY(mu_) = 0;
  bool closed_ OC_GUARDED_BY(mu_) = false;
  bool aborted_ OC_GUARDED_BY(mu_) = false;
  std::optional<Result<KvPutReport>> result_ OC_GUARDED_BY(mu_);
};

}  // namespace oc::storage::rpc
