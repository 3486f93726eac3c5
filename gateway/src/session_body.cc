// Request bodies (session_impl.h): 100 Continue once auth and size checks have passed, the
// body read in bounded pieces under read_timeout, a small XML body read whole and checked
// against its payload hash or aws-chunked signatures, a PutObject/UploadPart body streamed
// through those checks into the Store writer (committed only when all pass), and the drain of
// what is left of a body after an early error.
#include "session_impl.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "auth/aws_chunked.h"
#include "oc/sigv4/crypto.h"

namespace oc::gateway {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

// A lent tail shorter than this is not worth a piece (a read and a pool hop) of its own: the
// writer lends its scratch instead (ObjectWriter::AppendSpace) and copies.
constexpr uint64_t kMinLendBytes = 64 << 10;
// The most one lend asks for. A lend larger than a piece fills in piece-sized reads (each
// within read_timeout, as any piece) before its one pool hop: the hop, two thread wake-ups,
// cost more than the bytes' copy here (docs/decisions/data-files-sync-behind.md).
constexpr uint64_t kMaxLendBytes = 1 << 20;

// At the end of an upload's body: the checksum it declared (UploadStart::checksum) against the
// bytes received. A header's value must equal what was computed (400 BadDigest naming it, and
// nothing is stored); a trailer's was checked by the decoder, and an object upload
// (BodyPolicy::kUpload: PutObject, UploadPart) adds it to the object or part now
// (ObjectWriter::AddHeader). Sets *value to the checksum the object carries.
Status CheckUploadChecksum(UploadStart& start, const std::string& trailer_value, BodyPolicy body,
                           std::string* value) {
  if (!start.checksum) {
    return Status::Ok();
  }
  const auth::ChecksumAlgorithm algorithm = start.checksum->algorithm();
  std::string header(auth::ChecksumHeaderName(algorithm));
  if (!start.checksum_expected.empty()) {
    if (start.checksum->FinishBase64() != start.checksum_expected) {
      return Status(Code::kInvalidArgument, Subject::kDigest, std::move(header),
                    fmt::format("The {} you specified did not match the calculated checksum.",
                                auth::ChecksumName(algorithm)));
    }
    *value = start.checksum_expected;
    return Status::Ok();
  }
  *value = trailer_value;
  if (body != BodyPolicy::kUpload || value->empty()) {
    return Status::Ok();
  }
  return start.writer->AddHeader(std::move(header), *value);
}

}  // namespace

template <class Stream>
asio::awaitable<bool> Session<Stream>::SendContinue() {
  Exchange& ex = *ex_;
  if (!ex.expect_continue || ex.continue_sent) {
    co_return true;
  }
  ex.continue_sent = true;
  http::response<http::empty_body> cont{http::status::continue_, 11};
  beast::error_code ec;
  Lowest().expires_after(opts_.read_timeout);
  co_await http::async_write(stream_, cont, asio::redirect_error(asio::use_awaitable, ec));
  co_return !ec;
}

template <class Stream>
asio::awaitable<std::pair<size_t, beast::error_code>> Session<Stream>::ReadPiece(
    MutableByteSpan into) {
  if (into.empty()) {
    into = MutableByteSpan(reinterpret_cast<std::byte*>(piece_.data()), piece_.size());
  }
  auto& body = parser_->get().body();
  body.data = into.data();
  body.size = into.size();
  beast::error_code ec;
  if (!parser_->is_done()) {
    Lowest().expires_after(opts_.read_timeout);
    co_await http::async_read(stream_, buffer_, *parser_,
                              asio::redirect_error(asio::use_awaitable, ec));
    if (ec == http::error::need_buffer) {
      ec = {};
    }
  }
  const size_t n = into.size() - body.size;
  ex_->bytes_in += n;
  co_return std::make_pair(n, ec);
}

template <class Stream>
Response Session<Stream>::BodyReadError(const beast::error_code& ec) {
  ex_->must_close = true;
  if (ec == http::error::body_limit) {
    return Response::Error(S3Error::kEntityTooLarge);
  }
  if (ec == beast::error::timeout) {
    return Response::Error(S3Error::kRequestTimeout);
  }
  return Response::Error(S3Error::kIncompleteBody);
}

