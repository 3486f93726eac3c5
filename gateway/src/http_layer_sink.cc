#include "http_layer_sink.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "oc/common/log.h"

namespace oc::gateway {
namespace {

const Logger kLog{"gateway"};

// Staging pools kept once their body is done, for the next body of the same shape: a fresh
// 4 x 1 MiB pool per descriptor GET cost a memset and a page fault per 4 KiB page (issue 32:
// 9% of the server's CPU on GETs of 256 chunks of 64 KiB), a pool that served a body before is
// warm. At most kMaxIdlePools are kept (32 MiB of the default shape).
constexpr size_t kMaxIdlePools = 8;

class IdlePools {
 public:
  // Never destroyed: a sink may end after static destruction began.
  static IdlePools& Get() {
    static IdlePools* const pools = new IdlePools;
    return *pools;
  }

  std::unique_ptr<storage::HeapBufferPool> Take(uint32_t count, uint64_t buffer_bytes) {
    {
      std::lock_guard lock(mu_);
      for (auto it = idle_.begin(); it != idle_.end(); ++it) {
        if ((*it)->count() == count && (*it)->buffer_bytes() == buffer_bytes) {
          std::unique_ptr<storage::HeapBufferPool> pool = std::move(*it);
          idle_.erase(it);
          return pool;
        }
      }
    }
    return std::make_unique<storage::HeapBufferPool>(count, buffer_bytes);
  }

  // Keeps `pool` if every buffer is back and there is room.
  void Give(std::unique_ptr<storage::HeapBufferPool> pool) {
    if (pool->free_count() != pool->count()) {
      return;
    }
    std::lock_guard lock(mu_);
    if (idle_.size() < kMaxIdlePools) {
      idle_.push_back(std::move(pool));
    }
  }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<storage::HeapBufferPool>> idle_;  // guarded by mu_
};

}  // namespace

struct HttpLayerSink::Pipe {
  Pipe(uint32_t buffers, uint64_t buffer_bytes, std::chrono::milliseconds t, StallPolicy s)
      : pool(IdlePools::Get().Take(buffers, buffer_bytes)), timeout(t), stall(std::move(s)) {}
  ~Pipe() { IdlePools::Get().Give(std::move(pool)); }

  struct Piece {
    uint32_t slot;
    std::byte* data;
    uint64_t length;
  };

  std::unique_ptr<storage::HeapBufferPool> pool;  // from and back to IdlePools
  const std::chrono::milliseconds timeout;
  const StallPolicy stall;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Piece> queue;      // guarded by mu
  uint64_t written = 0;         // bytes handed to Write(); guarded by mu
  uint64_t taken = 0;           // bytes the reader took (Read, Lend); guarded by mu
  bool finished = false;        // guarded by mu
  Status final;                 // guarded by mu
  bool reader_gone = false;     // guarded by mu
  bool stalled = false;         // the producer gave up on the reader; guarded by mu
  std::function<void()> close;  // the session's StallHook; guarded by mu

  void ReaderGone() {
    std::deque<Piece> drop;
    {
      std::lock_guard lock(mu);
      reader_gone = true;
      close = nullptr;
      drop.swap(queue);
      cv.notify_all();
    }
    for (const Piece& p : drop) {
      pool->Release(p.slot);
    }
  }
};

namespace {

class BodyReader final : public storage::ObjectReader {
 public:
  BodyReader(std::shared_ptr<HttpLayerSink::Pipe> pipe, uint64_t length) : pipe_(std::move(pipe)) {
    meta_.size = length;
  }
  ~BodyReader() override {
    ReleaseLent();
    pipe_->ReaderGone();
  }

  const storage::ObjectMeta& meta() const override { return meta_; }
  uint64_t offset() const override { return 0; }
  uint64_t length() const override { return meta_.size; }

