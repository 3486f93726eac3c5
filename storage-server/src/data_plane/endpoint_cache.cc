#include "data_plane/endpoint_cache.h"

#include <openssl/rand.h>

#include "oc/common/check.h"
#include "oc/common/log.h"
#include "oc/descriptor/data_plane_wire.h"
#include "oc/ucx/owner_token.h"
#include "oc/ucx/socket_address.h"
#include "oc/ucx/transports.h"

namespace oc::storage {
namespace {

const Logger kLog{"data_plane"};

constexpr std::string_view kConnectionField = "x-oc-target-connection";

}  // namespace

Endpoint::~Endpoint() {
  cache_->Forget(this);
  Close();
}

void Endpoint::Close() {
  if (ep_ == nullptr || closed_.exchange(true) || cache_->shut_down_.load()) {
    return;
  }
  // Non-blocking close: a healthy endpoint flushes first, a failed one is released at once
  // (with peer error handling its outstanding requests complete as cancelled). The close
  // request (if any) is freed at once and completes on the progress thread. A client that
  // closed first shows up as a failed endpoint here (the connection manager reports it), so
  // the server never flushes towards a peer that is gone: that flush is what UCX logged as
  // "error during flush: Endpoint timeout" (docs/decisions/data-plane-who-connects-to-whom.md).
  cache_->CloseUcxEndpoint(ep_, /*force=*/failed());
}

void EndpointCache::CloseUcxEndpoint(ucp_ep_h ep, bool force) {
  closes_in_flight_.fetch_add(1, std::memory_order_acq_rel);
  worker_.Submit([this, ep, force] {
    ucp_request_param_t param{};
    param.op_attr_mask =
        UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;  // 0: flush, then close
    param.cb.send = [](void* request, ucs_status_t, void* user_data) {
      static_cast<EndpointCache*>(user_data)->closes_in_flight_.fetch_sub(
          1, std::memory_order_acq_rel);
      ucp_request_free(request);
    };
    param.user_data = this;
    ucs_status_ptr_t sp = ucp_ep_close_nbx(ep, &param);
    if (!UCS_PTR_IS_PTR(sp)) {
      closes_in_flight_.fetch_sub(1, std::memory_order_acq_rel);  // closed at once
    }
  });
}

EndpointCache::EndpointCache(ucx::UcxWorker& worker, uint64_t capacity, bool shared_memory)
    : worker_(worker), capacity_(capacity), shared_memory_(shared_memory) {
  OC_CHECK(capacity > 0);
}

bool EndpointCache::Shutdown(std::chrono::milliseconds timeout) {
  Lru lru;
  std::vector<std::shared_ptr<Endpoint>> graveyard;
  {
    std::lock_guard<std::mutex> lock(mu_);
    lru.swap(lru_);
    by_key_.clear();
    graveyard.swap(graveyard_);
  }
  lru.clear();  // closes every endpoint no request holds: flush, or force if it failed
  graveyard.clear();
  // The closes run here (the owner stopped the worker's thread); each one sends what is
  // pending on its lanes before the endpoint goes, so the worker can be destroyed after.
  const bool closed =
      worker_.ProgressUntil([&] { return closes_in_flight_.load(std::memory_order_acquire) == 0; },
                            std::chrono::steady_clock::now() + timeout);
  if (!closed) {
    kLog.Warn("{} endpoint closes still in flight at shutdown", closes_in_flight_.load());
  }
  shut_down_.store(true);
  return closed;
}

EndpointCache::~EndpointCache() {
  Lru lru;
  std::vector<std::shared_ptr<Endpoint>> graveyard;
  {
    std::lock_guard<std::mutex> lock(mu_);
    lru.swap(lru_);
    by_key_.clear();
    graveyard.swap(graveyard_);
  }
  lru.clear();  // closes every endpoint no request holds
  graveyard.clear();
}

void EndpointCache::Accept(ucp_listener_h listener, ucp_conn_request_h request) {
  ucp_conn_request_attr_t attr{};
  attr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ID | UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
  descriptor::ConnectionId id{};
  if (shut_down_.load() || ucp_conn_request_query(request, &attr) != UCS_OK ||
      RAND_bytes(reinterpret_cast<unsigned char*>(id.data()), static_cast<int>(id.size())) != 1) {
    kLog.Warn("data-plane connection request rejected");
    (void)ucp_listener_reject(listener, request);
    return;
  }
  const ucp_err_handling_mode_t mode =
      ucx::ErrorMode((attr.client_id & descriptor::kClientIdSharedMemory) != 0, shared_memory_,
                     ucx::IsLoopback(reinterpret_cast<const sockaddr*>(&attr.client_address)));
  std::shared_ptr<Endpoint> endpoint(new Endpoint(this, id));
  endpoint->peer_error_handling_ = mode == UCP_ERR_HANDLING_MODE_PEER;
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.conn_request = request;
  params.err_mode = mode;
  params.err_handler.cb = &EndpointCache::OnEndpointError;
  params.err_handler.arg = this;
  ucp_ep_h ep = nullptr;
  const ucs_status_t st = ucp_ep_create(worker_.worker(), &params, &ep);
  if (st != UCS_OK) {
    kLog.Warn("data-plane connection not accepted: ucp_ep_create: {}", ucs_status_string(st));
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    endpoint->ep_ = ep;
    by_ep_[ep] = endpoint.get();
    lru_.push_front(std::move(endpoint));
    by_key_[id] = lru_.begin();
    while (lru_.size() > capacity_) {
      DropLocked(lru_.back()->id_, graveyard_);  // closed outside this callback
    }
  }
  worker_.Defer([this] { ReleaseGraveyard(); });
  kLog.Debug("data-plane connection accepted peer_error_handling={}",
             mode == UCP_ERR_HANDLING_MODE_PEER);
}

void EndpointCache::OnHello(ucp_ep_h ep, ByteSpan header) {
  Result<ucx::OwnerSecret> secret = descriptor::DecodeHello(header);
  descriptor::ConnectionId id{};
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto found = by_ep_.find(ep);
    if (found == by_ep_.end()) {
      return;  // closed meanwhile, or not ours
    }
    Endpoint& endpoint = *found->second;
    Status refused;
    if (!secret.has_value()) {
      refused = secret.error();
    } else if (endpoint.welcomed_ || endpoint.failed()) {
      refused = Status::Corruption("a second hello on one connection");
    } else {
      endpoint.info_ = QueryEndpointInfo(ep);
      if (!endpoint.peer_error_handling_ && endpoint.info_.tcp_lane) {
        // UCX 1.13 without peer error handling over TCP crashed after the peer went away
        // (docs/decisions/data-plane-vanished-client.md): the two ends disagree
        // about their transports, so the connection is refused rather than used.
        refused = Status::FailedPrecondition(
            Subject::kNone,
            "the client announced shared memory but the connection uses TCP; configure the "
            "same transports on both ends");
      }
    }
    if (!refused.ok()) {
      kLog.Warn("data-plane hello refused: {}", refused.ToString());
      if (!endpoint.failed_.exchange(true)) {
        failures_.fetch_add(1, std::memory_order_relaxed);
      }
      DropLocked(endpoint.id_, graveyard_);
    } else {
      endpoint.owner_ = ucx::MakeOwnerToken(*secret);
      endpoint.welcomed_ = true;
      id = endpoint.id_;
    }
    if (!refused.ok()) {
      worker_.Defer([this] { ReleaseGraveyard(); });
      return;
    }
  }
  auto* welcome =
      new std::array<std::byte, descriptor::kWelcomeBytes>(descriptor::EncodeWelcome(id));
  ucp_request_param_t param{};
  param.op_attr_mask =
      UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.flags = UCP_AM_SEND_FLAG_REPLY;
  param.cb.send = [](void* request, ucs_status_t, void* user_data) {
    delete static_cast<std::array<std::byte, descriptor::kWelcomeBytes>*>(user_data);
    ucp_request_free(request);
  };
  param.user_data = welcome;
  ucs_status_ptr_t sp = ucp_am_send_nbx(ep, descriptor::kWelcomeAmId, welcome->data(),
                                        welcome->size(), nullptr, 0, &param);
  if (!UCS_PTR_IS_PTR(sp)) {
    delete welcome;  // sent (or failed) at once; the callback does not run
  }
}

