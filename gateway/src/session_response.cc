// The response (session_impl.h): the handler's run on the Store pool with the first piece of
// a streamed body, then the response on the wire (the error XML, a small body, or a reader
// streamed in bounded pieces), the request's metrics and access-log line, and the lingering
// close of a connection that still has request bytes unread.
#include "session_impl.h"

#include <algorithm>
#include <chrono>
#include <string>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "deferred_response.h"
#include "http_layer_sink.h"
#include "oc/common/log.h"
#include "oc/storage/cached_reads.h"
#include "s3/s3_headers.h"
#include "s3/s3_xml.h"

namespace oc::gateway {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

const Logger kLog{"gateway"};
const Logger kAccessLog{"access"};

}  // namespace

template <class Stream>
asio::awaitable<bool> Session<Stream>::RunHandler() {
  Exchange& ex = *ex_;
  Response res;
  ByteSpan first;
  Status read_status;
  auto job = [&] {
    res = Dispatch(*shared_.env, ex.req);
    if (res.reader && !res.error) {
      Result<ByteSpan> n = NextPiece(*res.reader, res.stream_length);
      if (n.has_value()) {
        first = *n;
      } else {
        read_status = n.error();
      }
    }
  };
  bool on_pool = true;
  const RunOn runs_on = RowOf(ex.req.route.op).runs_on;
  if (runs_on == RunOn::kIoThread) {
    job();  // never touches the Store
    on_pool = false;
  } else if (runs_on == RunOn::kCachedReads && InlineCachedReads()) {
    {
      // No co_await in this scope: it is the thread's, and other sessions run here next.
      storage::CachedReadsOnly scope;
      job();
      on_pool = scope.missed();
    }
    shared_.metrics->InlineRead(on_pool);
    if (on_pool) {  // it would have waited for the disk: start again on the pool
      res = Response();
      first = {};
      read_status = Status::Ok();
    }
  }
  if (on_pool) {
    co_await OnPool(*shared_.pool, job);
  }
  if (res.deferred) {  // a descriptor task answers when its transfer ends: wait off the pool
    const std::shared_ptr<DeferredResponse> pending = std::move(res.deferred);
    co_await WhenReady(pending);
    res = pending->Take();
  }
  if (!read_status.ok()) {
    kLog.Error("req={} read failed before the response: {}", ex.req.request_id,
               read_status.ToString());
    co_return co_await Finish(Response::FromStatus(read_status, &ex.req));
  }
  co_return co_await Finish(std::move(res), false, first);
}

template <class Stream>
bool Session<Stream>::InlineCachedReads() const {
  return opts_.inline_cached_reads && shared_.env->store->SupportsCachedReads();
}

template <class Stream>
Result<ByteSpan> Session<Stream>::NextPiece(storage::ObjectReader& reader, uint64_t left) {
  const uint64_t want = std::min<uint64_t>(left, piece_.size());
  OC_ASSIGN_OR_RETURN(ByteSpan lent, reader.Lend(want));
  if (!lent.empty() || want == 0) {
    return lent;
  }
  OC_ASSIGN_OR_RETURN(uint64_t n, FillPiece(reader, want));
  return ByteSpan(reinterpret_cast<const std::byte*>(piece_.data()), n);
}

template <class Stream>
Result<uint64_t> Session<Stream>::FillPiece(storage::ObjectReader& reader, uint64_t want) {
  uint64_t got = 0;
  while (got < want) {
    OC_ASSIGN_OR_RETURN(
        uint64_t n, reader.Read(MutableByteSpan(reinterpret_cast<std::byte*>(piece_.data()) + got,
                                                want - got)));
    if (n == 0) {
      break;
    }
    got += n;
  }
  return got;
}

