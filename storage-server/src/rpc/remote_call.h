#pragma once
// The client's side of one call (the mirror of the server's ServeUnary,
// server_unary_calls.cc): encode a call's request from calls.h, send it on a leased
// connection, read its reply frame, decode the reply the call's Store method returns.
// Private to oc_storage_rpc_client.
//
// Retries (docs/decisions/remote-store-placement-retry.md): a call that may be repeated after its
// frame went out (RepeatableAfterSend, calls.h: reads and idempotent mutations) is sent once
// more on a fresh connection when it failed on a pooled one; others never are.
//
// Thread safety: free functions; an Endpoint may be shared, a Lease may not.

#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "oc/common/bytes.h"
#include "oc/common/result.h"
#include "oc/common/status.h"
#include "rpc/calls.h"
#include "rpc/client_conn.h"
#include "rpc/remote_pool.h"
#include "rpc/wire.h"

namespace oc::storage::rpc {

// kInternal for a reply the client cannot decode.
Status MalformedReply(Op op, const Status& decode);

// The field of a kUnavailable Status whose call never reached the server (no connection could
// be opened or greeted), so no byte of it was sent: any call, a mutation too, may be run on
// another server (RemoteStore::Routed). A kUnavailable without it may have reached the server:
// only a call whose Retry allows it (RepeatableAfterSend, calls.h) is run again.
inline constexpr char kNotSentField[] = "rpc_not_sent";

// Reads the reply frame of call `rid`: the body of a frame (op, reply) or the error an
// error frame carries. Anything else breaks the connection.
Result<std::vector<std::byte>> ReadReply(ClientConn& conn, Op op, uint64_t rid);

// A call's reply body, and its connection, still leased so a streamed call can go on.
struct CallResult {
  Lease lease;
  std::vector<std::byte> body;
};

// Sends the request `frame` of call (op, rid) on a connection of `ep` and reads the reply.
// kInvalidArgument if the frame exceeds what a server accepts for `op`; the server's error
// (the lease is then returned clean); kUnavailable if the connection broke.
Result<CallResult> Exchange(Endpoint& ep, Op op, Retry retry, uint64_t rid,
                            const std::vector<std::byte>& frame);

// Sends call C with `params` and reads its reply frame; the lease stays held.
template <typename C>
Result<CallResult> OpenCall(Endpoint& ep, uint64_t rid, const typename C::Params& params) {
  std::vector<std::byte> frame;
  EncodeRequest<C>(&frame, rid, params);
  return Exchange(ep, C::op, C::retry, rid, frame);
}

// A whole unary call: returns what C's Store method returned on the server (Status, or
// Result<T> with the decoded T).
template <typename C>
typename C::Return UnaryCall(Endpoint& ep, uint64_t rid, const typename C::Params& params) {
  Result<CallResult> r = OpenCall<C>(ep, rid, params);
  if (!r.has_value()) {
    return std::move(r).error();
  }
  r->lease.MarkClean();
  using Value = typename ReplyValue<typename C::Return>::type;
  if constexpr (std::is_void_v<Value>) {
    if (Status d = DecodeBody(r->body); !d.ok()) {
      return MalformedReply(C::op, d);
    }
    return Status::Ok();
  } else {
    Value value{};
    if (Status d = DecodeBody(r->body, &value); !d.ok()) {
      return MalformedReply(C::op, d);
    }
    return value;
  }
}

}  // namespace oc::storage::rpc
