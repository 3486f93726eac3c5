// The descriptor requests of docs/protocol.md (issue 5): GET/POST /{bucket}?objectcache
// (layers into a data-plane target, or streamed in the body), the same with &probe (the
// batch existence query) and with &data-plane (where the client's UCX connects), and PUT
// /{bucket}?objectcache (N chunks in one request, from the body or pulled over UCX). Like every
// handler they run on the Store pool after the session authenticated the request; access is checked
// by their rows (s3_ops.def) exactly as for GetObject (reads) and PutObject (the PUT). The
// descriptor is decoded and validated before any Store call: a bad one is a 400 naming the x-oc-*
// field.
//
// The transfers themselves (GetLayers and PutChunks) run on the descriptor executor
// (HandlerEnv::descriptors), never on a thread of their own
// (docs/decisions/one-bounded-executor.md). A GET that finds every worker busy waits in the
// executor's bounded FIFO admission queue, holding no thread and no staging memory (its answer is a
// deferred response the session waits on); it is answered 503 SlowDown with Retry-After when the
// queue is full or when it is still waiting at the admission timeout, the message saying which. A
// PUT starts at once or gets the same answer (its body would hold a Store pool thread while it
// waited). Either way nothing was read, stored or delivered
// (docs/decisions/many-clients-admission-queue.md).

#include <chrono>

#include "chunk_pipe.h"
#include "deferred_response.h"
#include "fmt/format.h"
#include "handlers/handlers.h"
#include "http_layer_sink.h"
#include "oc/common/text.h"
#include "oc/descriptor/codec.h"
#include "oc/descriptor/limits.h"

