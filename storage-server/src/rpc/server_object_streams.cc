// The object calls that stream (server_connection.h): a writer opened by PutBegin or
// UploadPartBegin takes Data frames until Commit or Abort; Get answers with the resolved
// range and then the bytes in Data frames. docs/protocol.md, "Storage RPC", gives the
// sequences.
#include <algorithm>

#include <fmt/core.h>

#include "oc/common/log.h"
#include "rpc/calls.h"
#include "rpc/server_connection.h"

namespace oc::storage::rpc {

namespace asio = boost::asio;

namespace {

const Logger kLog{"rpc"};

}  // namespace

template <typename C>
asio::awaitable<bool> Connection::ServeOpenWrite(const FrameHeader& h) {
  typename C::Request request;
  if (Status d = DecodeRequest(body(), &request); !d.ok()) {
    co_return co_await Reject(h.request_id, d);
  }
  auto w = co_await OnPool([&] { return C::Run(*server_.store, request); });
  co_return co_await ServeWrite(h, std::move(w));
}

// The table of server_unary_calls.cc names these.
template asio::awaitable<bool> Connection::ServeOpenWrite<PutBeginCall>(const FrameHeader& h);
template asio::awaitable<bool> Connection::ServeOpenWrite<UploadPartBeginCall>(
    const FrameHeader& h);

asio::awaitable<bool> Connection::ServeWrite(const FrameHeader& h,
                                             Result<std::unique_ptr<ObjectWriter>> opened) {
  const uint64_t rid = h.request_id;
  if (!opened.has_value()) {
    co_return co_await SendError(rid, opened.error());
  }
  std::unique_ptr<ObjectWriter> writer = std::move(*opened);
  if (!co_await Reply(h.op, rid)) {
    co_await DestroyOnPool(std::move(writer));
    co_return false;
  }
  // Data frames follow until Commit or Abort. The first Append error is kept and answered
  // at Commit: the client streams without waiting for replies.
  Status first_error;
  for (;;) {
    FrameHeader fh;
    Status error;
    const ReadKind kind = co_await ReadFrame(server_.options.io_timeout,
                                             server_.options.max_frame_bytes, &fh, &error);
    if (kind != ReadKind::kOk) {
      co_await DestroyOnPool(std::move(writer));
      co_return kind == ReadKind::kBad ? co_await Reject(fh.request_id, error) : false;
    }
    if (fh.request_id != rid) {
      co_await DestroyOnPool(std::move(writer));
      co_return co_await Reject(fh.request_id,
                                Status::InvalidArgument("request_id", "changed inside a call"));
    }
    if (fh.op == Op::kData) {
      if (first_error.ok()) {
        const ByteSpan data(body_.data(), body_.size());
        first_error = co_await OnPool([&] { return writer->Append(data); });
      }
      continue;
    }
    if (fh.op == Op::kPutHeader) {
      std::string name;
      std::string value;
      if (Status d = DecodeBody(body(), &name, &value); !d.ok()) {
        co_await DestroyOnPool(std::move(writer));
        co_return co_await Reject(rid, d);
      }
      if (first_error.ok()) {
        first_error = writer->AddHeader(std::move(name), std::move(value));
      }
      continue;
    }
    if (fh.op == Op::kAbort && fh.body_length == 0) {
      co_await DestroyOnPool(std::move(writer));
      co_return true;
    }
    if (fh.op != Op::kCommit || fh.body_length != 0) {
      co_await DestroyOnPool(std::move(writer));
      co_return co_await Reject(
          rid,
          Status::InvalidArgument("op", fmt::format("{} inside a streamed write", OpName(fh.op))));
    }
    if (!first_error.ok()) {
      co_await DestroyOnPool(std::move(writer));
      co_return co_await SendError(rid, first_error);
    }
    const Result<ObjectMeta> meta = co_await OnPool([&] { return writer->Commit(); });
    co_await DestroyOnPool(std::move(writer));
    co_return co_await Answer(Op::kCommit, rid, meta);
  }
}

asio::awaitable<bool> Connection::ServeGet(const FrameHeader& h) {
  const uint64_t rid = h.request_id;
  GetCall::Request request;
  if (Status d = DecodeRequest(body(), &request); !d.ok()) {
    co_return co_await Reject(rid, d);
  }
  Result<std::unique_ptr<ObjectReader>> opened =
      co_await OnPool([&] { return GetCall::Run(*server_.store, request); });
  if (!opened.has_value()) {
    co_return co_await SendError(rid, opened.error());
  }
  std::unique_ptr<ObjectReader> reader = std::move(*opened);
  GetReply reply{reader->meta(), reader->offset(), reader->length()};
  bool open = co_await Reply(Op::kGet, rid, reply);
  // Data frames of at most kStreamChunkBytes; the socket's flow control paces us to the
  // client, so one piece is all this connection ever holds.
  uint64_t remaining = reply.length;
  chunk_.resize(std::min<uint64_t>(kStreamChunkBytes, remaining));
  NoteMemory();
  while (open && remaining > 0) {
    const MutableByteSpan piece(chunk_.data(), std::min<uint64_t>(chunk_.size(), remaining));
    const Result<uint64_t> n = co_await OnPool([&] { return reader->Read(piece); });
    if (!n.has_value() || *n == 0 || *n > piece.size()) {
      const Status st = !n.has_value()
                            ? n.error()
                            : Status::Internal("object read returned a bad length mid-stream");
      kLog.Error("get failed mid-stream req={:016x} conn={} status={}", rid, id_, st.ToString());
      open = co_await SendError(rid, st);
      break;
    }
    open = co_await WriteData(Op::kData, rid, {}, ByteSpan(chunk_.data(), *n));
    remaining -= *n;
  }
  co_await DestroyOnPool(std::move(reader));
  co_return open;
}

}  // namespace oc::storage::rpc