template <class Stream>
asio::awaitable<std::optional<Response>> Session<Stream>::ReadXmlBody() {
  Exchange& ex = *ex_;
  Request& req = ex.req;
  if (req.content_length && *req.content_length > opts_.max_xml_body_bytes) {
    co_return Response::Error(S3Error::kMaxMessageLengthExceeded);
  }
  if (!co_await SendContinue()) {
    ex.must_close = true;
    co_return Response::Error(S3Error::kRequestTimeout);
  }
  std::string raw;
  for (;;) {
    auto [n, ec] = co_await ReadPiece();
    if (ec) {
      co_return BodyReadError(ec);
    }
    if (raw.size() + n > RawBodyLimit(opts_.max_xml_body_bytes)) {
      ex.must_close = true;
      co_return Response::Error(S3Error::kMaxMessageLengthExceeded);
    }
    raw.append(piece_.data(), n);
    if (parser_->is_done()) {
      break;
    }
  }
  if (auth::IsAwsChunked(ex.auth.payload)) {
    auth::AwsChunkedDecoder decoder(ex.auth);
    ByteSpan input = AsBytes(raw);
    while (!input.empty()) {
      Result<auth::AwsChunkedDecoder::Step> step = decoder.Next(input);
      if (!step.has_value()) {
        co_return Response::FromStatus(step.error(), &req);
      }
      req.body.append(AsText(step->payload));
      input = input.subspan(step->consumed);
    }
    if (Status s = decoder.Finish(); !s.ok()) {
      co_return Response::FromStatus(s, &req);
    }
  } else {
    req.body = std::move(raw);
    if (Status s = auth::CheckPayloadSha256(ex.auth, sigv4::Sha256Of(req.body)); !s.ok()) {
      co_return Response::FromStatus(s, &req);
    }
  }
  if (req.body.size() > opts_.max_xml_body_bytes) {
    co_return Response::Error(S3Error::kMaxMessageLengthExceeded);
  }
  co_return std::nullopt;
}