namespace oc::gateway {
namespace {

using Clock = std::chrono::steady_clock;
namespace descriptor = oc::descriptor;

// Staging of one body-delivered descriptor GET: kBodyBuffers x kBodyBufferBytes.
constexpr uint32_t kBodyBuffers = 4;
constexpr uint64_t kBodyBufferBytes = 1ull << 20;
// Longest wait of either side of a body pipe (the assembler for the socket, or back).
constexpr std::chrono::milliseconds kPipeTimeout{60'000};
// A body GET whose client took no byte for this long while another descriptor GET waits in
// the executor's admission queue gives its worker up and its connection is closed
// (HttpLayerSink::StallPolicy; docs/decisions/slow-body-readers.md): a stalled reader costs a
// waiting request about this per executor's worth of them, not the admission timeout. Far
// above the time a reading client needs to take one piece of the body (stream_piece_bytes,
// 256 KiB), so only a client that stopped, or takes less than a piece a second while others
// wait, loses its transfer.
constexpr std::chrono::milliseconds kStalledReaderStep{1'000};

uint64_t Micros(Clock::time_point since) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - since).count());
}

bool IsDescriptorHeader(std::string_view name) {
  return name.size() >= 5 && EqualsIgnoreCase(name.substr(0, 5), "x-oc-");
}

// The signing rule for descriptors (docs/protocol.md, "Signing"): a descriptor in a POST body
// must be covered by a signed request's signature like the x-oc-* headers it stands for, and a
// data-plane target, which tells the server where to write, needs an authenticated request.
Status CheckCovered(const Request& req, const descriptor::Descriptor& d) {
  if (req.user == nullptr) {
    if (d.target.has_value()) {
      return Status(Code::kPermissionDenied, Subject::kDescriptor, "x-oc-target-address",
                    "x-oc-target-address: a data-plane target needs an authenticated request");
    }
    return Status::Ok();
  }
  if (req.method == "POST" && !req.body_signed) {
    return Status(
        Code::kPermissionDenied, Subject::kSignature, "x-amz-content-sha256",
        "a descriptor POST body must be signed: x-amz-content-sha256 must be its SHA-256");
  }
  return Status::Ok();
}

// The descriptor of a GET (headers) or POST (body; then no x-oc-* header may be present),
// decoded for `purpose` (a probe ignores the target fields, a PUT requires x-oc-layout).
Result<descriptor::Descriptor> DecodeDescriptor(const Request& req, descriptor::Purpose purpose) {
  const descriptor::Limits limits;
  Result<descriptor::Descriptor> d = Status::Internal("unset");
  if (req.method == "POST") {
    for (const auto& [name, value] : req.headers) {
      if (IsDescriptorHeader(name)) {
        return Status(Code::kInvalidArgument, Subject::kDescriptor, std::string(name),
                      "a POST carries the descriptor in its body only");
      }
    }
    d = descriptor::DecodeBody(req.body, limits, purpose);
  } else {
    d = descriptor::DecodeHeaders(req.headers, limits, purpose);
  }
  if (!d.has_value()) {
    return d.error();
  }
  OC_RETURN_IF_ERROR(descriptor::Validate(*d, limits));
  OC_RETURN_IF_ERROR(CheckCovered(req, *d));
  if (d->request_id.empty()) {
    d->request_id = req.request_id;
  }
  if (d->target.has_value()) {
    // The data plane binds a connection to the first principal naming it (never from the
    // wire: docs/decisions/data-plane-who-connects-to-whom.md).
    d->target->principal = req.user != nullptr ? req.user->access_key : std::string();
  }
  return d;
}

void AddSummary(const descriptor::ResponseSummary& summary, Response* res) {
  for (auto& [name, value] : descriptor::EncodeResponse(summary)) {
    res->AddHeader(std::move(name), std::move(value));
  }
}

// GET /{bucket}?objectcache&data-plane: where a client's UCX connects to reach the data
// plane that serves this bucket (docs/protocol.md, "Data plane: connecting").
Response DataPlaneAddress(HandlerEnv& env, Request& req) {
  Result<storage::DataPlaneInfo> r = env.store->DataPlane(req.route.bucket);
  if (!r.has_value()) {
    return Response::FromStatus(r.error(), &req);
  }
  Response res;
  res.AddHeader("x-oc-version", "1");
  res.AddHeader("x-oc-data-plane-address", r->address);
  res.AddHeader("x-oc-data-plane-shm", r->shared_memory ? "1" : "0");
  return res;
}

Response Probe(HandlerEnv& env, Request& req, const descriptor::Descriptor& d) {
  Result<storage::KvProbeResult> r = env.store->ProbeChunks(req.route.bucket, d);
  if (!r.has_value()) {
    return Response::FromStatus(r.error(), &req);
  }
  Response res;
  res.content_type = "text/plain";
  res.AddHeader("x-oc-version", "1");
  res.AddHeader("x-oc-matched-chunks", std::to_string(r->matched));
  res.AddHeader("x-oc-request-id", d.request_id);
  res.body.reserve(r->sizes.size() * 8);
  for (const std::optional<uint64_t>& size : r->sizes) {
    res.body += size ? std::to_string(*size) : std::string("-");
    res.body.push_back('\n');
  }
  return res;
}

// A descriptor GET with a data-plane target: the Store writes the client's memory; the answer
// carries only headers, sent once the transfer ended. The transfer runs on the descriptor
// executor (after waiting in its admission queue if every worker is busy) and completes a
// deferred response, so no Store pool thread waits for it. The task may use `req`: the session
// that owns it is suspended on this very response until Complete.
Response GetIntoTarget(HandlerEnv& env, Request& req, const descriptor::Descriptor& d,
                       Clock::time_point start) {
  auto pending = std::make_shared<DeferredResponse>(env.deferred);
  storage::Store* store = env.store;
  Request* request = &req;
  const Status admitted = env.descriptors->Submit(
      [pending, store, request, d, start] {
        Result<storage::KvGetReport> r = store->GetLayers(request->route.bucket, d, nullptr, {});
        if (!r.has_value()) {
          pending->Complete(Response::FromStatus(r.error(), request));
          return;
        }
        descriptor::ResponseSummary s;
        s.matched_chunks = r->plan.matched;
        s.mode = r->plan.mode;
        s.request_id = d.request_id;
        s.storage_us = r->timings.read_us;
        s.transfer_us = r->timings.transfer_us;
        const uint64_t total = Micros(start);
        s.gateway_us = total > r->timings.total_us ? total - r->timings.total_us : 0;
        Response res;
        AddSummary(s, &res);
        res.AddHeader("x-oc-assigned-rate-gbps", fmt::format("{}", r->assigned_rate_gbps));
        pending->Complete(std::move(res));
      },
      [pending, request](const Status& expired) {
        pending->Complete(Response::FromStatus(expired, request));
      });
  if (!admitted.ok()) {
    return Response::FromStatus(admitted, &req);
  }
  Response res;
  res.deferred = std::move(pending);
  return res;
}

// A descriptor GET without a target: GetLayers runs on the descriptor executor into an
// HttpLayerSink whose body reader the session streams. The answer is deferred until the plan
// (or an error before any byte), so the status line and headers (matched chunks, mode,
// Content-Length) go out before the payload and no Store pool thread waits, also while the
// request waits in the admission queue; the sink's buffers are allocated only once a worker
// runs the task. Storage and transfer timings are not known when the headers are sent; only
// x-oc-gateway-us is. A reader that stops holds its worker only while no other descriptor GET
// waits for one: then, after kStalledReaderStep without a byte taken, the sink fails (GetLayers
// ends, the worker is free) and the connection is closed; otherwise at most kPipeTimeout per
// stalled step. One that disconnects frees it at once (the sink's kCancelled).
Response GetIntoBody(HandlerEnv& env, Request& req, const descriptor::Descriptor& d,
                     Clock::time_point start) {
  auto pending = std::make_shared<DeferredResponse>(env.deferred);
  storage::Store* store = env.store;
  Request* request = &req;
  BoundedExecutor* executor = env.descriptors;
  const Status admitted = env.descriptors->Submit(
      [pending, store, request, d, start, executor] {
        HttpLayerSink::StallPolicy stall;
        stall.step = kStalledReaderStep;
        stall.others_waiting = [executor] { return executor->queued() > 0; };
        stall.request_id = d.request_id;
        auto sink = std::make_shared<HttpLayerSink>(kBodyBuffers, kBodyBufferBytes, kPipeTimeout,
                                                    std::move(stall));
        bool answered = false;
        // `request` is used only until the answer is complete: the session owns it and resumes
        // once Complete ran.
        Result<storage::KvGetReport> r = store->GetLayers(
            request->route.bucket, d, sink.get(), [&](const storage::KvPlan& plan) {
              descriptor::ResponseSummary s;
              s.matched_chunks = plan.matched;
              s.mode = plan.mode;
              s.request_id = d.request_id;
              s.gateway_us = Micros(start);
              Response res;
              AddSummary(s, &res);
              res.content_type = "application/octet-stream";
              res.reader = sink->Body(plan.payload_bytes);  // keeps the sink alive
              res.on_stalled_reader = sink->StallHook();
              res.stream_length = plan.payload_bytes;
              answered = true;
              pending->Complete(std::move(res));
              return Status::Ok();
            });
        if (!answered) {
          pending->Complete(r.has_value()
                                ? Response::FromStatus(
                                      Status::Internal("descriptor GET ended unplanned"), request)
                                : Response::FromStatus(r.error(), request));
        }
      },
      [pending, request](const Status& expired) {
        pending->Complete(Response::FromStatus(expired, request));
      });
  if (!admitted.ok()) {
    return Response::FromStatus(admitted, &req);
  }
  Response res;
  res.deferred = std::move(pending);
  return res;
}

}  // namespace