  Result<uint64_t> Read(MutableByteSpan out) override {
    ReleaseLent();
    HttpLayerSink::Pipe& p = *pipe_;
    std::unique_lock lock(p.mu);
    OC_ASSIGN_OR_RETURN(bool more, WaitForBytes(lock));
    if (!more) {
      return uint64_t{0};
    }
    HttpLayerSink::Pipe::Piece& front = p.queue.front();
    const uint64_t n = std::min<uint64_t>(out.size(), front.length - consumed_);
    std::memcpy(out.data(), front.data + consumed_, n);
    consumed_ += n;
    p.taken += n;
    if (consumed_ == front.length) {
      const uint32_t slot = front.slot;
      p.queue.pop_front();
      consumed_ = 0;
      lock.unlock();
      p.pool->Release(slot);
    }
    return n;
  }

  // True when the next Read or Lend returns without waiting (BodyPieceReady).
  bool Ready() const {
    HttpLayerSink::Pipe& p = *pipe_;
    std::lock_guard lock(p.mu);
    return !p.queue.empty() || p.finished;
  }

  // The staging buffer's own bytes: the buffer goes back to the pool at the next call.
  Result<ByteSpan> Lend(uint64_t max) override {
    ReleaseLent();
    HttpLayerSink::Pipe& p = *pipe_;
    std::unique_lock lock(p.mu);
    OC_ASSIGN_OR_RETURN(bool more, WaitForBytes(lock));
    if (!more || max == 0) {
      return ByteSpan();
    }
    HttpLayerSink::Pipe::Piece& front = p.queue.front();
    const uint64_t n = std::min<uint64_t>(max, front.length - consumed_);
    const ByteSpan lent(front.data + consumed_, n);
    consumed_ += n;
    p.taken += n;
    if (consumed_ == front.length) {
      lent_slot_ = front.slot;  // released at the next call, once the caller is done with it
      p.queue.pop_front();
      consumed_ = 0;
    }
    return lent;
  }

 private:
  // Waits for the next piece under `lock`: true when the queue has one, false at the end,
  // the final error, or kUnavailable after the timeout.
  Result<bool> WaitForBytes(std::unique_lock<std::mutex>& lock) {
    HttpLayerSink::Pipe& p = *pipe_;
    if (!p.cv.wait_for(lock, p.timeout, [&] { return !p.queue.empty() || p.finished; })) {
      return Status::Unavailable("descriptor body: no bytes from storage within the timeout");
    }
    if (p.queue.empty()) {
      if (!p.final.ok()) {
        return p.final;
      }
      return false;
    }
    return true;
  }
  void ReleaseLent() {
    if (lent_slot_) {
      pipe_->pool->Release(*lent_slot_);
      lent_slot_.reset();
    }
  }

  std::shared_ptr<HttpLayerSink::Pipe> pipe_;
  storage::ObjectMeta meta_;
  uint64_t consumed_ = 0;              // of the queue's front piece
  std::optional<uint32_t> lent_slot_;  // a whole piece lent by Lend, not yet given back
};

}  // namespace

bool BodyPieceReady(const storage::ObjectReader& reader) {
  const auto* body = dynamic_cast<const BodyReader*>(&reader);
  return body != nullptr && body->Ready();
}

HttpLayerSink::HttpLayerSink(uint32_t buffers, uint64_t buffer_bytes,
                             std::chrono::milliseconds timeout)
    : HttpLayerSink(buffers, buffer_bytes, timeout, StallPolicy()) {}

HttpLayerSink::HttpLayerSink(uint32_t buffers, uint64_t buffer_bytes,
                             std::chrono::milliseconds timeout, StallPolicy stall)
    : pipe_(std::make_shared<Pipe>(buffers, buffer_bytes, timeout, std::move(stall))) {}

HttpLayerSink::~HttpLayerSink() {
  std::lock_guard lock(pipe_->mu);
  if (!pipe_->finished) {
    pipe_->finished = true;
    pipe_->final = Status::Cancelled("descriptor body: the request ended without Finish");
    pipe_->cv.notify_all();
  }
}

uint64_t HttpLayerSink::buffer_bytes() const { return pipe_->pool->buffer_bytes(); }

Result<storage::StagingBuffer> HttpLayerSink::AcquireBuffer() {
  Pipe& p = *pipe_;
  uint64_t taken = 0;
  {
    std::lock_guard lock(p.mu);
    if (p.reader_gone) {
      return Status::Cancelled("the client went away");
    }
    taken = p.taken;
  }
  if (p.stall.step.count() <= 0 || !p.stall.others_waiting) {
    return p.pool->Acquire(p.timeout);
  }
  // Every buffer is queued for the reader: wait for one a step at a time, and after a step in
  // which the reader took nothing, give its worker up to a request waiting for one.
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + p.timeout;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left <= p.stall.step) {
      return p.pool->Acquire(std::max(left, std::chrono::milliseconds(0)));
    }
    Result<storage::StagingBuffer> buffer = p.pool->Acquire(p.stall.step);
    if (buffer.has_value()) {
      return buffer;
    }
    {
      std::lock_guard lock(p.mu);
      if (p.reader_gone) {
        return Status::Cancelled("the client went away");
      }
      if (p.taken != taken) {  // slow, not stalled
        taken = p.taken;
        continue;
      }
    }
    if (!p.stall.others_waiting()) {
      continue;
    }
    std::lock_guard lock(p.mu);
    if (p.reader_gone) {
      return Status::Cancelled("the client went away");
    }
    p.stalled = true;
    kLog.Warn(
        "req={} descriptor body: the client took no byte in {} ms while requests waited "
        "for a worker; its transfer ends and its connection is closed",
        p.stall.request_id, p.stall.step.count());
    if (p.close) {
      std::exchange(p.close, nullptr)();
    }
    return Status::Unavailable(
        "descriptor body: the client stopped reading while other requests waited");
  }
}

