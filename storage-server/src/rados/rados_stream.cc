#include "rados/rados_stream.h"

#include <algorithm>

#include "rados/rados_keys.h"

namespace oc::storage::rados {

DataStream::DataStream(rados_ioctx_t io, uint64_t bucket_id, std::string key, Segment segment,
                       StreamHashes hashes)
    : io_(io), bucket_id_(bucket_id), key_(std::move(key)), segment_(segment) {
  segment_.size = 0;
  if (hashes.chunk_etag) {
    etag_.emplace(hashes.chunk_piece_bytes);
  }
}

DataStream::~DataStream() {
  while (!pending_.empty()) {
    (void)WaitOldest();
  }
}

Status DataStream::Append(ByteSpan data) {
  OC_RETURN_IF_ERROR(failed_);
  if (closed_) {
    return Status::FailedPrecondition(Subject::kEntity, "stream already closed");
  }
  if (etag_.has_value()) {
    etag_->Update(data);
  }
  while (!data.empty()) {
    // A piece never crosses a data object's end.
    const uint64_t pos = piece_at_ + piece_.size();
    const uint64_t room_in_object = segment_.extent_bytes - pos % segment_.extent_bytes;
    const uint64_t room = std::min(kPieceBytes - piece_.size(), room_in_object);
    if (piece_.capacity() == 0) {
      piece_.reserve(std::min(kPieceBytes, segment_.extent_bytes));
    }
    const uint64_t n = std::min<uint64_t>(room, data.size());
    piece_.append(reinterpret_cast<const char*>(data.data()), n);
    data = data.subspan(n);
    segment_.size += n;
    if (n == room) {
      failed_ = Flush();
      OC_RETURN_IF_ERROR(failed_);
    }
  }
  return Status::Ok();
}

Status DataStream::Flush() {
  if (piece_.empty()) {
    return Status::Ok();
  }
  while (pending_.size() >= kPiecesInFlight) {
    OC_RETURN_IF_ERROR(WaitOldest());
  }
  const uint64_t extent = piece_at_ / segment_.extent_bytes;
  const uint64_t within = piece_at_ % segment_.extent_bytes;
  auto p = std::make_unique<Pending>();
  if (within == 0) {
    p->op.WriteFull(piece_);
    p->op.SetXattr(kKeyXattr, key_);
    p->op.SetXattr(kVersionXattr, VersionId(segment_));
  } else {
    p->op.Write(piece_, within);
  }
  const int rc = p->op.OperateAsync(io_, DataOid(bucket_id_, segment_, extent), p->c);
  OC_RETURN_IF_ERROR(FromRados(rc, "writing a data object"));
  pending_.push_back(std::move(p));
  piece_at_ += piece_.size();
  piece_.clear();  // librados copied it
  return Status::Ok();
}

Status DataStream::WaitOldest() {
  std::unique_ptr<Pending> p = std::move(pending_.front());
  pending_.pop_front();
  return FromRados(p->c.Wait(), "writing a data object");
}

Status DataStream::Close() {
  if (closed_) {
    return failed_;
  }
  closed_ = true;
  if (failed_.ok()) {
    failed_ = Flush();
  }
  if (etag_.has_value()) {
    chunk_etag_ = etag_->Finish();
    etag_.reset();
  }
  std::string().swap(piece_);
  return failed_;
}

Status DataStream::Finish() {
  (void)Close();
  while (!pending_.empty()) {
    Status s = WaitOldest();
    if (failed_.ok()) {
      failed_ = s;
    }
  }
  return failed_;
}

void DataStream::Discard() {
  while (!pending_.empty()) {
    (void)WaitOldest();
  }
  const uint64_t written = piece_at_;  // bytes handed to librados
  const uint64_t objects = segment_.extent_bytes == 0
                               ? 0
                               : (written + segment_.extent_bytes - 1) / segment_.extent_bytes;
  std::deque<std::pair<std::unique_ptr<WriteOp>, Completion>> ops;
  for (uint64_t e = 0; e < objects; ++e) {
    auto op = std::make_unique<WriteOp>();
    op->Remove();
    Completion c;
    if (op->OperateAsync(io_, DataOid(bucket_id_, segment_, e), c) == 0) {
      ops.emplace_back(std::move(op), std::move(c));
    }
  }
  for (auto& [op, c] : ops) {
    (void)c.Wait();
  }
  piece_at_ = 0;
  piece_.clear();
}

}  // namespace oc::storage::rados