void EndpointCache::ReleaseGraveyard() {
  std::vector<std::shared_ptr<Endpoint>> doomed;  // destroyed after the lock is released
  std::lock_guard<std::mutex> lock(mu_);
  doomed.swap(graveyard_);
}

Result<std::shared_ptr<Endpoint>> EndpointCache::Find(const descriptor::ConnectionId& id,
                                                      std::string_view principal) {
  std::vector<std::shared_ptr<Endpoint>> doomed;  // destroyed after the lock is released
  std::lock_guard<std::mutex> lock(mu_);
  doomed.swap(graveyard_);
  auto it = by_key_.find(id);
  if (it == by_key_.end() || !(*it->second)->welcomed_ || (*it->second)->failed()) {
    return Status::InvalidArgument(
        std::string(kConnectionField),
        "no such data-plane connection here (unknown, closed or failed): connect again");
  }
  Endpoint& endpoint = **it->second;
  if (!endpoint.bound_) {
    endpoint.bound_ = true;
    endpoint.principal_ = std::string(principal);
  } else if (endpoint.principal_ != principal) {
    return Status(Code::kPermissionDenied, Subject::kNone, std::string(kConnectionField),
                  "the data-plane connection belongs to another principal");
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  return *lru_.begin();
}

uint64_t EndpointCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}