Result<storage::StagingBuffer> HttpLayerSink::TryAcquireBuffer() {
  {
    std::lock_guard lock(pipe_->mu);
    if (pipe_->reader_gone) {
      return Status::Cancelled("the client went away");
    }
  }
  Result<storage::StagingBuffer> buffer = pipe_->pool->Acquire(std::chrono::milliseconds(0));
  if (!buffer.has_value()) {
    return storage::StagingBuffer();  // none free now: not an error
  }
  return buffer;
}

Status HttpLayerSink::Write(uint64_t dest_offset, storage::StagingBuffer buffer, uint64_t length) {
  if (!pipe_->pool->Owns(buffer) || length > buffer.bytes().size()) {
    return Status::InvalidArgument("buffer", "not a buffer of this sink, or length exceeds it");
  }
  std::lock_guard lock(pipe_->mu);
  if (pipe_->reader_gone) {
    return Status::Cancelled("the client went away");
  }
  if (dest_offset != pipe_->written) {
    return Status::InvalidArgument(
        "dest_offset", fmt::format("body write at {} after {} bytes", dest_offset, pipe_->written));
  }
  if (length == 0) {
    return Status::Ok();  // the buffer goes back when `buffer` is destroyed
  }
  std::byte* data = buffer.bytes().data();
  const uint32_t slot = buffer.Detach();
  pipe_->queue.push_back({slot, data, length});
  pipe_->written += length;
  pipe_->cv.notify_all();
  return Status::Ok();
}

Status HttpLayerSink::LayerReady(uint32_t /*layer*/) {
  // The body has no per-layer message: layer l is complete when the client has read its
  // bytes (their offsets follow from the descriptor). Only report a vanished reader.
  std::lock_guard lock(pipe_->mu);
  return pipe_->reader_gone ? Status::Cancelled("the client went away") : Status::Ok();
}

Status HttpLayerSink::Finish(const Status& final) {
  std::lock_guard lock(pipe_->mu);
  pipe_->finished = true;
  pipe_->final = final;
  pipe_->cv.notify_all();
  if (pipe_->reader_gone && final.ok()) {
    return Status::Cancelled("the client went away");
  }
  return final;
}

std::unique_ptr<storage::ObjectReader> HttpLayerSink::Body(uint64_t length) {
  return std::make_unique<BodyReader>(pipe_, length);
}

std::function<void(std::function<void()>)> HttpLayerSink::StallHook() {
  return [pipe = pipe_](std::function<void()> close) {
    std::lock_guard lock(pipe->mu);
    if (pipe->reader_gone) {
      return;
    }
    if (pipe->stalled) {
      close();
      return;
    }
    pipe->close = std::move(close);
  };
}

}  // namespace oc::gateway
