// The descriptor requests of docs/protocol.md, client side: PutChunks (body or pulled over
// UCX), ProbeChunks, and GetLayers / GetLayersHttp (the layers into a data-plane target or
// streamed in the body), each validated before anything is sent.
#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "client_impl.h"
#include "fmt/format.h"
#include "layer_handle.h"
#include "oc/client/client.h"
#include "oc/common/units.h"
#include "oc/descriptor/codec.h"
#include "oc/descriptor/layout.h"
#include "oc/descriptor/limits.h"

namespace oc::client {
namespace {

using DeliveryOrder = descriptor::Delivery;
using descriptor::Descriptor;

// Body bytes read per ReadBody call on the HTTP fallback (lands directly in caller memory).
constexpr uint64_t kBodyPieceBytes = 4ull << 20;

}  // namespace

namespace {

// Chunks [first, first + count) of `d` as a descriptor of their own.
Descriptor SubDescriptor(const Descriptor& d, uint64_t first, uint64_t count) {
  Descriptor sub = d;
  if (const auto* compact = std::get_if<descriptor::CompactKeys>(&d.keys)) {
    sub.keys = descriptor::CompactKeys{
        compact->prefix, std::vector<descriptor::ChunkHash>(
                             compact->hashes.begin() + static_cast<std::ptrdiff_t>(first),
                             compact->hashes.begin() + static_cast<std::ptrdiff_t>(first + count))};
  } else {
    const auto& names = std::get<descriptor::ExplicitKeys>(d.keys).names;
    sub.keys = descriptor::ExplicitKeys{
        std::vector<std::string>(names.begin() + static_cast<std::ptrdiff_t>(first),
                                 names.begin() + static_cast<std::ptrdiff_t>(first + count))};
  }
  return sub;
}

HttpHeaders PutHeaders(const Descriptor& d) {
  HttpHeaders headers;
  for (auto& [name, value] : descriptor::EncodeHeaders(d)) {
    if (name != "x-oc-delivery") {
      headers.emplace_back(std::move(name), std::move(value));
    }
  }
  return headers;
}

// Reads a descriptor PUT's 200 answer to `sent` and appends its chunks' outcomes to
// r->existed: with x-oc-if-none-match the body's line per chunk ("existing" or "written",
// docs/protocol.md), else all written (the body is empty and drained).
Status ReadPutAnswer(HttpConnection& conn, const Descriptor& sent, PutChunksResult* r) {
  const uint64_t n = sent.num_chunks();
  if (!sent.if_none_match) {
    r->existed.insert(r->existed.end(), n, false);
    return Drain(conn);
  }
  // "existing\n" is the longest line; a longer body is not an answer to this request.
  OC_ASSIGN_OR_RETURN(std::string body, conn.ReadBodyString(n * sizeof("existing")));
  uint64_t lines = 0;
  std::string_view rest = body;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    if (line != "existing" && line != "written") {
      return Status::Corruption(
          fmt::format("descriptor PUT answer line {} is not 'existing' "
                      "or 'written'",
                      lines));
    }
    r->existed.push_back(line == "existing");
    ++lines;
  }
  if (lines != n) {
    return Status::Corruption(
        fmt::format("descriptor PUT answer has {} lines for {} chunks", lines, n));
  }
  return Status::Ok();
}

}  // namespace

Result<PutChunksResult> Client::PutChunks(std::string_view bucket, const Descriptor& d,
                                          ByteSpan chunks) {
  Descriptor put = d;
  put.target.reset();
  put.delivery = DeliveryOrder::kLayerMajor;
  OC_RETURN_IF_ERROR(descriptor::Validate(put, descriptor::Limits{}));
  const uint64_t n = put.num_chunks();
  const uint64_t object = uint64_t{put.num_layers} * put.layer_bytes;
  if (chunks.size() != n * object) {
    return Status(Code::kInvalidArgument, Subject::kDescriptor, "body",
                  fmt::format("{} bytes given for {} chunks of {} layers x {} bytes", chunks.size(),
                              n, put.num_layers, put.layer_bytes));
  }
  // The PUT's descriptor travels in headers only: split a key list too long for the
  // gateway's header limit into several PUTs (docs/protocol.md, descriptor PUT).
  uint64_t batch = n;
  while (batch > 1 && descriptor::HeaderBytes(descriptor::EncodeHeaders(SubDescriptor(
                          put, 0, batch))) > impl_->options.max_descriptor_header_bytes) {
    batch = (batch + 1) / 2;
  }
  PutChunksResult r;
  for (uint64_t first = 0; first < n; first += batch) {
    const uint64_t count = std::min(batch, n - first);
    const Descriptor sub = batch == n ? put : SubDescriptor(put, first, count);
    OC_ASSIGN_OR_RETURN(Impl::Exchange ex,
                        impl_->Execute("PUT", Impl::Path(bucket), "objectcache", PutHeaders(sub),
                                       chunks.subspan(first * object, count * object)));
    if (!ex.ok()) {
      return ex.Error();
    }
    OC_RETURN_IF_ERROR(ReadPutAnswer(*ex.conn, sub, &r));
    r.chunks += count;
    r.bytes += count * object;
    if (const std::string* id = ex.head.Find("x-oc-request-id")) {
      r.request_id = *id;
    }
  }
  return r;
}