template <class Stream>
asio::awaitable<bool> Session<Stream>::Finish(Response res, bool force_close, ByteSpan first) {
  EnsureBuffers();
  Exchange& ex = *ex_;
  Request& req = ex.req;
  const bool head = req.method == "HEAD";
  bool keep_alive = !force_close && parser_->is_header_done() && parser_->keep_alive() &&
                    !shared_.stopping->load();
  if (res.error) {
    res.reader.reset();
    res.stream_length = 0;
    res.headers.emplace_back("x-amz-request-id", req.request_id);
    if (res.status != 304 && !head) {
      res.content_type = "application/xml";
      const std::string resource = req.Resource();
      ErrorDetails details;
      details.resource = resource;
      details.request_id = req.request_id;
      details.message = res.error_message;
      details.argument_name = res.error_field;
      details.argument_value = res.error_value;
      res.body = RenderErrorXml(*res.error, details);
    }
    if (ErrorRow(*res.error).http_status >= 500) {
      kLog.Warn("req={} op={} error={}{}{}", req.request_id, OpName(req.route.op),
                ErrorRow(*res.error).code,
                res.error_cause.empty() ? "" : " cause=", res.error_cause);
    }
  } else {
    res.headers.emplace_back("x-amz-request-id", req.request_id);
  }
  if (keep_alive && parser_->is_header_done() && !parser_->is_done()) {
    // Body bytes unread (an early error, or a body nobody asked for). piece_ may hold the
    // first piece of a streamed response, so such a connection is closed instead.
    const bool small =
        !res.reader && req.content_length && *req.content_length <= opts_.max_drain_bytes;
    keep_alive = small && co_await DrainBody();
  }

  beast::error_code ec;
  http::response<http::buffer_body> msg{static_cast<http::status>(res.status), 11};
  msg.set(http::field::date, CurrentHttpDate());
  msg.set(http::field::server, "ObjectCache");
  for (const auto& [name, value] : res.headers) {
    msg.set(name, value);
  }
  if (!res.content_type.empty()) {
    msg.set(http::field::content_type, res.content_type);
  }
  const bool no_body_status = res.status == 204 || res.status == 304 || res.status < 200;
  const uint64_t total =
      res.reader ? res.stream_length : (head && !res.error ? res.stream_length : res.body.size());
  if (!no_body_status) {
    msg.content_length(total);
  }
  msg.keep_alive(keep_alive);
  Lowest().expires_after(opts_.read_timeout);
  response_started_ = true;
  if (head || no_body_status) {
    http::response<http::empty_body> h{std::move(msg.base())};
    if (!no_body_status) {
      h.content_length(total);
    }
    http::response_serializer<http::empty_body> sr{h};
    co_await http::async_write(stream_, sr, asio::redirect_error(asio::use_awaitable, ec));
  } else if (res.reader) {
    if (res.on_stalled_reader) {
      // The producer may give up on a client that stopped reading (a descriptor body): it
      // then closes this connection, so the write below fails now instead of holding the
      // staging until read_timeout.
      res.on_stalled_reader([registry = shared_.registry, id = id_] { registry->PostClose(id); });
    }
    http::response_serializer<http::buffer_body> sr{msg};
    uint64_t sent = 0;
    ByteSpan piece = first;
    for (;;) {
      msg.body().data = const_cast<std::byte*>(piece.data());  // buffer_body never writes it
      msg.body().size = piece.size();
      msg.body().more = sent + piece.size() < total;
      Lowest().expires_after(opts_.read_timeout);
      co_await http::async_write(stream_, sr, asio::redirect_error(asio::use_awaitable, ec));
      if (ec == http::error::need_buffer) {
        ec = {};
      }
      if (ec) {
        break;
      }
      sent += piece.size();
      ex.bytes_out = sent;
      if (sent >= total || sr.is_done()) {
        break;
      }
      Result<ByteSpan> n = Status::Internal("unset");
      auto job = [&] { n = NextPiece(*res.reader, total - sent); };
      if (BodyPieceReady(*res.reader)) {
        // The bytes are there (a descriptor body's staging buffer): taking them cannot block,
        // and a pool trip per 256 KiB piece is two thread hand-offs (issue 32: 64 per 16 MiB
        // descriptor GET; with the client's direct reads, 22 -> 14 ms of server CPU per GET).
        job();
      } else {
        co_await OnPool(*shared_.pool, job);
      }
      if (!n.has_value() || n->empty()) {
        // Headers are out: the only honest signal left is closing short of Content-Length.
        kLog.Error("req={} object read failed mid-response: {}", req.request_id,
                   n.has_value() ? std::string("short read") : n.error().ToString());
        ec = beast::error::timeout;
        keep_alive = false;
        break;
      }
      piece = *n;
    }
  } else {
    msg.body().data = res.body.data();
    msg.body().size = res.body.size();
    msg.body().more = false;
    http::response_serializer<http::buffer_body> sr{msg};
    co_await http::async_write(stream_, sr, asio::redirect_error(asio::use_awaitable, ec));
    if (!ec) {
      ex.bytes_out = res.body.size();
    }
  }
  res.reader.reset();

  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::steady_clock::now() - ex.start)
                      .count();
  shared_.metrics->Record(req.route.op, res.status, ex.bytes_in, ex.bytes_out,
                          static_cast<uint64_t>(us), res.error);
  if (opts_.access_log) {
    kAccessLog.Info("req={} op={} status={} bucket={} bytes_in={} bytes_out={} us={}{}",
                    req.request_id, OpName(req.route.op), res.status, LogField(req.route.bucket),
                    ex.bytes_in, ex.bytes_out, us, ec ? " aborted=1" : "");
  }
  if (ec) {
    co_return false;
  }
  if (!keep_alive) {
    co_await LingeringClose();
    co_return false;
  }
  co_return true;
}

template <class Stream>
asio::awaitable<void> Session<Stream>::LingeringClose() {
  if constexpr (!kIsTls<Stream>) {
    if (parser_ && parser_->is_header_done() && !parser_->is_done()) {
      beast::error_code ec;
      Lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
      uint64_t drained = 0;
      Lowest().expires_after(std::chrono::seconds(2));
      while (!ec && drained < opts_.max_drain_bytes) {
        size_t n = co_await Lowest().async_read_some(asio::buffer(piece_),
                                                     asio::redirect_error(asio::use_awaitable, ec));
        drained += n;
      }
    }
  }
  co_return;
}

// The members the other session files call, for both streams (session_impl.h).
template asio::awaitable<bool> Session<PlainStream>::RunHandler();
template asio::awaitable<bool> Session<TlsStream>::RunHandler();
template asio::awaitable<bool> Session<PlainStream>::Finish(Response, bool, ByteSpan);
template asio::awaitable<bool> Session<TlsStream>::Finish(Response, bool, ByteSpan);

}  // namespace oc::gateway
