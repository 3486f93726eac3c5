#include "rpc/remote_call.h"

#include <fmt/core.h>

#include "oc/common/log.h"

namespace oc::storage::rpc {
namespace {

const Logger kLog{"remote_store"};

}  // namespace

Status MalformedReply(Op op, const Status& decode) {
  return Status::Internal(
      fmt::format("malformed {} reply from storage server: {}", OpName(op), decode.ToString()));
}

Result<std::vector<std::byte>> ReadReply(ClientConn& conn, Op op, uint64_t rid) {
  FrameHeader h;
  std::vector<std::byte> body;
  OC_RETURN_IF_ERROR(conn.ReadFrame(&h, &body));
  if (h.request_id != rid || (h.flags & kFlagReply) == 0 || (h.op != op && h.op != Op::kError)) {
    conn.MarkBroken();
    return Status::Internal(
        fmt::format("storage server {} answered {} req={:016x} to {} req={:016x}", conn.peer(),
                    OpName(h.op), h.request_id, OpName(op), rid));
  }
  if (h.op == Op::kError) {
    Status st;
    if (Status d = DecodeBody(body, &st); !d.ok()) {
      conn.MarkBroken();
      return MalformedReply(op, d);
    }
    return st;
  }
  return body;
}

Result<CallResult> Exchange(Endpoint& ep, Op op, Retry retry, uint64_t rid,
                            const std::vector<std::byte>& frame) {
  const uint64_t limit = IsKvRequestOp(op) ? kMaxKvRequestBodyBytes : kMaxRequestBodyBytes;
  if (frame.size() - kHeaderBytes > limit) {
    return Status::InvalidArgument(
        "request", fmt::format("{} request of {} bytes exceeds the RPC limit of {}", OpName(op),
                               frame.size() - kHeaderBytes, limit));
  }
  for (int attempt = 0;; ++attempt) {
    bool reused = false;
    Result<std::unique_ptr<ClientConn>> conn = ep.Acquire(rid, &reused);
    if (!conn.has_value()) {
      const Status& e = conn.error();
      return e.code() == Code::kUnavailable
                 ? Status(Code::kUnavailable, e.subject(), kNotSentField, std::string(e.message()))
                 : e;
    }
    Lease lease(&ep, std::move(*conn));
    Status sent = lease->WriteAll(frame);
    Result<std::vector<std::byte>> body =
        sent.ok() ? ReadReply(lease.conn(), op, rid) : Result<std::vector<std::byte>>(sent);
    if (body.has_value()) {
      return CallResult{std::move(lease), std::move(*body)};
    }
    if (lease->healthy()) {
      lease.MarkClean();  // the server answered with an error: the call is over
      return std::move(body).error();
    }
    if (RepeatableAfterSend(retry) && reused && attempt == 0) {
      kLog.Info("retrying on a fresh connection req={:016x} op={} error={}", rid, OpName(op),
                body.error().ToString());
      continue;
    }
    kLog.Warn("call failed req={:016x} op={} error={}", rid, OpName(op), body.error().ToString());
    return std::move(body).error();
  }
}

}  // namespace oc::storage::rpc