Result<PutChunksResult> Client::PutChunks(std::string_view bucket, Descriptor d,
                                          const TargetBuffer& source, uint64_t offset) {
  d.target.reset();
  OC_RETURN_IF_ERROR(descriptor::Validate(d, descriptor::Limits{}));
  const uint64_t total = PayloadBytes(d, d.num_chunks());
  OC_ASSIGN_OR_RETURN(DataPlane * plane, impl_->Plane());
  Impl::Exchange ex;
  for (int attempt = 0;; ++attempt) {
    OC_ASSIGN_OR_RETURN(Impl::Route route, impl_->RouteFor(bucket, *plane));
    OC_ASSIGN_OR_RETURN(d.target, source.Target(route.connection, offset, total));
    OC_ASSIGN_OR_RETURN(
        ex, impl_->Execute("PUT", Impl::Path(bucket), "objectcache", PutHeaders(d), ByteSpan()));
    if (ex.ok()) {
      break;
    }
    Status answer = ex.Error();
    // Refused before any byte moved: connect again once.
    if (attempt > 0 || !impl_->ForgetIfStale(answer, bucket, route)) {
      return answer;
    }
  }
  PutChunksResult r;
  OC_RETURN_IF_ERROR(ReadPutAnswer(*ex.conn, d, &r));
  r.chunks = d.num_chunks();
  r.bytes = total;
  if (const std::string* id = ex.head.Find("x-oc-request-id")) {
    r.request_id = *id;
  }
  return r;
}

Result<ProbeResult> ParseProbeAnswer(const std::string* matched, std::string_view body,
                                     uint64_t num_chunks) {
  ProbeResult r;
  if (matched == nullptr) {
    return Status::Corruption("probe answer without x-oc-matched-chunks");
  }
  OC_ASSIGN_OR_RETURN(r.matched, ParseUint64(*matched, "x-oc-matched-chunks"));
  std::string_view rest = body;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    if (line.empty()) {
      continue;
    }
    if (line == "-") {
      r.sizes.emplace_back(std::nullopt);
    } else {
      OC_ASSIGN_OR_RETURN(uint64_t size, ParseUint64(line, "probe body"));
      r.sizes.emplace_back(size);
    }
  }
  if (r.sizes.size() != num_chunks || r.matched > r.sizes.size()) {
    return Status::Corruption(
        fmt::format("probe answer has {} sizes for {} chunks", r.sizes.size(), num_chunks));
  }
  return r;
}

Result<ProbeResult> Client::ProbeChunks(std::string_view bucket, const Descriptor& d) {
  Descriptor probe = d;
  probe.target.reset();
  probe.if_none_match = false;
  OC_RETURN_IF_ERROR(descriptor::Validate(probe, descriptor::Limits{}));
  Impl::DescriptorRequest req = impl_->BuildDescriptorRequest(probe);
  OC_ASSIGN_OR_RETURN(Impl::Exchange ex,
                      impl_->Execute(req.method, Impl::Path(bucket), "objectcache&probe",
                                     std::move(req.headers), AsBytes(req.body)));
  if (!ex.ok()) {
    return ex.Error();
  }
  OC_ASSIGN_OR_RETURN(std::string body, ex.conn->ReadBodyString());
  return ParseProbeAnswer(ex.head.Find("x-oc-matched-chunks"), body, probe.num_chunks());
}

