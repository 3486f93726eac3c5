// The descriptor calls (server_connection.h; wire.h kKv*). The descriptor arrives as its
// POST-body text and is checked here with the gateway's limits (DecodeDescriptorText): a bad
// one is answered with the field at fault and the connection stays usable, since the frame
// itself was well formed. KvProbe is one reply; KvGetLayers and KvPutChunks run their store
// call on the pool while this strand moves their frames (server_kv_streams.h).
#include <memory>
#include <optional>

#include <fmt/core.h>
#include <boost/asio/post.hpp>

#include "oc/common/log.h"
#include "rpc/server_connection.h"
#include "rpc/server_kv_streams.h"

namespace oc::storage::rpc {

namespace asio = boost::asio;

namespace {

const Logger kLog{"rpc"};

// The body every descriptor call starts with: the bucket, the descriptor's POST-body text and
// the caller's principal. A malformed body is the returned error (the frame is rejected); a
// bad descriptor is *d's error (answered with its field, the connection stays usable). The
// principal is set on the descriptor's target, the one a data-plane connection must match.
Status DecodeDescriptorCall(Op op, ByteSpan body, std::string* bucket,
                            Result<descriptor::Descriptor>* d) {
  std::string text;
  std::string principal;
  OC_RETURN_IF_ERROR(DecodeBody(body, bucket, &text, &principal));
  *d = DecodeDescriptorText(text, op);
  if (d->has_value() && (*d)->target.has_value()) {
    (*d)->target->principal = std::move(principal);
  }
  return Status::Ok();
}

}  // namespace

asio::awaitable<bool> Connection::ServeKvProbe(const FrameHeader& h) {
  const uint64_t rid = h.request_id;
  std::string bucket;
  Result<descriptor::Descriptor> d = Status::Internal("not decoded");
  if (Status s = DecodeDescriptorCall(h.op, body(), &bucket, &d); !s.ok()) {
    co_return co_await Reject(rid, s);
  }
  if (!d.has_value()) {
    co_return co_await SendError(rid, d.error());
  }
  server_.kv_probes.fetch_add(1, std::memory_order_relaxed);
  const Result<KvProbeResult> r =
      co_await OnPool([&] { return server_.store->ProbeChunks(bucket, *d); });
  co_return co_await Answer(h.op, rid, r);
}

namespace {

// Runs a descriptor call's store task on the store's descriptor executor, shared with any
// other front end of the store (docs/decisions/one-bounded-executor.md): kResourceExhausted (field
// "kv.descriptor_threads") when every worker is busy. RPC calls never wait in its admission queue:
// the caller (a gateway's relay thread, or a PUT's bytes) would be held meanwhile, and the gateway
// queues its own requests. A store without one (it forwards descriptor calls itself) uses the store
// pool.
template <typename Server, typename F>
Status SubmitDescriptorTask(Server& server, F task) {
  if (BoundedExecutor* executor = server.store->descriptor_executor()) {
    return executor->SubmitNow(std::move(task));
  }
  asio::post(server.store_pool, std::move(task));
  return Status::Ok();
}

}  // namespace

// GetLayers runs on the descriptor executor. With a data-plane target the store writes the caller's
// memory with its own UCX data plane and only the plan and the report come back here;
// without one the payload streams in kKvData frames (and kKvLayerReady after each layer)
// through a KvGetStream. Frames are written in the order the store produced them, the
// report or error last.
asio::awaitable<bool> Connection::ServeKvGetLayers(const FrameHeader& h) {
  const uint64_t rid = h.request_id;
  std::string bucket;
  Result<descriptor::Descriptor> decoded = Status::Internal("not decoded");
  if (Status s = DecodeDescriptorCall(h.op, body(), &bucket, &decoded); !s.ok()) {
    co_return co_await Reject(rid, s);
  }
  if (!decoded.has_value()) {
    co_return co_await SendError(rid, decoded.error());
  }
  server_.kv_gets.fetch_add(1, std::memory_order_relaxed);
  const bool to_target = decoded->target.has_value();
  auto stream = std::make_shared<KvGetStream>(!to_target, server_.options.io_timeout);
  stream->set_wake(Waker());
  if (!to_target) {
    server_.NotePeak(body_.capacity() + kKvStreamBuffers * kStreamChunkBytes);
  }
  // On the store's descriptor executor (Store::descriptor_executor); a full one refuses the
  // call (kResourceExhausted) before anything is read.
  const Status admitted = SubmitDescriptorTask(
      server_, [stream, store = server_.store, bucket = std::move(bucket), d = std::move(*decoded),
                to_target, guard = asio::make_work_guard(server_.io)]() mutable {
        Result<KvGetReport> r =
            store->GetLayers(bucket, d, to_target ? nullptr : stream.get(),
                             [&stream](const KvPlan& plan) { return stream->PushPlan(plan); });
        stream->Done(std::move(r));
      });
  if (!admitted.ok()) {
    co_return co_await SendError(rid, admitted);
  }
  for (;;) {
    bool done = false;
    std::optional<KvGetStream::Frame> f = stream->Next(&done);
    if (f.has_value()) {
      const ByteSpan data =
          f->buffer.valid() ? ByteSpan(f->buffer.bytes().first(f->length)) : ByteSpan();
      if (!co_await WriteData(f->op, rid, f->head, data)) {
        // The caller is gone: the store call stops at its next write (or plan) and ends on
        // its own; this connection closes.
        stream->Fail(Status::Unavailable("the connection to the caller was lost"));
        kLog.Warn("descriptor get stream broken req={:016x} conn={} peer={}", rid, id_, peer_);
        co_return false;
      }
      continue;
    }
    if (done) {
      break;
    }
    co_await WaitForWake();
  }
  Result<KvGetReport> r = stream->TakeResult();
  if (r.has_value()) {
    if (to_target) {
      server_.kv_get_target_bytes.fetch_add(r->plan.payload_bytes, std::memory_order_relaxed);
      server_.kv_get_target_writes.fetch_add(r->writes, std::memory_order_relaxed);
    } else {
      server_.kv_get_stream_bytes.fetch_add(stream->streamed(), std::memory_order_relaxed);
    }
  }
  co_return co_await Answer(h.op, rid, r);
}

// PutChunks runs on the descriptor executor while this strand reads the call's frames: data frames
// (only without a target) feed a KvPutStream, and kCommit or kAbort ends the body. The one
// reply (report or error) follows kCommit/kAbort, so the connection is at a frame boundary
// again even when the store call failed early (the rest of the body is then drained unread).
asio::awaitable<bool> Connection::ServeKvPutChunks(const FrameHeader& h) {
  const uint64_t rid = h.request_id;
  std::string bucket;
  Result<descriptor::Descriptor> decoded = Status::Internal("not decoded");
  if (Status s = DecodeDescriptorCall(h.op, body(), &bucket, &decoded); !s.ok()) {
    co_return co_await Reject(rid, s);
  }
  const bool to_target = decoded.has_value() && decoded->target.has_value();
  std::shared_ptr<KvPutStream> stream;
  if (decoded.has_value()) {
    server_.kv_puts.fetch_add(1, std::memory_order_relaxed);
    stream = std::make_shared<KvPutStream>(server_.options.io_timeout);
    stream->set_wake(Waker());
    const Status admitted =
        SubmitDescriptorTask(server_, [stream, store = server_.store, bucket = std::move(bucket),
                                       d = std::move(*decoded), to_target,
                                       guard = asio::make_work_guard(server_.io)]() mutable {
          stream->Done(store->PutChunks(bucket, d, to_target ? nullptr : stream.get()));
        });
    if (!admitted.ok()) {  // refused: drain the body to kCommit, then answer the refusal
      stream = nullptr;
      decoded = admitted;
    }
  }
  auto abandon = [&stream] {
    if (stream != nullptr) {
      stream->Close(/*abort=*/true);  // the store call ends on its own
    }
  };
  bool aborted = false;
  for (;;) {
    FrameHeader fh;
    Status error;
    const ReadKind kind = co_await ReadFrame(server_.options.io_timeout,
                                             server_.options.max_frame_bytes, &fh, &error);
    if (kind != ReadKind::kOk) {
      abandon();
      co_return kind == ReadKind::kBad ? co_await Reject(fh.request_id, error) : false;
    }
    if (fh.request_id != rid) {
      abandon();
      co_return co_await Reject(fh.request_id,
                                Status::InvalidArgument("request_id", "changed inside a call"));
    }
    if (fh.op == Op::kData) {
      if (to_target) {
        abandon();
        co_return co_await Reject(
            rid, Status::InvalidArgument("op", "data frames in a descriptor PUT with a target"));
      }
      if (stream == nullptr) {
        continue;  // the descriptor was refused: drain to kCommit, then answer
      }
      while (!stream->HasRoom()) {
        co_await WaitForWake();
      }
      stream->Push(std::move(body_));
      body_ = {};
      continue;
    }
    if ((fh.op != Op::kCommit && fh.op != Op::kAbort) || fh.body_length != 0) {
      abandon();
      co_return co_await Reject(
          rid,
          Status::InvalidArgument("op", fmt::format("{} inside a descriptor PUT", OpName(fh.op))));
    }
    aborted = fh.op == Op::kAbort;
    break;
  }
  if (stream == nullptr) {
    co_return co_await SendError(rid, decoded.error());
  }
  // kCommit: the body is complete (PutChunks checks its length); kAbort: abandoned.
  stream->Close(aborted);
  while (!stream->done()) {
    co_await WaitForWake();
  }
  Result<KvPutReport> r = stream->TakeResult();
  if (r.has_value()) {
    (to_target ? server_.kv_put_pulled_bytes : server_.kv_put_stream_bytes)
        .fetch_add(r->bytes, std::memory_order_relaxed);
  }
  co_return co_await Answer(h.op, rid, r);
}

}  // namespace oc::storage::rpc
