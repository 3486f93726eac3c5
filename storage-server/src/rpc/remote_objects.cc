// RemoteStore's bucket, object and multipart calls (remote_store_impl.h). The unary ones
// are one line each over calls.h; a Put or UploadPart returns a RemoteWriter that streams
// Data frames on its leased connection until Commit, and a Get returns a RemoteReader that
// reads the Data frames straight into the caller's buffers (docs/protocol.md, "Storage RPC").
#include <algorithm>
#include <iterator>

#include "rpc/calls.h"
#include "rpc/remote_store_impl.h"
#include "stream_copy.h"

namespace oc::storage::rpc {
namespace {

class RemoteWriter final : public ObjectWriter {
 public:
  RemoteWriter(Lease lease, uint64_t rid) : lease_(std::move(lease)), rid_(rid) {}
  ~RemoteWriter() override {
    if (lease_ && !spent_ && lease_->healthy()) {
      // Tell the server to discard what it has; it sends no reply, so the connection is
      // back at a frame boundary and reusable.
      if (lease_->WriteFrame(Op::kAbort, rid_, {}).ok()) {
        lease_.MarkClean();
      }
    }
  }

  Status Append(ByteSpan data) override {
    if (spent_ || !lease_) {
      return Status::FailedPrecondition(Subject::kNone, "writer already committed or failed");
    }
    while (!data.empty()) {
      const ByteSpan piece = data.first(std::min<size_t>(data.size(), kStreamChunkBytes));
      if (Status st = lease_->WriteFrame(Op::kData, rid_, piece); !st.ok()) {
        spent_ = true;
        return st;
      }
      data = data.subspan(piece.size());
    }
    return Status::Ok();
  }

  Status AddHeader(std::string name, std::string value) override {
    if (spent_ || !lease_) {
      return Status::FailedPrecondition(Subject::kNone, "writer already committed or failed");
    }
    std::vector<std::byte> body;
    WireWriter w(&body);
    w.Str(name);
    w.Str(value);
    if (Status st = lease_->WriteFrame(Op::kPutHeader, rid_, body); !st.ok()) {
      spent_ = true;
      return st;
    }
    return Status::Ok();
  }

  Result<ObjectMeta> Commit() override {
    if (spent_ || !lease_) {
      return Status::FailedPrecondition(Subject::kNone, "writer already committed or failed");
    }
    spent_ = true;
    OC_RETURN_IF_ERROR(lease_->WriteFrame(Op::kCommit, rid_, {}));
    Result<std::vector<std::byte>> body = ReadReply(lease_.conn(), Op::kCommit, rid_);
    if (lease_->healthy()) {
      lease_.MarkClean();  // a meta or an error reply: either way the call is over
    }
    if (!body.has_value()) {
      return std::move(body).error();
    }
    ObjectMeta meta;
    if (Status d = DecodeBody(*body, &meta); !d.ok()) {
      lease_.MarkDirty();
      return MalformedReply(Op::kCommit, d);
    }
    return meta;
  }

 private:
  Lease lease_;
  const uint64_t rid_;
  bool spent_ = false;
};

class RemoteReader final : public ObjectReader {
 public:
  RemoteReader(Lease lease, uint64_t rid, GetReply reply)
      : lease_(std::move(lease)), rid_(rid), reply_(std::move(reply)), remaining_(reply_.length) {
    if (remaining_ == 0) {
      lease_.MarkClean();
      lease_.Return();
    }
  }

  const ObjectMeta& meta() const override { return reply_.meta; }
  uint64_t offset() const override { return reply_.offset; }
  uint64_t length() const override { return reply_.length; }

  Result<uint64_t> Read(MutableByteSpan out) override {
    if (remaining_ == 0 || out.empty()) {
      return uint64_t{0};
    }
    if (!lease_) {
      return Status::Unavailable("storage connection of this reader was lost");
    }
    if (frame_left_ == 0) {
      OC_RETURN_IF_ERROR(NextFrame());
    }
    const size_t n = static_cast<size_t>(std::min<uint64_t>(out.size(), frame_left_));
    if (Status st = lease_->ReadExact(out.first(n)); !st.ok()) {
      lease_.Return();
      return st;
    }
    frame_left_ -= n;
    remaining_ -= n;
    if (remaining_ == 0) {
      lease_.MarkClean();
      lease_.Return();
    }
    return uint64_t{n};
  }