Response HandleGetObjectCache(HandlerEnv& env, Request& req) {
  // Access was checked by Dispatch (kGetObjectCache reads, like GetObject).
  const Clock::time_point start = Clock::now();
  if (req.Query("data-plane")) {
    return DataPlaneAddress(env, req);
  }
  const bool probe = req.Query("probe").has_value();
  Result<descriptor::Descriptor> d =
      DecodeDescriptor(req, probe ? descriptor::Purpose::kProbe : descriptor::Purpose::kGet);
  if (!d.has_value()) {
    return Response::FromStatus(d.error(), &req);
  }
  if (probe) {
    return Probe(env, req, *d);
  }
  if (d->target) {
    return GetIntoTarget(env, req, *d, start);
  }
  return GetIntoBody(env, req, *d, start);
}

// ---------------------------------------------------------------------------------------
// PUT /{bucket}?objectcache: the session streams the body into the ObjectWriter returned
// here; it feeds a bounded pipe (chunk_pipe.h) that Store::PutChunks, a task on the descriptor
// executor, reads as its ChunkSource. Commit() closes the pipe and waits for PutChunks;
// destroying the writer without Commit abandons the body and waits for PutChunks to give up.

UploadStart OpenPutObjectCache(HandlerEnv& env, Request& req, uint64_t body_bytes) {
  UploadStart start;
  Result<descriptor::Descriptor> d = DecodeDescriptor(req, descriptor::Purpose::kPut);
  if (!d.has_value()) {
    start.error = Response::FromStatus(d.error(), &req);
    return start;
  }
  const uint64_t total = d->num_chunks() * d->num_layers * d->layer_bytes;
  const uint64_t expected = d->target ? 0 : total;
  if (body_bytes != expected) {
    start.error = Response::FromStatus(
        Status(Code::kInvalidArgument, Subject::kEntity, "Content-Length",
               fmt::format("body of {} bytes; {} chunks of {} layers x {} bytes need {}",
                           body_bytes, d->num_chunks(), d->num_layers, d->layer_bytes, expected)),
        &req);
    return start;
  }
  req.request_id = d->request_id;
  auto pipe = std::make_shared<ChunkPipe>(kPipeTimeout);
  // Written by the task before it reports to the pipe, read once the pipe closed.
  auto report = std::make_shared<storage::KvPutReport>();
  storage::Store* store = env.store;
  // Started at once or refused: a PUT waiting for a worker would hold the Store pool thread
  // that feeds its body.
  const Status admitted = env.descriptors->SubmitNow(
      [pipe, report, store, bucket = std::string(req.route.bucket), d = std::move(*d)] {
        Result<storage::KvPutReport> r =
            store->PutChunks(bucket, d, d.target ? nullptr : pipe.get());
        if (r.has_value()) {
          *report = std::move(*r);
        }
        pipe->Done(r.has_value() ? Status::Ok() : r.error());
      });
  if (!admitted.ok()) {
    start.error = Response::FromStatus(admitted, &req);  // nothing read, nothing stored
    return start;
  }
  start.writer = std::make_unique<ChunkPipeWriter>(std::move(pipe));
  start.kv_report = std::move(report);
  return start;
}

Response FinishPutObjectCache(HandlerEnv& /*env*/, Request& req, const UploadStart& start,
                              Result<storage::ObjectMeta> committed) {
  if (!committed.has_value()) {
    return Response::FromStatus(committed.error(), &req);
  }
  Response res;
  res.AddHeader("x-oc-version", "1");
  res.AddHeader("x-oc-request-id", req.request_id);
  // Create-if-absent (docs/protocol.md): the count in a header, each chunk's outcome in the
  // body, one line per chunk in descriptor order.
  if (start.kv_report != nullptr && !start.kv_report->existed.empty()) {
    uint64_t existing = 0;
    res.body.reserve(start.kv_report->existed.size() * sizeof("existing"));
    for (const bool existed : start.kv_report->existed) {
      existing += existed ? 1 : 0;
      res.body.append(existed ? "existing\n" : "written\n");
    }
    res.AddHeader("x-oc-existing-chunks", std::to_string(existing));
    res.content_type = "text/plain";
  }
  return res;
}

}  // namespace oc::gateway
