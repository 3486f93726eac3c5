// ValidateBody (wire.h): decodes any frame body as its receiver would, for the fuzz target and
// the check that every op has a decoder. The unary calls' shapes come from calls.h, the same
// table the server and the client use; the streamed calls' frames are listed here.
#include <optional>
#include <type_traits>

#include "rpc/calls.h"
#include "rpc/wire.h"

namespace oc::storage::rpc {
namespace {

// A call's request (flags without kFlagReply) or its reply.
template <typename C>
Status ValidateCall(bool reply, ByteSpan body) {
  if (!reply) {
    typename C::Request request;
    return DecodeRequest(body, &request);
  }
  using Value = typename ReplyValue<typename C::Return>::type;
  if constexpr (std::is_void_v<Value>) {
    return DecodeBody(body);
  } else {
    Value value{};
    return DecodeBody(body, &value);
  }
}

// ValidateCall for the unary call of `op`, or nullopt if `op` is not one.
template <typename... Calls>
std::optional<Status> ValidateUnary(Op op, bool reply, ByteSpan body, CallList<Calls...>) {
  std::optional<Status> out;
  (void)((op == Calls::op ? (out = ValidateCall<Calls>(reply, body), true) : false) || ...);
  return out;
}

// A streamed call's opening frame: the request fields, answered by an empty reply (a writer
// opened) or by `ReplyT`.
template <typename C, typename ReplyT = void>
Status ValidateOpening(bool reply, ByteSpan body) {
  if (!reply) {
    typename C::Request request;
    return DecodeRequest(body, &request);
  }
  if constexpr (std::is_void_v<ReplyT>) {
    return DecodeBody(body);
  } else {
    ReplyT value{};
    return DecodeBody(body, &value);
  }
}

}  // namespace

Status ValidateBody(Op op, uint16_t flags, ByteSpan body) {
  const bool reply = (flags & kFlagReply) != 0;
  if (std::optional<Status> unary = ValidateUnary(op, reply, body, UnaryCalls{})) {
    return *unary;
  }
  switch (op) {
    case Op::kHello: {
      std::string secret;
      return reply ? DecodeBody(body) : DecodeBody(body, &secret);
    }
    case Op::kError: {
      Status st;
      return DecodeBody(body, &st);
    }
    case Op::kStats:
      return ValidateCall<StatsCall>(reply, body);
    case Op::kPutBegin:
      return ValidateOpening<PutBeginCall>(reply, body);
    case Op::kUploadPartBegin:
      return ValidateOpening<UploadPartBeginCall>(reply, body);
    case Op::kGet:
      return ValidateOpening<GetCall, GetReply>(reply, body);
    case Op::kData:
      return Status::Ok();
    case Op::kCommit: {
      ObjectMeta meta;
      return reply ? DecodeBody(body, &meta) : DecodeBody(body);
    }
    case Op::kAbort:
      return DecodeBody(body);
    case Op::kPutHeader: {
      std::string name;
      std::string value;
      return reply ? DecodeBody(body) : DecodeBody(body, &name, &value);
    }
    case Op::kKvProbe:
    case Op::kKvGetLayers:
    case Op::kKvPutChunks: {
      if (reply) {
        KvProbeResult probe;
        KvGetReport get;
        KvPutReport put;
        return op == Op::kKvProbe       ? DecodeBody(body, &probe)
               : op == Op::kKvGetLayers ? DecodeBody(body, &get)
                                        : DecodeBody(body, &put);
      }
      std::string bucket;
      std::string text;
      std::string principal;
      OC_RETURN_IF_ERROR(DecodeBody(body, &bucket, &text, &principal));
      return DecodeDescriptorText(text, op).status();
    }
    case Op::kKvPlan: {
      KvPlan plan;
      return DecodeBody(body, &plan);
    }
    case Op::kKvData: {
      WireReader r(body);
      uint64_t offset = 0;
      ByteSpan rest;
      (void)(r.U64(&offset) && r.Take(r.remaining(), &rest));
      return r.Finish();
    }
    case Op::kKvLayerReady: {
      uint32_t layer = 0;
      return DecodeBody(body, &layer);
    }
    // The unary calls, answered above.
    case Op::kCreateBucket:
    case Op::kDeleteBucket:
    case Op::kHeadBucket:
    case Op::kListBuckets:
    case Op::kHead:
    case Op::kDelete:
    case Op::kCopy:
    case Op::kList:
    case Op::kHeadMany:
    case Op::kCreateUpload:
    case Op::kCompleteUpload:
    case Op::kAbortUpload:
    case Op::kListParts:
    case Op::kListUploads:
    case Op::kPutTags:
    case Op::kDeleteIf:
    case Op::kSetLifecycle:
    case Op::kGetLifecycle:
    case Op::kKvDataPlane:
    case Op::kServerInfo:
      break;
  }
  return Status(Code::kUnimplemented, Subject::kNone, "op", "unknown op");
}

}  // namespace oc::storage::rpc