void EndpointCache::OnEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status) {
  auto* self = static_cast<EndpointCache*>(arg);
  {
    std::lock_guard<std::mutex> lock(self->mu_);
    auto found = self->by_ep_.find(ep);
    if (found == self->by_ep_.end()) {
      return;  // closed and forgotten already
    }
    Endpoint* endpoint = found->second;
    if (!endpoint->failed_.exchange(true, std::memory_order_acq_rel)) {
      self->failures_.fetch_add(1, std::memory_order_relaxed);
      // A client closing its connection is reported as a reset: the ordinary end of one.
      if (status == UCS_ERR_CONNECTION_RESET) {
        kLog.Info("data-plane connection closed by the client");
      } else {
        kLog.Warn("endpoint failed status={}; dropped from cache", ucs_status_string(status));
      }
    }
    auto it = self->by_key_.find(endpoint->id_);
    if (it != self->by_key_.end() && it->second->get() == endpoint) {
      self->DropLocked(endpoint->id_, self->graveyard_);
    }
  }
  // Force-closed once outside this callback (closing an endpoint from its own error callback
  // is not allowed).
  self->worker_.Defer([self] { self->ReleaseGraveyard(); });
}

void EndpointCache::Fail(Endpoint& endpoint, std::string_view reason, bool close_now) {
  std::vector<std::shared_ptr<Endpoint>> doomed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!endpoint.failed_.exchange(true, std::memory_order_seq_cst)) {
      failures_.fetch_add(1, std::memory_order_relaxed);
      kLog.Warn("endpoint failed: {}; dropped from cache", reason);
    }
    auto it = by_key_.find(endpoint.id_);
    if (it != by_key_.end() && it->second->get() == &endpoint) {
      DropLocked(endpoint.id_, close_now ? doomed : graveyard_);
    }
  }
  if (close_now) {
    endpoint.Close();
  }
  doomed.clear();
}

void EndpointCache::Forget(Endpoint* endpoint) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_ep_.find(endpoint->ep_);
  if (it != by_ep_.end() && it->second == endpoint) {
    by_ep_.erase(it);
  }
}

void EndpointCache::DropLocked(const Key& key, std::vector<std::shared_ptr<Endpoint>>& out) {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) {
    return;
  }
  out.push_back(std::move(*it->second));
  lru_.erase(it->second);
  by_key_.erase(it);
}

}  // namespace oc::storage
