#include "endpoint_cache.h"

#include "oc/common/check.h"
#include "oc/common/log.h"

namespace oc::storage {
namespace {

const Logger kLog{"data_plane"};

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
  // request (if any) is freed at once and completes on the progress thread.
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

EndpointCache::EndpointCache(data_plane::UcxWorker& worker, uint64_t capacity)
    : worker_(worker), capacity_(capacity) {
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

Result<std::shared_ptr<Endpoint>> EndpointCache::Get(ByteSpan worker_address) {
  std::string key(AsText(worker_address));
  std::vector<std::shared_ptr<Endpoint>> doomed;  // destroyed after the lock is released
  {
    std::lock_guard<std::mutex> lock(mu_);
    doomed.swap(graveyard_);
    auto it = by_key_.find(key);
    if (it != by_key_.end()) {
      if (!(*it->second)->failed()) {
        lru_.splice(lru_.begin(), lru_, it->second);
        return *lru_.begin();
      }
      DropLocked(key, doomed);
    }
  }
  doomed.clear();

  // Create without holding mu_: Call waits for the owning thread, whose error handler takes
  // mu_.
  std::shared_ptr<Endpoint> endpoint(new Endpoint(this, key));
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.address = reinterpret_cast<const ucp_address_t*>(worker_address.data());
  params.err_handler.cb = &EndpointCache::OnEndpointError;
  params.err_handler.arg = this;
  // Created and registered on the owning thread, where the error handler also runs, so no
  // error can arrive for an endpoint the cache does not know yet.
  const ucs_status_t st = worker_.Call([&] {
    ucp_ep_h ep = nullptr;
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ucs_status_t created = ucp_ep_create(worker_.worker(), &params, &ep);
    if (created == UCS_ERR_UNREACHABLE) {
      // No transport to this peer can report peer failure (UCX 1.13 shared memory).
      params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
      created = ucp_ep_create(worker_.worker(), &params, &ep);
      endpoint->peer_error_handling_ = false;
    }
    if (created == UCS_OK) {
      std::lock_guard<std::mutex> lock(mu_);
      endpoint->ep_ = ep;
      by_ep_[ep] = endpoint.get();
    }
    return created;
  });
  if (st != UCS_OK) {
    Status s = data_plane::FromUcs(st, "ucp_ep_create");
    return Status::InvalidArgument("x-oc-target-worker", std::string(s.message()));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_key_.find(key);
    if (it != by_key_.end()) {
      // Another request created one meanwhile: keep ours for this request only.
      return endpoint;
    }
    lru_.push_front(endpoint);
    by_key_[key] = lru_.begin();
    while (lru_.size() > capacity_) {
      DropLocked(lru_.back()->key_, doomed);
    }
  }
  doomed.clear();
  return endpoint;
}

uint64_t EndpointCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}

void EndpointCache::OnEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status) {
  auto* self = static_cast<EndpointCache*>(arg);
  std::lock_guard<std::mutex> lock(self->mu_);
  auto found = self->by_ep_.find(ep);
  if (found == self->by_ep_.end()) {
    return;  // closed and forgotten already
  }
  Endpoint* endpoint = found->second;
  if (!endpoint->failed_.exchange(true, std::memory_order_acq_rel)) {
    self->failures_.fetch_add(1, std::memory_order_relaxed);
    kLog.Warn("endpoint failed status={}; dropped from cache", ucs_status_string(status));
  }
  auto it = self->by_key_.find(endpoint->key_);
  if (it != self->by_key_.end() && it->second->get() == endpoint) {
    self->DropLocked(endpoint->key_, self->graveyard_);
  }
}

void EndpointCache::Fail(Endpoint& endpoint, std::string_view reason, bool close_now) {
  std::vector<std::shared_ptr<Endpoint>> doomed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!endpoint.failed_.exchange(true, std::memory_order_seq_cst)) {
      failures_.fetch_add(1, std::memory_order_relaxed);
      kLog.Warn("endpoint failed: {}; dropped from cache", reason);
    }
    auto it = by_key_.find(endpoint.key_);
    if (it != by_key_.end() && it->second->get() == &endpoint) {
      DropLocked(endpoint.key_, close_now ? doomed : graveyard_);
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

void EndpointCache::DropLocked(const std::string& key,
                               std::vector<std::shared_ptr<Endpoint>>& out) {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) {
    return;
  }
  out.push_back(std::move(*it->second));
  lru_.erase(it->second);
  by_key_.erase(it);
}

}  // namespace oc::storage
