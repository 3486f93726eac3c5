// The frame header of the storage RPC (wire.h): op names and the 24-byte header codec.
#include <algorithm>

#include <fmt/core.h>

#include "rpc/wire.h"

namespace oc::storage::rpc {

std::string_view OpName(Op op) {
  switch (op) {
    case Op::kHello:
      return "Hello";
    case Op::kError:
      return "Error";
    case Op::kCreateBucket:
      return "CreateBucket";
    case Op::kDeleteBucket:
      return "DeleteBucket";
    case Op::kHeadBucket:
      return "HeadBucket";
    case Op::kListBuckets:
      return "ListBuckets";
    case Op::kPutBegin:
      return "PutBegin";
    case Op::kData:
      return "Data";
    case Op::kCommit:
      return "Commit";
    case Op::kAbort:
      return "Abort";
    case Op::kGet:
      return "Get";
    case Op::kHead:
      return "Head";
    case Op::kDelete:
      return "Delete";
    case Op::kCopy:
      return "Copy";
    case Op::kList:
      return "List";
    case Op::kHeadMany:
      return "HeadMany";
    case Op::kCreateUpload:
      return "CreateMultipartUpload";
    case Op::kUploadPartBegin:
      return "UploadPart";
    case Op::kCompleteUpload:
      return "CompleteMultipartUpload";
    case Op::kAbortUpload:
      return "AbortMultipartUpload";
    case Op::kListParts:
      return "ListParts";
    case Op::kListUploads:
      return "ListMultipartUploads";
    case Op::kPutHeader:
      return "PutHeader";
    case Op::kPutTags:
      return "PutObjectTags";
    case Op::kDeleteIf:
      return "DeleteIf";
    case Op::kSetLifecycle:
      return "SetBucketLifecycle";
    case Op::kGetLifecycle:
      return "GetBucketLifecycle";
    case Op::kStats:
      return "Stats";
    case Op::kServerInfo:
      return "ServerInfo";
    case Op::kKvProbe:
      return "KvProbe";
    case Op::kKvGetLayers:
      return "KvGetLayers";
    case Op::kKvPlan:
      return "KvPlan";
    case Op::kKvData:
      return "KvData";
    case Op::kKvLayerReady:
      return "KvLayerReady";
    case Op::kKvPutChunks:
      return "KvPutChunks";
    case Op::kKvDataPlane:
      return "KvDataPlane";
  }
  return "unknown";
}

bool IsKnownOp(uint8_t value) { return OpName(static_cast<Op>(value)) != "unknown"; }

void EncodeHeader(const FrameHeader& h, std::span<std::byte, kHeaderBytes> out) {
  PutLittleEndian32(kMagic, out.data());
  out[4] = static_cast<std::byte>(h.version);
  out[5] = static_cast<std::byte>(h.op);
  out[6] = static_cast<std::byte>(h.flags & 0xff);
  out[7] = static_cast<std::byte>(h.flags >> 8);
  PutLittleEndian64(h.request_id, out.data() + 8);
  PutLittleEndian64(h.body_length, out.data() + 16);
}

Status DecodeHeader(std::span<const std::byte, kHeaderBytes> in, uint64_t max_body_bytes,
                    FrameHeader* h) {
  // The request id first, so whatever is wrong the error reply can still name the call.
  h->request_id = GetLittleEndian64(in.data() + 8);
  if (GetLittleEndian32(in.data()) != kMagic) {
    return Status::InvalidArgument("magic", "not an ObjectCache RPC frame");
  }
  h->version = static_cast<uint8_t>(in[4]);
  if (h->version != kVersion) {
    return Status(
        Code::kUnimplemented, Subject::kNone, "version",
        fmt::format("protocol version {} is not supported (this is {})", h->version, kVersion));
  }
  const uint8_t op = static_cast<uint8_t>(in[5]);
  if (!IsKnownOp(op)) {
    return Status(Code::kUnimplemented, Subject::kNone, "op", fmt::format("unknown op {}", op));
  }
  h->op = static_cast<Op>(op);
  h->flags =
      static_cast<uint16_t>(static_cast<uint16_t>(in[6]) | (static_cast<uint16_t>(in[7]) << 8));
  if ((h->flags & ~kKnownFlags) != 0) {
    return Status::InvalidArgument("flags", fmt::format("unknown flags {:#x}", h->flags));
  }
  h->body_length = GetLittleEndian64(in.data() + 16);
  const uint64_t limit = std::min(max_body_bytes, kMaxFrameBodyBytes);
  if (h->body_length > limit) {
    return Status::ResourceExhausted(
        "body_length",
        fmt::format("frame body of {} bytes exceeds the limit of {}", h->body_length, limit));
  }
  return Status::Ok();
}

}  // namespace oc::storage::rpc
