#include "rpc/server_kv_streams.h"

#include <algorithm>

namespace oc::storage::rpc {

// --- KvGetStream ---

KvGetStream::KvGetStream(bool with_pool, std::chrono::milliseconds timeout) : timeout_(timeout) {
  if (with_pool) {
    pool_ = std::make_unique<HeapBufferPool>(kKvStreamBuffers, kStreamChunkBytes);
  }
}

Status KvGetStream::PushPlan(const KvPlan& plan) {
  Frame f;
  f.op = Op::kKvPlan;
  WireWriter w(&f.head);
  Encode(w, plan);
  return Push(std::move(f));
}

void KvGetStream::Done(Result<KvGetReport> result) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    result_.emplace(std::move(result));
  }
  wake_();
}

std::optional<KvGetStream::Frame> KvGetStream::Next(bool* done) {
  std::lock_guard<std::mutex> lock(mu_);
  *done = false;
  if (!frames_.empty()) {
    Frame f = std::move(frames_.front());
    frames_.pop_front();
    return f;
  }
  *done = result_.has_value();
  return std::nullopt;
}

Result<KvGetReport> KvGetStream::TakeResult() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::move(*result_);
}

void KvGetStream::Fail(const Status& error) {
  std::deque<Frame> dropped;  // destroyed outside the lock: gives buffers back
  std::lock_guard<std::mutex> lock(mu_);
  if (failed_.ok()) {
    failed_ = error;
  }
  dropped.swap(frames_);
}

Result<StagingBuffer> KvGetStream::AcquireBuffer() {
  if (Status f = Failed(); !f.ok()) {
    return f;
  }
  return pool_->Acquire(timeout_);
}

Result<StagingBuffer> KvGetStream::TryAcquireBuffer() {
  if (Status f = Failed(); !f.ok()) {
    return f;
  }
  Result<StagingBuffer> buffer = pool_->Acquire(std::chrono::milliseconds(0));
  if (!buffer.has_value()) {
    return StagingBuffer();  // none free now: not an error
  }
  return buffer;
}

Status KvGetStream::Write(uint64_t dest_offset, StagingBuffer buffer, uint64_t length) {
  if (!pool_->Owns(buffer) || length == 0 || length > buffer.bytes().size()) {
    return Status::InvalidArgument("buffer", "not one of this sink's buffers, or a bad length");
  }
  if (dest_offset != next_offset_) {
    return Status::OutOfRange("body offsets must increase without gaps");
  }
  next_offset_ += length;
  Frame f;
  f.head.resize(8);
  PutLittleEndian64(dest_offset, f.head.data());
  f.buffer = std::move(buffer);
  f.length = length;
  return Push(std::move(f));
}

Status KvGetStream::LayerReady(uint32_t layer) {
  Frame f;
  f.op = Op::kKvLayerReady;
  f.head.resize(4);
  PutLittleEndian32(layer, f.head.data());
  return Push(std::move(f));
}

Status KvGetStream::Finish(const Status& final) {
  // The caller learns the outcome from the call's last frame, written after every queued
  // frame; only a transport failure is known here.
  Status f = Failed();
  return f.ok() ? final : f;
}

Status KvGetStream::Failed() {
  std::lock_guard<std::mutex> lock(mu_);
  return failed_;
}

Status KvGetStream::Push(Frame f) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failed_.ok()) {
      return failed_;
    }
    frames_.push_back(std::move(f));
  }
  wake_();
  return Status::Ok();
}

// --- KvPutStream ---

bool KvPutStream::HasRoom() {
  std::lock_guard<std::mutex> lock(mu_);
  return queued_ < kKvPutQueueBytes || result_.has_value();
}

void KvPutStream::Push(std::vector<std::byte> piece) {
  std::lock_guard<std::mutex> lock(mu_);
  if (result_.has_value() || closed_) {
    return;  // the store call ended early: the rest of the body is drained unread
  }
  if (piece.empty()) {
    return;  // an empty data frame: queued, it would read as the body's end
  }
  queued_ += piece.size();
  received_ += piece.size();
  pieces_.push_back(std::move(piece));
  cv_.notify_all();
}

void KvPutStream::Close(bool abort) {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  aborted_ = aborted_ || abort;
  cv_.notify_all();
}

bool KvPutStream::done() {
  std::lock_guard<std::mutex> lock(mu_);
  return result_.has_value();
}

void KvPutStream::Done(Result<KvPutReport> result) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    result_.emplace(std::move(result));
  }
  wake_();
}

Result<KvPutReport> KvPutStream::TakeResult() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::move(*result_);
}

uint64_t KvPutStream::received() {
  std::lock_guard<std::mutex> lock(mu_);
  return received_;
}

Result<uint64_t> KvPutStream::Read(MutableByteSpan out) {
  if (out.empty()) {
    return uint64_t{0};
  }
  OC_ASSIGN_OR_RETURN(const ByteSpan piece, Peek(out.size()));
  std::copy_n(piece.data(), piece.size(), out.data());
  OC_RETURN_IF_ERROR(Consume(piece.size()));
  return piece.size();
}

Result<ByteSpan> KvPutStream::Peek(uint64_t max_bytes) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout_, [&] { return !pieces_.empty() || closed_; })) {
    return Status::Unavailable("the descriptor PUT body stalled");
  }
  if (pieces_.empty()) {
    if (aborted_) {
      return Status::Cancelled("the descriptor PUT body was abandoned");
    }
    return ByteSpan();
  }
  // The front piece stays queued (Push only appends, which keeps it in place) until Consume.
  const std::vector<std::byte>& front = pieces_.front();
  return ByteSpan(front.data() + front_pos_,
                  std::min<uint64_t>(max_bytes, front.size() - front_pos_));
}

Status KvPutStream::Consume(uint64_t n) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (n == 0) {
      return Status::Ok();
    }
    if (pieces_.empty() || n > pieces_.front().size() - front_pos_) {
      return Status::FailedPrecondition(Subject::kEntity, "Consume past what Peek returned");
    }
    front_pos_ += n;
    if (front_pos_ < pieces_.front().size()) {
      return Status::Ok();
    }
    queued_ -= pieces_.front().size();
    pieces_.pop_front();
    front_pos_ = 0;
  }
  wake_();  // room for the strand's next piece
  return Status::Ok();
}

}  // namespace oc::storage::rpc