 private:
  // Reads the next data frame's header (its bytes are then read straight into the
  // caller's buffers), or the error that ended the stream.
  Status NextFrame() {
    Result<FrameHeader> h = lease_->ReadHeader(kMaxFrameBodyBytes);
    if (!h.has_value()) {
      lease_.Return();
      return h.error();
    }
    if (h->request_id == rid_ && h->op == Op::kError) {
      std::vector<std::byte> body(h->body_length);
      OC_RETURN_IF_ERROR(lease_->ReadExact(body));
      Status st;
      if (Status d = DecodeBody(body, &st); !d.ok()) {
        lease_.Return();
        return MalformedReply(Op::kGet, d);
      }
      remaining_ = 0;  // the server ended the stream; the connection is at a boundary
      lease_.MarkClean();
      lease_.Return();
      return st;
    }
    if (h->request_id != rid_ || h->op != Op::kData || h->body_length == 0 ||
        h->body_length > remaining_ || h->body_length > kStreamChunkBytes) {
      lease_->MarkBroken();
      lease_.Return();
      return Status::Internal("storage server sent an unexpected frame in a Get stream");
    }
    frame_left_ = h->body_length;
    return Status::Ok();
  }

  Lease lease_;
  const uint64_t rid_;
  const GetReply reply_;
  uint64_t remaining_;
  uint64_t frame_left_ = 0;
};

}  // namespace

// --- Buckets ---

Status RemoteStore::CreateBucket(std::string_view bucket, std::string_view owner) {
  return RoutedUnary<CreateBucketCall>(bucket, bucket, owner);
}

Status RemoteStore::DeleteBucket(std::string_view bucket) {
  return RoutedUnary<DeleteBucketCall>(bucket, bucket);
}

Result<BucketInfo> RemoteStore::HeadBucket(std::string_view bucket) {
  return RoutedUnary<HeadBucketCall>(bucket, bucket);
}

// --- Objects ---

template <typename C, typename... Args>
Result<std::unique_ptr<ObjectWriter>> RemoteStore::OpenWriter(Endpoint& ep, const Args&... args) {
  const uint64_t rid = NextRid();
  OC_ASSIGN_OR_RETURN(CallResult r, OpenCall<C>(ep, rid, MakeParams<C>(args...)));
  if (Status d = DecodeBody(r.body); !d.ok()) {
    return MalformedReply(C::op, d);
  }
  return std::unique_ptr<ObjectWriter>(new RemoteWriter(std::move(r.lease), rid));
}

// Opening a writer creates nothing, so it is routed like a read; the writer then stays on
// the server that opened it.
Result<std::unique_ptr<ObjectWriter>> RemoteStore::Put(const ObjectKey& key,
                                                       const PutOptions& options) {
  return Routed(key.bucket, Route::kAny, PutBeginCall::retry,
                [&](Endpoint& ep) { return OpenWriter<PutBeginCall>(ep, key, options); });
}

Result<std::unique_ptr<ObjectReader>> RemoteStore::Get(const ObjectKey& key, ByteRange range) {
  const uint64_t rid = NextRid();
  OC_ASSIGN_OR_RETURN(CallResult call,
                      Routed(key.bucket, Route::kAny, GetCall::retry, [&](Endpoint& ep) {
                        return OpenCall<GetCall>(ep, rid, MakeParams<GetCall>(key, range));
                      }));
  GetReply reply;
  if (Status d = DecodeBody(call.body, &reply); !d.ok()) {
    return MalformedReply(Op::kGet, d);
  }
  call.lease.MarkDirty();  // data frames follow: the reader owns the stream now
  return std::unique_ptr<ObjectReader>(
      new RemoteReader(std::move(call.lease), rid, std::move(reply)));
}

Result<ObjectMeta> RemoteStore::Head(const ObjectKey& key) {
  return RoutedUnary<HeadCall>(key.bucket, key);
}

Result<ObjectMeta> RemoteStore::PutObjectTags(const ObjectKey& key, const Tags& tags) {
  return RoutedUnary<PutTagsCall>(key.bucket, key, tags);
}

Result<std::vector<std::optional<ObjectMeta>>> RemoteStore::HeadMany(
    std::string_view bucket, std::span<const std::string> names) {
  OC_ASSIGN_OR_RETURN(auto metas, RoutedUnary<HeadManyCall>(bucket, bucket, names));
  if (metas.size() != names.size()) {
    return Status::Internal("storage server answered HeadMany with a wrong count");
  }
  return metas;
}

Status RemoteStore::Delete(const ObjectKey& key) {
  return RoutedUnary<DeleteCall>(key.bucket, key);
}

Status RemoteStore::DeleteIf(const ObjectKey& key, const ObjectVersionMatch& expected) {
  return RoutedUnary<DeleteIfCall>(key.bucket, key, expected);
}

Status RemoteStore::SetBucketLifecycle(std::string_view bucket, std::string_view config) {
  return RoutedUnary<SetLifecycleCall>(bucket, bucket, config);
}

Result<std::string> RemoteStore::GetBucketLifecycle(std::string_view bucket) {
  return RoutedUnary<GetLifecycleCall>(bucket, bucket);
}

Result<ObjectMeta> RemoteStore::Copy(const ObjectKey& src, const ObjectKey& dst,
                                     const std::optional<PutOptions>& replace,
                                     const WriteConditions& conditions) {
  // Shared placement: every server holds both buckets, so the copy is one call.
  if (placement_ == Placement::kShared) {
    return RoutedUnary<CopyCall>(src.bucket, src, dst, replace, conditions);
  }
  Endpoint& from = For(src.bucket);
  Endpoint& to = For(dst.bucket);
  if (&from == &to) {
    return Unary<CopyCall>(from, src, dst, replace, conditions);
  }
  return CopyAcross(src, dst, replace, conditions);
}

Result<ObjectMeta> RemoteStore::CopyAcross(const ObjectKey& src, const ObjectKey& dst,
                                           const std::optional<PutOptions>& replace,
                                           const WriteConditions& conditions) {
  // The buckets live on different servers: stream src through this process into dst, one
  // piece at a time. The reader pins one version of src, as a server-side copy would; dst's
  // server decides the conditions at the commit.
  return StreamCopy(*this, src, *this, dst, replace, conditions, kStreamChunkBytes);
}

Result<ListResult> RemoteStore::List(std::string_view bucket, const ListOptions& options) {
  return RoutedUnary<ListCall>(bucket, bucket, options);
}

// --- Multipart ---

Result<std::string> RemoteStore::CreateMultipartUpload(const ObjectKey& key,
                                                       const PutOptions& options) {
  return RoutedUnary<CreateUploadCall>(key.bucket, key, options);
}

Result<std::unique_ptr<ObjectWriter>> RemoteStore::UploadPart(const ObjectKey& key,
                                                              std::string_view upload_id,
                                                              uint32_t part_number,
                                                              const PutOptions& options) {
  return Routed(key.bucket, Route::kAny, UploadPartBeginCall::retry, [&](Endpoint& ep) {
    return OpenWriter<UploadPartBeginCall>(ep, key, upload_id, part_number, options);
  });
}

Result<ObjectMeta> RemoteStore::CompleteMultipartUpload(const ObjectKey& key,
                                                        std::string_view upload_id,
                                                        std::span<const CompletedPart> parts,
                                                        const CompleteOptions& options) {
  return RoutedUnary<CompleteUploadCall>(key.bucket, key, upload_id, parts, options);
}

Status RemoteStore::AbortMultipartUpload(const ObjectKey& key, std::string_view upload_id) {
  return RoutedUnary<AbortUploadCall>(key.bucket, key, upload_id);
}

Result<ListPartsResult> RemoteStore::ListParts(const ObjectKey& key, std::string_view upload_id,
                                               uint32_t part_number_marker, uint32_t max_parts) {
  return RoutedUnary<ListPartsCall>(key.bucket, key, upload_id, part_number_marker, max_parts);
}

Result<ListUploadsResult> RemoteStore::ListMultipartUploads(std::string_view bucket,
                                                            const ListUploadsOptions& options) {
  return RoutedUnary<ListUploadsCall>(bucket, bucket, options);
}

}  // namespace oc::storage::rpc