template <class Stream>
asio::awaitable<bool> Session<Stream>::ServeUpload() {
  Exchange& ex = *ex_;
  Request& req = ex.req;
  const BodyPolicy body = RowOf(req.route.op).body;
  const bool streaming = auth::IsAwsChunked(ex.auth.payload);
  const bool chunked_transfer = !req.content_length.has_value();
  // No length at all; or a descriptor PUT without one, whose body must be exactly chunks x
  // layers x layer bytes (docs/protocol.md): answered 411 at once, before any body byte is
  // read, as S3 answers a PUT without Content-Length (API reference, "Error responses":
  // MissingContentLength). aws-chunked bodies carry x-amz-decoded-content-length instead.
  // PutObject and UploadPart take plain chunked bodies of any length (docs/decisions/
  // chunked-uploads.md).
  if (chunked_transfer &&
      (!parser_->chunked() || (body == BodyPolicy::kDescriptorUpload && !streaming))) {
    co_return co_await Finish(Response::Error(S3Error::kMissingContentLength));
  }
  const uint64_t body_bytes =
      streaming ? ex.auth.decoded_content_length : req.content_length.value_or(0);
  if (body_bytes > opts_.max_object_bytes) {
    co_return co_await Finish(Response::Error(S3Error::kEntityTooLarge));
  }
  if (!streaming) {
    parser_->body_limit(opts_.max_object_bytes);
  }

  std::optional<auth::AwsChunkedDecoder> decoder;
  if (streaming) {
    decoder.emplace(ex.auth);
  }
  const bool hash = ex.auth.payload == auth::PayloadMode::kSigned;
  sigv4::Sha256 sha;
  UploadStart start;
  Status body_status;
  bool opened = false;
  // Space the writer lent for the next piece (ObjectWriter::AppendSpace): the parser writes
  // the body straight into the store's extent buffer, and the hashes read it there. Empty:
  // the piece goes to piece_, and the writer copies it (the first piece, read before the
  // writer opens, and aws-chunked bodies, whose chunk framing is not payload).
  // docs/decisions/put-copies-lent-buffers.md.
  MutableByteSpan lend;
  uint64_t received = 0;  // body bytes read so far
  const bool may_lend = !streaming && !chunked_transfer;
  auto lend_next = [&] {  // on the pool, with the writer open and the previous piece taken
    if (!may_lend || received >= body_bytes) {
      return;
    }
    const uint64_t max =
        std::min<uint64_t>(std::max<uint64_t>(piece_.size(), kMaxLendBytes), body_bytes - received);
    Result<MutableByteSpan> space = start.writer->AppendSpace(std::min(max, kMinLendBytes), max);
    if (!space.has_value()) {
      body_status = space.error();
      return;
    }
    lend = *space;
  };
  auto open = [&] {
    start = OpenUpload(*shared_.env, req, body_bytes);
    opened = true;
  };
  // A client waiting for 100 Continue gets it only once the writer is open (access checked,
  // sizes valid). Any other client sends its body at once: the first piece is read before the
  // writer opens, and opening, appending it (and, for a body that fits one piece, checking and
  // committing) share one pool hop (docs/decisions/put-path-cpu-measured.md).
  if (ex.expect_continue) {
    auto open_and_lend = [&] {
      open();
      if (start.writer) {
        lend_next();
      }
    };
    co_await OnPool(*shared_.pool, open_and_lend);
    if (!start.writer) {
      co_return co_await Finish(std::move(start.error));
    }
    if (!body_status.ok()) {
      start.writer.reset();
      co_return co_await Finish(Response::FromStatus(body_status, &req));
    }
    if (!co_await SendContinue()) {
      co_return false;
    }
  }

  Response res;
  std::string checksum_value;  // the upload's verified x-amz-checksum-*, echoed in the reply
  uint64_t lent_bytes = 0;
  bool done = false;
  while (!done) {
    size_t n = 0;
    beast::error_code ec;
    do {  // a lend in pieces; anything else one piece
      const MutableByteSpan into =
          lend.empty() ? lend : lend.subspan(n, std::min<uint64_t>(lend.size() - n, piece_.size()));
      const auto [k, e] = co_await ReadPiece(into);
      n += k;
      ec = e;
      if (k == 0) {
        break;
      }
    } while (!ec && n < lend.size() && !parser_->is_done());
    received += n;
    if (ec) {
      start.writer.reset();  // discards everything appended: nothing half-written is visible
      co_return co_await Finish(BodyReadError(ec));
    }
    const bool last = parser_->is_done();
    // Decode, hash and append on the pool; on the last piece also check and commit.
    auto step = [&] {
      if (!opened) {
        open();
        if (!start.writer) {
          return;
        }
      }
      const bool lent = !lend.empty();
      ByteSpan input = lent ? ByteSpan(lend.data(), n)
                            : ByteSpan(reinterpret_cast<const std::byte*>(piece_.data()), n);
      lend = {};
      if (lent) {
        lent_bytes += n;
      }
      if (decoder) {
        while (!input.empty() && body_status.ok()) {
          Result<auth::AwsChunkedDecoder::Step> s = decoder->Next(input);
          if (!s.has_value()) {
            body_status = s.error();
            break;
          }
          if (!s->payload.empty()) {
            if (start.checksum && !start.checksum_expected.empty()) {
              start.checksum->Update(s->payload);
            }
            body_status = start.writer->Append(s->payload);
          }
          input = input.subspan(s->consumed);
        }
      } else {
        if (hash) {
          sha.Update(input);
        }
        if (start.checksum) {
          start.checksum->Update(input);
        }
        if (lent) {
          body_status = start.writer->Appended(n);
        } else if (!input.empty()) {
          body_status = start.writer->Append(input);
        }
      }
      if (!body_status.ok()) {
        return;
      }
      if (!last) {
        lend_next();
        return;
      }
      body_status = decoder ? decoder->Finish() : auth::CheckPayloadSha256(ex.auth, sha.Finish());
      if (!body_status.ok()) {
        return;
      }
      body_status = CheckUploadChecksum(start, decoder ? decoder->trailer_checksum() : "", body,
                                        &checksum_value);
      if (!body_status.ok()) {
        return;
      }
      Result<storage::ObjectMeta> committed = start.writer->Commit();
      res = FinishUpload(*shared_.env, req, start, std::move(committed));
      if (!checksum_value.empty() && !res.error) {
        res.AddHeader(std::string(auth::ChecksumHeaderName(start.checksum->algorithm())),
                      checksum_value);
      }
    };
    co_await OnPool(*shared_.pool, step);
    if (last) {
      shared_.metrics->BodyBytes(lent_bytes, received - lent_bytes);
    }
    if (!start.writer) {
      co_return co_await Finish(std::move(start.error));  // refused at open: nothing appended
    }
    if (!body_status.ok()) {
      start.writer.reset();
      co_return co_await Finish(Response::FromStatus(body_status, &req));
    }
    done = last;
  }
  start.writer.reset();
  co_return co_await Finish(std::move(res));
}

template <class Stream>
asio::awaitable<bool> Session<Stream>::DrainBody() {
  Exchange& ex = *ex_;
  if (parser_->is_done()) {
    co_return true;
  }
  if (ex.must_close || (ex.expect_continue && !ex.continue_sent)) {
    co_return false;  // the client waits for 100 Continue that will not come
  }
  uint64_t drained = 0;
  while (!parser_->is_done()) {
    auto [n, ec] = co_await ReadPiece();
    drained += n;
    if (ec || drained > opts_.max_drain_bytes) {
      co_return false;
    }
  }
  co_return true;
}

// The members the other session files call, for both streams (session_impl.h).
template asio::awaitable<std::optional<Response>> Session<PlainStream>::ReadXmlBody();
template asio::awaitable<std::optional<Response>> Session<TlsStream>::ReadXmlBody();
template asio::awaitable<bool> Session<PlainStream>::ServeUpload();
template asio::awaitable<bool> Session<TlsStream>::ServeUpload();
template asio::awaitable<bool> Session<PlainStream>::DrainBody();
template asio::awaitable<bool> Session<TlsStream>::DrainBody();

}  // namespace oc::gateway