namespace {

Result<LayersResult> ParseLayersAnswer(const HttpResponseHead& head) {
  std::vector<descriptor::HeaderField> fields;
  fields.reserve(head.headers.size());
  for (const auto& [n, v] : head.headers) {
    fields.push_back({n, v});
  }
  LayersResult r;
  OC_ASSIGN_OR_RETURN(r.summary, descriptor::DecodeResponse(fields));
  if (const std::string* rate = head.Find("x-oc-assigned-rate-gbps")) {
    r.assigned_rate_gbps = std::strtod(rate->c_str(), nullptr);
  }
  return r;
}

// Sends a descriptor GET (or POST) and parses the answer's x-oc-* headers. On success the
// response body (layer bytes, or nothing for a data-plane target) is left unread in *ex;
// an error answer is read and returned as a Status.
Result<LayersResult> SendDescriptorGet(Client::Impl& impl, std::string_view bucket,
                                       Client::Impl::DescriptorRequest req,
                                       Client::Impl::Exchange* ex) {
  OC_ASSIGN_OR_RETURN(*ex, impl.Execute(req.method, Client::Impl::Path(bucket), "objectcache",
                                        std::move(req.headers), AsBytes(req.body)));
  if (!ex->ok()) {
    return ex->Error();
  }
  return ParseLayersAnswer(ex->head);
}

// Runs `exchange` (which ends by calling State::Finish) on the client's request executor, then
// State::End once the exchange's locals are released, so the handle may be destroyed. The
// executor's refusal (kResourceExhausted: requests_in_flight reached) is returned as is.
Result<LayerHandle> StartExchange(Client::Impl& impl, std::unique_ptr<LayerHandle::State> state,
                                  std::function<void(LayerHandle::State*)> exchange) {
  LayerHandle::State* s = state.get();
  OC_RETURN_IF_ERROR(impl.requests->Submit([s, exchange = std::move(exchange)] {
    exchange(s);
    s->End();
  }));
  return LayerHandle(std::move(state));
}

}  // namespace

Result<LayerHandle> Client::GetLayers(std::string_view bucket, Descriptor d,
                                      const TargetBuffer& buffer, LayerCallback on_layer,
                                      uint64_t offset) {
  d.target.reset();
  d.if_none_match = false;
  OC_RETURN_IF_ERROR(descriptor::Validate(d, descriptor::Limits{}));
  const uint64_t total = PayloadBytes(d, d.num_chunks());
  OC_ASSIGN_OR_RETURN(DataPlane * plane, impl_->Plane());
  OC_ASSIGN_OR_RETURN(Impl::Route route, impl_->RouteFor(bucket, *plane));
  OC_ASSIGN_OR_RETURN(d.target, buffer.Target(route.connection, offset, total));
  auto state = std::make_unique<LayerHandle::State>();
  state->impl = impl_.get();
  state->num_layers = d.num_layers;
  state->timeout = impl_->options.timeout;
  OC_ASSIGN_OR_RETURN(state->delivery,
                      plane->Expect(d.target->address, d.num_layers, std::move(on_layer)));
  Impl::DescriptorRequest req = impl_->BuildDescriptorRequest(d);
  return StartExchange(*impl_, std::move(state),
                       [req = std::move(req), bucket = std::string(bucket),
                        route = std::move(route)](LayerHandle::State* s) mutable {
                         Impl::Exchange ex;
                         Result<LayersResult> r =
                             SendDescriptorGet(*s->impl, bucket, std::move(req), &ex);
                         if (!r.has_value()) {
                           // The next request connects again if this one named a connection the
                           // server lost.
                           (void)s->impl->ForgetIfStale(r.error(), bucket, route);
                           s->Finish(r.error(), {});
                           return;
                         }
                         s->Finish(Drain(*ex.conn), std::move(*r));
                       });
}

