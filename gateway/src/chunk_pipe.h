#pragma once
// ChunkPipe: the bounded pipe between a descriptor PUT's HTTP body and Store::PutChunks
// (handlers/objectcache_handlers.cc). The session writes the body through a ChunkPipeWriter;
// PutChunks, a task on the descriptor executor, takes it as its ChunkSource. Both hold the pipe,
// so either may end first.
//
// The bytes live in a fixed set of equal buffers (at most kMaxQueuedBytes in all, allocated as
// first needed) and are never copied inside the pipe: the writer lends a free buffer to the
// session's HTTP parser (ObjectWriter::AppendSpace), which fills it in place, then queues it
// (Appended); PutChunks reads the queued buffer in place (Peek) into its store writer and
// frees it (Consume). So between the socket's buffer and the store's extent buffer a
// descriptor PUT body is copied once by the parser and once into the extent buffer
// (docs/decisions/put-copies-lent-buffers.md). A lend waits while every buffer is queued: the
// pipe's memory bound is what holds back a fast client.
//
// Thread safety: the session side (Lend, Queue, Append, Close) is used by one thread at a
// time, the source side (Read, Peek, Consume) by another; Done by the task. Every member is
// safe to call concurrently with the other side's.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "oc/common/bytes.h"
#include "oc/common/result.h"
#include "oc/common/status.h"
#include "oc/common/thread_annotations.h"
#include "oc/storage/kv.h"
#include "oc/storage/store.h"

namespace oc::gateway {

class ChunkPipe final : public storage::ChunkSource {
 public:
  // Body bytes held between the socket and PutChunks, at most: the buffers' total.
  static constexpr uint64_t kMaxQueuedBytes = 4ull << 20;
  // One buffer: the session's largest lend (session_body.cc kMaxLendBytes, filled in body
  // pieces), so one pool hop queues 1 MiB: 448 MiB went 0.95 against 0.78 GB/s (median of 3)
  // with 256 KiB buffers, one per piece (docs/decisions/data-files-sync-behind.md).
  static constexpr uint64_t kBufferBytes = 1ull << 20;

  // `timeout`: the longest either side waits for the other (a lend for a free buffer, a peek
  // for queued bytes). REQUIRES: 0 < buffer_bytes <= max_bytes (checked).
  explicit ChunkPipe(std::chrono::milliseconds timeout, uint64_t buffer_bytes = kBufferBytes,
                     uint64_t max_bytes = kMaxQueuedBytes);

  // --- Session side ---
  // A free buffer (at most max_bytes of it) for the body's next bytes, waiting for one while
  // all are queued. kUnavailable if none came free within the timeout; once PutChunks ended,
  // its error, or kInvalidArgument/kEntity (Content-Length) if it succeeded (the body is
  // longer than the chunks); kFailedPrecondition if a lend is outstanding.
  // REQUIRES: max_bytes > 0.
  Result<MutableByteSpan> Lend(uint64_t max_bytes);
  // Queues the first n bytes of the lent buffer (n = 0 frees it); ends the lend. Errors as
  // Lend once PutChunks ended; kFailedPrecondition if nothing is lent or n exceeds the lend.
  Status Queue(uint64_t n);
  // Lend, copy, Queue, as often as `data` needs.
  Status Append(ByteSpan data);
  // Ends the body (committed: it is whole; else abandoned) and waits for PutChunks' result:
  // the body bytes queued in all, or its error.
  Result<uint64_t> Close(bool committed);

  // --- The task ---
  // PutChunks' outcome; Close returns it.
  void Done(Status result);

  // --- ChunkSource (PutChunks' side) ---
  Result<uint64_t> Read(MutableByteSpan out) override;
  // The front queued buffer in place. kUnavailable if nothing came within the timeout;
  // kCancelled if the body was abandoned; empty once it was committed and all was consumed.
  Result<ByteSpan> Peek(uint64_t max_bytes) override;
  Status Consume(uint64_t n) override;

  // Buffers allocated so far (never more than max_bytes / buffer_bytes).
  uint64_t buffers_allocated();
  uint64_t buffer_bytes() const { return buffer_bytes_; }

 private:
  struct Piece {
    std::byte* data;
    uint64_t size;
  };
  // Lend's and Queue's answer once the task ended. REQUIRES: done_.
  Status EndedStatus() const OC_REQUIRES(mu_);

  const std::chrono::milliseconds timeout_;
  const uint64_t buffer_bytes_;
  const uint64_t max_buffers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<std::byte[]>> buffers_ OC_GUARDED_BY(mu_);
  std::vector<std::byte*> free_ OC_GUARDED_BY(mu_);
  std::deque<Piece> queue_ OC_GUARDED_BY(mu_);
  uint64_t front_pos_ OC_GUARDED_BY(mu_) = 0;
  std::byte* lent_ OC_GUARDED_BY(mu_) = nullptr;
  uint64_t lent_bytes_ OC_GUARDED_BY(mu_) = 0;
  uint64_t received_ OC_GUARDED_BY(mu_) = 0;
  bool closed_ OC_GUARDED_BY(mu_) = false;
  bool committed_ OC_GUARDED_BY(mu_) = false;
  bool aborted_ OC_GUARDED_BY(mu_) = false;
  bool done_ OC_GUARDED_BY(mu_) = false;
  Status result_ OC_GUARDED_BY(mu_);
};

// The session's ObjectWriter over a pipe: Append copies into the pipe's buffers, AppendSpace
// lends one of them; Commit closes the pipe as whole and waits for PutChunks, and destroying
// the writer without Commit abandons the body and waits for PutChunks to give up.
class ChunkPipeWriter final : public storage::ObjectWriter {
 public:
  explicit ChunkPipeWriter(std::shared_ptr<ChunkPipe> pipe) : pipe_(std::move(pipe)) {}
  ~ChunkPipeWriter() override;

  Status Append(ByteSpan data) override { return pipe_->Append(data); }
  Result<MutableByteSpan> AppendSpace(uint64_t min_bytes, uint64_t max_bytes) override;
  Status Appended(uint64_t n) override;
  Result<storage::ObjectMeta> Commit() override;

 private:
  std::shared_ptr<ChunkPipe> pipe_;
  bool pipe_lent_ = false;  // the outstanding lend is a pipe buffer (else the scratch's)
  bool spent_ = false;
};

}  // namespace oc::gateway
