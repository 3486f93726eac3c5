// The default lend APIs (store.h ObjectWriter::AppendSpace/Appended, kv.h ChunkSource::
// Peek/Consume): over the copying calls and a buffer of the object's own, for the writers and
// sources that hold no memory to lend (docs/decisions/put-copies-lent-buffers.md).

#include <algorithm>
#include <cstring>
#include <memory>

#include "oc/storage/kv.h"
#include "oc/storage/store.h"

namespace oc::storage {

Result<MutableByteSpan> ObjectWriter::AppendSpace(uint64_t min_bytes, uint64_t max_bytes) {
  (void)min_bytes;  // the scratch always holds max_bytes
  if (max_bytes == 0) {
    return Status::InvalidArgument("max_bytes", "a lend needs max_bytes > 0");
  }
  if (scratch_lent_.has_value()) {
    return Status::FailedPrecondition(Subject::kEntity, "a lend is already outstanding");
  }
  // An empty Append changes nothing and answers what Append would now: a spent or failed
  // writer lends nothing (store.h).
  OC_RETURN_IF_ERROR(Append(ByteSpan{}));
  if (scratch_bytes_ < max_bytes) {
    scratch_ = std::make_unique_for_overwrite<std::byte[]>(max_bytes);
    scratch_bytes_ = max_bytes;
  }
  scratch_lent_ = max_bytes;
  return MutableByteSpan(scratch_.get(), max_bytes);
}

Status ObjectWriter::Appended(uint64_t n) {
  if (!scratch_lent_.has_value()) {
    return Status::FailedPrecondition(Subject::kEntity, "Appended without a lend");
  }
  const uint64_t lent = *scratch_lent_;
  scratch_lent_.reset();
  if (n > lent) {
    return Status::FailedPrecondition(Subject::kEntity, "Appended more than was lent");
  }
  if (n == 0) {
    return Status::Ok();
  }
  return Append(ByteSpan(scratch_.get(), n));
}

Result<ByteSpan> ChunkSource::Peek(uint64_t max_bytes) {
  if (max_bytes == 0) {
    return Status::InvalidArgument("max_bytes", "a peek needs max_bytes > 0");
  }
  if (peek_pos_ == peek_end_) {
    if (peek_capacity_ < max_bytes) {
      peek_buffer_ = std::make_unique_for_overwrite<std::byte[]>(max_bytes);
      peek_capacity_ = max_bytes;
    }
    peek_pos_ = 0;
    peek_end_ = 0;
    OC_ASSIGN_OR_RETURN(const uint64_t n, Read(MutableByteSpan(peek_buffer_.get(), max_bytes)));
    if (n > max_bytes) {
      return Status::Internal("chunk source returned more bytes than asked");
    }
    peek_end_ = n;
  }
  const uint64_t n = std::min(max_bytes, peek_end_ - peek_pos_);
  return ByteSpan(peek_buffer_.get() + peek_pos_, n);
}

Status ChunkSource::Consume(uint64_t n) {
  if (n > peek_end_ - peek_pos_) {
    return Status::FailedPrecondition(Subject::kEntity, "Consume past what Peek returned");
  }
  peek_pos_ += n;
  return Status::Ok();
}

}  // namespace oc::storage
