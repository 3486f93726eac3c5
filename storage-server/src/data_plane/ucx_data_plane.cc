#include "ucx_data_plane.h"

#include <cstring>
#include <vector>

#include <fmt/core.h>

#include "oc/common/log.h"
#include "ucx_layer_sink.h"

namespace oc::storage {
namespace {

const Logger kLog{"data_plane"};

// Worker addresses and packed rkeys larger than this are refused before UCX parses them
// (the descriptor's own limit, Limits::max_target_blob_bytes, is the same by default).
constexpr uint64_t kMaxTargetBlobBytes = 8ull << 10;
constexpr uint64_t kMinStagingBytes = 4ull << 10;
constexpr uint64_t kMaxStagingBytes = 1ull << 30;
constexpr uint32_t kMaxStagingBuffers = 1024;
// ucp_ep_rkey_unpack takes no length, so the server unpacks from a zero-padded copy: even a
// key that passes RkeyIsWhole cannot make UCX read past what the client sent.
constexpr size_t kRkeyPadding = 64;

// Walks a packed rkey the way UCX 1.13's ucp_rkey_pack lays it out: a 64-bit little-endian
// map of memory domains, one memory-type byte, then per domain in the map one length byte
// and that many bytes (anything after is an optional trailer). A key that runs out before
// the walk ends is truncated or not an rkey at all; refusing it here keeps UCX from parsing
// it (UCX checks none of this).
bool RkeyIsWhole(ByteSpan rkey) {
  constexpr size_t kFixed = sizeof(uint64_t) + 1;
  if (rkey.size() < kFixed) {
    return false;
  }
  uint64_t md_map = GetLittleEndian64(rkey.data());
  size_t at = kFixed;
  for (; md_map != 0; md_map &= md_map - 1) {
    if (at >= rkey.size()) {
      return false;
    }
    at += 1 + static_cast<size_t>(rkey[at]);
    if (at > rkey.size()) {
      return false;
    }
  }
  return true;
}

}  // namespace

Status DataPlaneOptions::Validate() const {
  if (max_endpoints == 0) {
    return Status::InvalidArgument("data_plane.max_endpoints", "must be positive");
  }
  if (staging_buffers == 0 || staging_buffers > kMaxStagingBuffers) {
    return Status::InvalidArgument("data_plane.staging_buffers",
                                   fmt::format("must be 1..{}", kMaxStagingBuffers));
  }
  if (staging_buffer_bytes < kMinStagingBytes || staging_buffer_bytes > kMaxStagingBytes) {
    return Status::InvalidArgument("data_plane.staging_buffer_bytes", "must be 4KiB..1GiB");
  }
  if (op_timeout.count() <= 0) {
    return Status::InvalidArgument("data_plane.op_timeout", "must be positive");
  }
  return Status::Ok();
}

struct UcxDataPlane::Remote {
  std::shared_ptr<Endpoint> endpoint;
  ucp_rkey_h rkey = nullptr;
};

Result<std::unique_ptr<UcxDataPlane>> UcxDataPlane::Create(const DataPlaneOptions& options) {
  OC_RETURN_IF_ERROR(options.Validate());
  std::unique_ptr<UcxDataPlane> plane(new UcxDataPlane(options));
  data_plane::WorkerOptions wopts;
  wopts.transports = options.transports;
  wopts.keepalive_interval = options.keepalive_interval;
  OC_ASSIGN_OR_RETURN(plane->worker_, data_plane::UcxWorker::Create(wopts));
  OC_ASSIGN_OR_RETURN(plane->pool_, StagingPool::Create(*plane->worker_, options.staging_buffers,
                                                        options.staging_buffer_bytes));
  plane->pinned_ = std::make_unique<ByteBudget>(uint64_t{options.staging_buffers} *
                                                options.staging_buffer_bytes);
  plane->endpoints_ = std::make_unique<EndpointCache>(*plane->worker_, options.max_endpoints);
  plane->worker_->Start();
  kLog.Info("data plane up transports={} staging_buffers={} staging_buffer_bytes={} ordering={}",
            options.transports.empty() ? "ucx-default" : options.transports,
            options.staging_buffers, options.staging_buffer_bytes,
            options.ordering == LayerOrdering::kFlush ? "flush" : "fence");
  return plane;
}

UcxDataPlane::~UcxDataPlane() {
  if (worker_ == nullptr) {
    return;
  }
  // Teardown order: callbacks touch the cache and the pool, so no callback may run once they
  // go. Stop progress; close the cached endpoints; destroy the worker, which completes (with
  // an error) every request still stuck on a vanished client, running its callback now; then
  // the cache and the pool; the context last, since the pool's memory is mapped with it.
  worker_->Stop();
  if (endpoints_ != nullptr) {
    endpoints_->Shutdown();
  }
  worker_->DestroyWorker();
  endpoints_.reset();
  pool_.reset();
  worker_.reset();
}

Result<UcxDataPlane::Remote> UcxDataPlane::Connect(const descriptor::DataPlaneTarget& target) {
  if (target.worker_address.empty() || target.worker_address.size() > kMaxTargetBlobBytes) {
    return Status::InvalidArgument("x-oc-target-worker",
                                   fmt::format("must be 1..{} bytes", kMaxTargetBlobBytes));
  }
  if (target.rkey.empty() || target.rkey.size() > kMaxTargetBlobBytes) {
    return Status::InvalidArgument("x-oc-target-rkey",
                                   fmt::format("must be 1..{} bytes", kMaxTargetBlobBytes));
  }
  uint64_t end = 0;
  if (target.length == 0 || __builtin_add_overflow(target.address, target.length, &end)) {
    return Status::InvalidArgument("x-oc-target-address", "address + length overflows");
  }
  if (!RkeyIsWhole(target.rkey)) {
    return Status::InvalidArgument("x-oc-target-rkey", "not a whole packed rkey");
  }
  Remote remote;
  OC_ASSIGN_OR_RETURN(remote.endpoint, endpoints_->Get(target.worker_address));
  if (remote.endpoint->failed()) {
    return Status::Unavailable("data-plane endpoint to the client failed");
  }
  std::vector<std::byte> padded(target.rkey.size() + kRkeyPadding);
  std::memcpy(padded.data(), target.rkey.data(), target.rkey.size());
  const ucs_status_t st = worker_->Call([&] {
    ucs_status_t unpacked = UCS_ERR_CONNECTION_RESET;
    (void)remote.endpoint->Post([&](ucp_ep_h ep) {
      unpacked = ucp_ep_rkey_unpack(ep, padded.data(), &remote.rkey);
      return UCS_STATUS_PTR(UCS_OK);
    });
    return unpacked;
  });
  if (remote.endpoint->failed()) {
    return Status::Unavailable("data-plane endpoint to the client failed");
  }
  if (st != UCS_OK) {
    return Status::InvalidArgument(
        "x-oc-target-rkey", std::string(data_plane::FromUcs(st, "ucp_ep_rkey_unpack").message()));
  }
  return remote;
}

Result<std::unique_ptr<LayerSink>> UcxDataPlane::OpenSink(
    const descriptor::DataPlaneTarget& target) {
  OC_ASSIGN_OR_RETURN(Remote remote, Connect(target));
  return std::unique_ptr<LayerSink>(
      new UcxLayerSink(*this, std::move(remote.endpoint), remote.rkey, target));
}

Result<StagingBuffer> UcxDataPlane::AcquireStaging() { return pool_->Acquire(options_.op_timeout); }

Status UcxDataPlane::ReadRemote(const descriptor::DataPlaneTarget& source, uint64_t src_offset,
                                const StagingBuffer& into, uint64_t length) {
  if (!pool_->Owns(into)) {
    return Status::InvalidArgument("", "staging buffer not lent by this data plane");
  }
  if (length == 0 || length > into.bytes().size() || src_offset > source.length ||
      length > source.length - src_offset) {
    return Status::OutOfRange(fmt::format("read [{}, +{}) outside the {}-byte source", src_offset,
                                          length, source.length));
  }
  OC_ASSIGN_OR_RETURN(Remote remote, Connect(source));
  data_plane::OpWaiter* waiter = data_plane::OpWaiter::New();
  ucp_request_param_t param{};
  param.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMH;
  param.cb.send = &data_plane::OpWaiter::OnComplete;
  param.user_data = waiter;
  param.memh = pool_->memh(into.slot());
  // Everything by value: after a timeout this function returns while the task may not have
  // run yet.
  worker_->Submit([endpoint = remote.endpoint, rkey = remote.rkey, dst = into.bytes().data(),
                   length, src = source.address + src_offset, waiter, param] {
    ucs_status_ptr_t sp = endpoint->Post(
        [&](ucp_ep_h ep) { return ucp_get_nbx(ep, dst, length, src, rkey, &param); });
    waiter->Posted(sp);
  });
  // A get is complete locally only when the bytes have arrived (no flush needed).
  const ucs_status_t st = waiter->WaitAndRelease(options_.op_timeout);
  if (st == UCS_ERR_TIMED_OUT) {
    // The get may still land later: keep its rkey alive rather than free it under UCX.
    kLog.Warn("remote read timed out bytes={}; its rkey is leaked", length);
    endpoints_->Fail(*remote.endpoint, "remote read timed out", /*close_now=*/true);
    return Status::Unavailable("data-plane read did not complete in time");
  }
  const ucp_rkey_h key = remote.rkey;
  worker_->Submit([key] { ucp_rkey_destroy(key); });
  if (st != UCS_OK) {
    endpoints_->Fail(*remote.endpoint, ucs_status_string(st), /*close_now=*/false);
  }
  return data_plane::FromUcs(st, "ucp_get_nbx");
}

}  // namespace oc::storage
