// ChunkPipe and ChunkPipeWriter (chunk_pipe.h): a descriptor PUT's body from the session to
// PutChunks in lent buffers, bounded, never copied inside the pipe.
#include "chunk_pipe.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "oc/common/check.h"

namespace oc::gateway {

ChunkPipe::ChunkPipe(std::chrono::milliseconds timeout, uint64_t buffer_bytes, uint64_t max_bytes)
    : timeout_(timeout), buffer_bytes_(buffer_bytes), max_buffers_(max_bytes / buffer_bytes) {
  OC_CHECK(buffer_bytes > 0 && buffer_bytes <= max_bytes);
}

Status ChunkPipe::EndedStatus() const {
  if (!result_.ok()) {
    return result_;
  }
  return Status(Code::kInvalidArgument, Subject::kEntity, "Content-Length",
                "body longer than the chunks");
}

Result<MutableByteSpan> ChunkPipe::Lend(uint64_t max_bytes) {
  if (max_bytes == 0) {
    return Status::InvalidArgument("max_bytes", "a lend needs max_bytes > 0");
  }
  std::unique_lock lock(mu_);
  if (lent_ != nullptr) {
    return Status::FailedPrecondition(Subject::kEntity, "a lend is already outstanding");
  }
  if (!cv_.wait_for(lock, timeout_,
                    [&] { return done_ || !free_.empty() || buffers_.size() < max_buffers_; })) {
    return Status::Unavailable("storage did not take the chunk bytes in time");
  }
  if (done_) {
    return EndedStatus();
  }
  if (free_.empty()) {
    buffers_.push_back(std::make_unique_for_overwrite<std::byte[]>(buffer_bytes_));
    free_.push_back(buffers_.back().get());
  }
  lent_ = free_.back();
  free_.pop_back();
  lent_bytes_ = std::min(max_bytes, buffer_bytes_);
  return MutableByteSpan(lent_, lent_bytes_);
}

Status ChunkPipe::Queue(uint64_t n) {
  std::lock_guard lock(mu_);
  if (lent_ == nullptr) {
    return Status::FailedPrecondition(Subject::kEntity, "Queue without a lend");
  }
  std::byte* buffer = std::exchange(lent_, nullptr);
  if (n > lent_bytes_ || n == 0 || done_) {
    free_.push_back(buffer);
    cv_.notify_all();
    if (n > lent_bytes_) {
      return Status::FailedPrecondition(Subject::kEntity, "Queue of more than was lent");
    }
    return n == 0 ? Status::Ok() : EndedStatus();
  }
  queue_.push_back(Piece{buffer, n});
  received_ += n;
  cv_.notify_all();
  return Status::Ok();
}

Status ChunkPipe::Append(ByteSpan data) {
  while (!data.empty()) {
    OC_ASSIGN_OR_RETURN(const MutableByteSpan space, Lend(data.size()));
    std::memcpy(space.data(), data.data(), space.size());
    OC_RETURN_IF_ERROR(Queue(space.size()));
    data = data.subspan(space.size());
  }
  return Status::Ok();
}

Result<uint64_t> ChunkPipe::Close(bool committed) {
  std::unique_lock lock(mu_);
  committed_ = committed_ || committed;
  closed_ = true;
  aborted_ = !committed_;
  cv_.notify_all();
  cv_.wait(lock, [&] { return done_; });
  if (!result_.ok()) {
    return result_;
  }
  return received_;
}

void ChunkPipe::Done(Status result) {
  std::lock_guard lock(mu_);
  done_ = true;
  result_ = std::move(result);
  cv_.notify_all();
}

Result<ByteSpan> ChunkPipe::Peek(uint64_t max_bytes) {
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, timeout_, [&] { return !queue_.empty() || closed_; })) {
    return Status::Unavailable("request body stalled");
  }
  if (queue_.empty()) {
    if (aborted_) {
      return Status::Cancelled("the request body was abandoned");
    }
    return ByteSpan();
  }
  // The front buffer stays queued, so nobody lends or frees it, until Consume.
  const Piece& front = queue_.front();
  return ByteSpan(front.data + front_pos_, std::min(max_bytes, front.size - front_pos_));
}

Status ChunkPipe::Consume(uint64_t n) {
  std::lock_guard lock(mu_);
  if (n == 0) {
    return Status::Ok();
  }
  if (queue_.empty() || n > queue_.front().size - front_pos_) {
    return Status::FailedPrecondition(Subject::kEntity, "Consume past what Peek returned");
  }
  front_pos_ += n;
  if (front_pos_ == queue_.front().size) {
    free_.push_back(queue_.front().data);
    queue_.pop_front();
    front_pos_ = 0;
    cv_.notify_all();
  }
  return Status::Ok();
}

Result<uint64_t> ChunkPipe::Read(MutableByteSpan out) {
  if (out.empty()) {
    return uint64_t{0};
  }
  OC_ASSIGN_OR_RETURN(const ByteSpan piece, Peek(out.size()));
  std::memcpy(out.data(), piece.data(), piece.size());
  OC_RETURN_IF_ERROR(Consume(piece.size()));
  return piece.size();
}

uint64_t ChunkPipe::buffers_allocated() {
  std::lock_guard lock(mu_);
  return buffers_.size();
}

ChunkPipeWriter::~ChunkPipeWriter() {
  if (!spent_) {
    (void)pipe_->Close(/*committed=*/false);
  }
}

Result<MutableByteSpan> ChunkPipeWriter::AppendSpace(uint64_t min_bytes, uint64_t max_bytes) {
  if (pipe_lent_) {
    return Status::FailedPrecondition(Subject::kEntity, "a lend is already outstanding");
  }
  if (std::min(min_bytes, max_bytes) > pipe_->buffer_bytes()) {
    return ObjectWriter::AppendSpace(min_bytes, max_bytes);  // more than one buffer holds
  }
  OC_ASSIGN_OR_RETURN(const MutableByteSpan space, pipe_->Lend(max_bytes));
  pipe_lent_ = true;
  return space;
}

Status ChunkPipeWriter::Appended(uint64_t n) {
  if (!pipe_lent_) {
    return ObjectWriter::Appended(n);
  }
  pipe_lent_ = false;
  return pipe_->Queue(n);
}

Result<storage::ObjectMeta> ChunkPipeWriter::Commit() {
  spent_ = true;
  OC_ASSIGN_OR_RETURN(const uint64_t received, pipe_->Close(/*committed=*/true));
  storage::ObjectMeta meta;
  meta.size = received;
  return meta;
}

}  // namespace oc::gateway