Result<LayerHandle> Client::GetLayersHttp(std::string_view bucket, Descriptor d,
                                          MutableByteSpan out, LayerCallback on_layer) {
  d.target.reset();
  d.if_none_match = false;
  OC_RETURN_IF_ERROR(descriptor::Validate(d, descriptor::Limits{}));
  const uint64_t n = d.num_chunks();
  if (out.size() < PayloadBytes(d, n)) {
    return Status::OutOfRange(fmt::format("buffer of {} bytes is smaller than the {}-byte payload",
                                          out.size(), PayloadBytes(d, n)));
  }
  auto state = std::make_unique<LayerHandle::State>();
  state->impl = impl_.get();
  state->num_layers = d.num_layers;
  state->timeout = impl_->options.timeout;
  state->on_layer = std::move(on_layer);
  Impl::DescriptorRequest req = impl_->BuildDescriptorRequest(d);
  return StartExchange(
      *impl_, std::move(state),
      [req = std::move(req), bucket = std::string(bucket), d, out,
       n](LayerHandle::State* s) mutable {
        Impl::Exchange exchange;
        Result<LayersResult> r = SendDescriptorGet(*s->impl, bucket, std::move(req), &exchange);
        Impl::Exchange* ex = &exchange;
        if (!r.has_value()) {
          s->Finish(r.error(), {});
          return;
        }
        const uint64_t m = r->summary.matched_chunks;
        const uint64_t l_count = d.num_layers;
        const uint64_t slice = d.layer_bytes;
        if (m > n || !ex->head.content_length || *ex->head.content_length != m * l_count * slice) {
          s->Finish(Status::Corruption(fmt::format("answer of {} bytes for {} matched chunks",
                                                   ex->head.content_length.value_or(0), m)),
                    {});
          return;
        }
        r->payload_bytes = m * l_count * slice;
        const uint64_t total = r->payload_bytes;
        if (m == 0) {  // nothing matched: no layer to deliver
          s->Finish(Drain(*ex->conn), std::move(*r));
          return;
        }
        // Where each slice sits comes from layout.h only: `body` is the answer's geometry
        // (dense in M), `target` the buffer's (the descriptor's N). Layer-major: the body is
        // one run of M slices per layer, landing where the target's layer starts. Chunk-major:
        // one run, chunk j at the same offset in both. Either way layer l is whole once the
        // body holds the slice (l, M-1).
        Result<descriptor::ChunkGeometry> body =
            descriptor::ChunkGeometry::Make(d.layout, m, d.num_layers, slice);
        Result<descriptor::ChunkGeometry> target =
            descriptor::ChunkGeometry::Make(d.layout, n, d.num_layers, slice);
        if (!body.has_value() || !target.has_value()) {
          s->Finish(body.has_value() ? target.error() : body.error(), {});
          return;
        }
        const bool layer_major = d.delivery == DeliveryOrder::kLayerMajor;
        const uint64_t run = layer_major ? m * slice : total;
        uint32_t next_layer = 0;
        uint64_t received = 0;
        while (received < total) {
          const auto run_index = static_cast<uint32_t>(received / run);
          const uint64_t within = received % run;
          const uint64_t dest =
              (layer_major ? target->DestinationOffset(d.delivery, run_index, 0) : 0) + within;
          const uint64_t want = std::min(run - within, kBodyPieceBytes);
          Result<uint64_t> got = ex->conn->ReadBody(out.subspan(dest, want));
          if (!got.has_value()) {
            s->Finish(got.error(), {});
            return;
          }
          if (*got == 0) {
            s->Finish(Status::Unavailable(
                          fmt::format("body ended after {} of {} bytes", received, total)),
                      {});
            return;
          }
          received += *got;
          // Announce every layer now complete.
          while (next_layer < d.num_layers &&
                 received >= body->DestinationOffset(d.delivery, next_layer, m - 1) + slice) {
            s->LayerLanded(next_layer++);
          }
        }
        Status drained = Drain(*ex->conn);
        s->Finish(std::move(drained), std::move(*r));
      });
}

}  // namespace oc::client

namespace oc::client {

Result<uint64_t> Client::GetChunksInto(std::string_view bucket, Descriptor d,
                                       std::span<const MutableByteSpan> outs) {
  d.target.reset();
  d.if_none_match = false;
  d.delivery = DeliveryOrder::kChunkMajor;  // chunk j is one run: [j·L·S, (j+1)·L·S)
  OC_RETURN_IF_ERROR(descriptor::Validate(d, descriptor::Limits{}));
  const uint64_t n = d.num_chunks();
  const uint64_t chunk_bytes = uint64_t{d.num_layers} * d.layer_bytes;  // <= N·L·S, validated
  if (outs.size() != n) {
    return Status::InvalidArgument("outs", fmt::format("{} buffers for {} chunks", outs.size(), n));
  }
  for (uint64_t j = 0; j < n; ++j) {
    if (outs[j].size() != chunk_bytes) {
      return Status::InvalidArgument("outs", fmt::format("buffer {} has {} bytes, a chunk {}", j,
                                                         outs[j].size(), chunk_bytes));
    }
  }
  Impl::Exchange ex;
  OC_ASSIGN_OR_RETURN(LayersResult r,
                      SendDescriptorGet(*impl_, bucket, impl_->BuildDescriptorRequest(d), &ex));
  const uint64_t m = r.summary.matched_chunks;
  // The body must be exactly the M matched chunks (dense): anything else is not our answer.
  if (m > n || !ex.head.content_length || *ex.head.content_length != m * chunk_bytes) {
    return Status::Corruption(fmt::format("answer of {} bytes for {} matched chunks of {} bytes",
                                          ex.head.content_length.value_or(0), m, chunk_bytes));
  }
  for (uint64_t j = 0; j < m; ++j) {
    uint64_t got = 0;
    while (got < chunk_bytes) {
      const uint64_t want = std::min(chunk_bytes - got, kBodyPieceBytes);
      OC_ASSIGN_OR_RETURN(uint64_t n_read, ex.conn->ReadBody(outs[j].subspan(got, want)));
      if (n_read == 0) {
        return Status::Unavailable(
            fmt::format("body ended in chunk {} of {} ({} of {} bytes)", j, m, got, chunk_bytes));
      }
      got += n_read;
    }
  }
  OC_RETURN_IF_ERROR(Drain(*ex.conn));
  return m;
}

}  // namespace oc::client
