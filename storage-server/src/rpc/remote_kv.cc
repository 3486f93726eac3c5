// RemoteStore's descriptor calls (remote_store_impl.h; wire.h kKv*). Each goes to the
// bucket's server as one call: that server plans, reads and assembles, and with a data-plane
// target writes (or, for a PUT, pulls) the caller's memory with its own UCX data plane, so
// nothing of the payload passes through this process. Without a target the layer-major
// payload streams back in frames read straight into the body sink's staging buffers, and a
// PUT's chunk-major body streams to the server in data frames; TCP's flow control and the
// sink's bounded buffers are the backpressure.
#include <algorithm>
#include <array>
#include <optional>

#include <fmt/core.h>

#include "oc/common/log.h"
#include "oc/descriptor/codec.h"
#include "rpc/calls.h"
#include "rpc/remote_store_impl.h"

namespace oc::storage::rpc {
namespace {

const Logger kLog{"remote_store"};

}  // namespace

// The descriptor travels as its POST-body text (wire.h); a probe moves no byte over the
// data plane, so it names no principal.
Result<KvProbeResult> RemoteStore::ProbeChunks(std::string_view bucket,
                                               const descriptor::Descriptor& d) {
  std::vector<std::byte> frame;
  const uint64_t rid = NextRid();
  EncodeFrame(&frame, Op::kKvProbe, 0, rid, bucket, descriptor::EncodeBody(d), std::string());
  OC_ASSIGN_OR_RETURN(CallResult call,
                      Routed(bucket, Route::kAny, Retry::kIfPooled, [&](Endpoint& ep) {
                        return Exchange(ep, Op::kKvProbe, Retry::kIfPooled, rid, frame);
                      }));
  call.lease.MarkClean();
  KvProbeResult r;
  if (Status dec = DecodeBody(call.body, &r); !dec.ok()) {
    return MalformedReply(Op::kKvProbe, dec);
  }
  if (r.sizes.size() != d.num_chunks()) {
    return Status::Internal("storage server answered KvProbe with a wrong count");
  }
  return r;
}

// The bucket's home server (shared placement) or its server (partitioned): where its
// descriptor calls with a target go too.
Result<DataPlaneInfo> RemoteStore::DataPlane(std::string_view bucket) {
  return Routed(bucket, Route::kBucketHome, KvDataPlaneCall::retry,
                [&](Endpoint& ep) { return Unary<KvDataPlaneCall>(ep, bucket); });
}

// A call with a data-plane target goes to the bucket's home, whose data plane the client
// connected to (DataPlane); one without moves its payload over this connection and may go
// anywhere. Once sent, only a PUT with a target is run again elsewhere (PutChunks). Sending
// fails only before the request frame went out whole (no connection, or the write failed), so
// the server it was meant for has run nothing: in shared placement the send is tried once more
// on another server, GET and PUT alike (a stopped server is otherwise picked again each time
// its skip expires). With a target that is the next server from the bucket's home on, which a
// client that discovered the data plane while the home was skipped connected to; any other
// refuses the connection id (400, "connect again"), and the client connects again.
Result<Lease> RemoteStore::SendKvRequest(std::string_view bucket, Op op, uint64_t rid,
                                         const descriptor::Descriptor& d) {
  return Routed(bucket, d.target.has_value() ? Route::kBucketHome : Route::kAny, Retry::kIfPooled,
                [&](Endpoint& ep) { return SendKvRequestTo(ep, bucket, op, rid, d); });
}

Result<Lease> RemoteStore::SendKvRequestTo(Endpoint& ep, std::string_view bucket, Op op,
                                           uint64_t rid, const descriptor::Descriptor& d) {
  std::vector<std::byte> frame;
  EncodeFrame(&frame, op, 0, rid, bucket, descriptor::EncodeBody(d),
              d.target.has_value() ? d.target->principal : std::string());
  if (frame.size() - kHeaderBytes > kMaxKvRequestBodyBytes) {
    return Status(Code::kInvalidArgument, Subject::kDescriptor, "body",
                  "descriptor too large for the storage RPC");
  }
  for (int attempt = 0;; ++attempt) {
    bool reused = false;
    OC_ASSIGN_OR_RETURN(std::unique_ptr<ClientConn> conn, ep.Acquire(rid, &reused));
    Lease lease(&ep, std::move(conn));
    Status sent = lease->WriteAll(frame);
    if (sent.ok()) {
      return lease;
    }
    // Nothing reached the server's store if the request frame did not go out whole.
    if (!(reused && attempt == 0)) {
      return sent;
    }
  }
}

// The reply frames of one descriptor GET (wire.h, kKvGetLayers): kKvPlan, then without a
// target kKvData/kKvLayerReady, then the report or an error. Once the plan has arrived the
// body sink is finished exactly once, whatever happens (Store::GetLayers' contract).
Result<KvGetReport> RemoteStore::GetLayers(std::string_view bucket, const descriptor::Descriptor& d,
                                           LayerSink* body_sink,
                                           const std::function<Status(const KvPlan&)>& on_plan) {
  const bool to_target = d.target.has_value();
  if (!to_target && body_sink == nullptr) {
    return Status::InvalidArgument("body_sink", "a descriptor without a target needs a body sink");
  }
  const uint64_t rid = NextRid();
  OC_ASSIGN_OR_RETURN(Lease lease, SendKvRequest(bucket, Op::kKvGetLayers, rid, d));
  std::optional<KvPlan> plan;
  uint64_t next = 0;  // body bytes received so far
  // Ends the call after the plan: the sink learns `st` (unless the transfer already failed).
  auto fail = [&](Status st, bool broken) -> Status {
    if (broken) {
      lease->MarkBroken();
      kLog.Warn("descriptor get failed req={:016x} error={}", rid, st.ToString());
    } else {
      lease.MarkClean();
    }
    if (plan.has_value() && body_sink != nullptr) {
      (void)body_sink->Finish(st);
    }
    return st;
  };
  auto protocol = [&](std::string_view what) {
    return fail(Status::Internal(fmt::format("storage server {} broke a descriptor get: {}",
                                             lease->peer(), what)),
                true);
  };
  for (;;) {
    Result<FrameHeader> h = lease->ReadHeader(kMaxFrameBodyBytes);
    if (!h.has_value()) {
      return fail(h.error(), true);
    }
    if (h->request_id != rid || (h->flags & kFlagReply) == 0) {
      return protocol("a frame of another call");
    }
    if (h->op == Op::kKvData && plan.has_value() && !to_target) {
      // u64 offset, then bytes read straight into the sink's staging buffers.
      std::array<std::byte, 8> offset_bytes;
      if (h->body_length <= offset_bytes.size() ||
          h->body_length - offset_bytes.size() > kStreamChunkBytes) {
        return protocol("a data frame of a bad size");
      }
      if (Status st = lease->ReadExact(offset_bytes); !st.ok()) {
        return fail(st, true);
      }
      uint64_t left = h->body_length - offset_bytes.size();
      if (GetLittleEndian64(offset_bytes.data()) != next || left > plan->payload_bytes - next) {
        return protocol("a data frame out of order or past the payload");
      }
      while (left > 0) {
        Result<StagingBuffer> buffer = body_sink->AcquireBuffer();
        if (!buffer.has_value()) {
          return fail(buffer.error(), true);  // the caller's side failed: drop the stream
        }
        const uint64_t n = std::min<uint64_t>(left, buffer->bytes().size());
        if (Status st = lease->ReadExact(buffer->bytes().first(n)); !st.ok()) {
          return fail(st, true);
        }
        if (Status st = body_sink->Write(next, std::move(*buffer), n); !st.ok()) {
          return fail(st, true);
        }
        next += n;
        left -= n;
      }
      continue;
    }
    // Every other frame is small: read it whole.
    if (h->body_length > kMaxRequestBodyBytes) {
      return protocol("an oversized control frame");
    }
    std::vector<std::byte> body(h->body_length);
    if (Status st = lease->ReadExact(body); !st.ok()) {
      return fail(st, true);
    }
    if (h->op == Op::kError) {
      Status remote;
      if (Status dec = DecodeBody(body, &remote); !dec.ok()) {
        return protocol(dec.ToString());
      }
      return fail(remote, false);
    }
    if (h->op == Op::kKvPlan && !plan.has_value()) {
      KvPlan p;
      if (Status dec = DecodeBody(body, &p); !dec.ok()) {
        return protocol(dec.ToString());
      }
      // The plan must describe this descriptor: M·L·S bytes, M <= N.
      uint64_t want = 0;
      if (p.num_chunks != d.num_chunks() ||
          __builtin_mul_overflow(p.matched * d.num_layers, d.layer_bytes, &want) ||
          p.payload_bytes != want) {
        return protocol("a plan that does not match the descriptor");
      }
      plan = std::move(p);
      if (on_plan) {
        if (Status st = on_plan(*plan); !st.ok()) {
          // The server is already delivering: closing the connection stops it.
          return fail(st, true);
        }
      }
      continue;
    }
    if (h->op == Op::kKvLayerReady && plan.has_value() && !to_target) {
      uint32_t layer = 0;
      if (Status dec = DecodeBody(body, &layer); !dec.ok() || layer >= d.num_layers) {
        return protocol("a bad layer-ready frame");
      }
      if (Status st = body_sink->LayerReady(layer); !st.ok()) {
        return fail(st, true);
      }
      continue;
    }
    if (h->op == Op::kKvGetLayers && plan.has_value()) {
      KvGetReport report;
      if (Status dec = DecodeBody(body, &report); !dec.ok()) {
        return protocol(dec.ToString());
      }
      if (!to_target && next != plan->payload_bytes) {
        return protocol("the payload ended early");
      }
      lease.MarkClean();
      if (!to_target) {
        OC_RETURN_IF_ERROR(body_sink->Finish(Status::Ok()));
      }
      return report;
    }
    return protocol(fmt::format("an unexpected {} frame", OpName(h->op)));
  }
}

namespace {

// The end of a descriptor PUT whose request (and body, if any) went out on `lease`: kCommit,
// or kAbort if the body's source failed (`source_error`, then the answer), then the reply.
Result<KvPutReport> FinishPut(Lease& lease, uint64_t rid, const Status& source_error) {
  OC_RETURN_IF_ERROR(lease->WriteFrame(source_error.ok() ? Op::kCommit : Op::kAbort, rid, {}));
  Result<std::vector<std::byte>> reply = ReadReply(lease.conn(), Op::kKvPutChunks, rid);
  if (lease->healthy()) {
    lease.MarkClean();
  }
  if (!source_error.ok()) {
    return source_error;  // the server's answer to kAbort only confirms it
  }
  if (!reply.has_value()) {
    return std::move(reply).error();
  }
  KvPutReport report;
  if (Status dec = DecodeBody(*reply, &report); !dec.ok()) {
    lease.MarkDirty();
    return MalformedReply(Op::kKvPutChunks, dec);
  }
  return report;
}

}  // namespace

// A descriptor PUT (wire.h, kKvPutChunks): the request, then without a target the body in
// data frames, then kCommit (or kAbort if the body failed), then one reply. With a target the
// server pulls the chunks from the client's memory, which still holds them whatever happened
// to this connection: the whole call, request to reply, runs once more on another server
// when its connection breaks (KvPutRetry, calls.h), like a call that was never sent. Without
// one the body is read from `body` as it goes out, so only an unsent request is tried again.
Result<KvPutReport> RemoteStore::PutChunks(std::string_view bucket, const descriptor::Descriptor& d,
                                           ChunkSource* body) {
  const bool from_target = d.target.has_value();
  if (!from_target && body == nullptr) {
    return Status::InvalidArgument("body", "a descriptor without a target needs a body");
  }
  const uint64_t rid = NextRid();
  if (from_target) {
    return Routed(
        bucket, Route::kBucketHome, KvPutRetry(true), [&](Endpoint& ep) -> Result<KvPutReport> {
          OC_ASSIGN_OR_RETURN(Lease lease, SendKvRequestTo(ep, bucket, Op::kKvPutChunks, rid, d));
          return FinishPut(lease, rid, Status::Ok());
        });
  }
  OC_ASSIGN_OR_RETURN(Lease lease, SendKvRequest(bucket, Op::kKvPutChunks, rid, d));
  Status source_error;
  std::vector<std::byte> piece(kStreamChunkBytes);
  for (;;) {
    Result<uint64_t> n = body->Read(MutableByteSpan(piece));
    if (!n.has_value()) {
      source_error = n.error();
      break;
    }
    if (*n == 0) {
      break;
    }
    if (*n > piece.size()) {
      source_error = Status::Internal("chunk source returned a bad length");
      break;
    }
    OC_RETURN_IF_ERROR(lease->WriteFrame(Op::kData, rid, ByteSpan(piece).first(*n)));
  }
  return FinishPut(lease, rid, source_error);
}

}  // namespace oc::storage::rpc
