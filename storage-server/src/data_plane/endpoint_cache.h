#pragma once
// EndpointCache: the server's UCX endpoints, one per client worker, keyed by the worker
// address bytes the client sent in its descriptor (docs/design.md, "Data plane": the server caches
// an endpoint per client worker). Bounded: the least recently used endpoint is dropped when
// a new one would exceed the capacity. An endpoint that fails is marked failed and dropped
// from the cache at once, so the next request from that worker address gets a fresh one.
// Failure is found two ways, chosen per endpoint (docs/decisions.md, "Data plane: noticing a
// vanished client"):
//  - UCX peer error handling (UCP_ERR_HANDLING_MODE_PEER + keepalive), tried first: UCX calls
//    the error handler and completes the endpoint's requests with an error. Used whenever the
//    transports allow it (TCP, verbs).
//  - Without it (UCP_ERR_HANDLING_MODE_NONE), when UCX refuses peer error handling for the
//    transports in use: UCX 1.13's shared-memory transports (posix, sysv) cannot do it. An
//    operation that errors or stalls past the sink's timeout then fails the endpoint
//    (Fail()), which force-closes it; the stuck requests never complete, so the sink retires
//    their staging buffers.
// Requests hold their endpoint by shared_ptr: an endpoint dropped while a request still uses
// it is closed when the request lets go.
// Thread safety: every method may be called from any thread. The cache must outlive every
// Endpoint it handed out, and the UcxWorker must outlive the cache.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "oc/common/result.h"
#include "oc/common/thread_annotations.h"
#include "ucx_core.h"

namespace oc::storage {

class EndpointCache;

class Endpoint {
 public:
  ~Endpoint();  // closes the UCX endpoint (forcibly if it failed)
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  // True if UCX watches the peer (UCP_ERR_HANDLING_MODE_PEER): its requests then complete,
  // with an error, when it fails or is force-closed.
  bool peer_error_handling() const { return peer_error_handling_; }
  // True once the endpoint failed (UCX error or timeout); it then carries no more traffic.
  bool failed() const { return failed_.load(std::memory_order_seq_cst); }

  // Posts one operation: returns post(ep), or an error status pointer without calling it if
  // the endpoint has failed or is closed. REQUIRES: on the worker's owning thread (inside
  // UcxWorker::Submit/Call or a callback), where the close also runs, so the two never
  // overlap.
  template <typename F>
  ucs_status_ptr_t Post(F&& post) {
    if (failed() || closed_.load(std::memory_order_acquire)) {
      return UCS_STATUS_PTR(UCS_ERR_CONNECTION_RESET);
    }
    return post(ep_);
  }

 private:
  friend class EndpointCache;
  Endpoint(EndpointCache* cache, std::string key) : cache_(cache), key_(std::move(key)) {}

  EndpointCache* const cache_;
  const std::string key_;  // the worker address bytes
  void Close();            // once; force if failed. REQUIRES: no Post() can start a new operation

  ucp_ep_h ep_ = nullptr;
  bool peer_error_handling_ = true;  // likewise
  std::atomic<bool> failed_{false};
  std::atomic<bool> closed_{false};
};

class EndpointCache {
 public:
  // REQUIRES: capacity > 0; `worker` outlives the cache.
  EndpointCache(data_plane::UcxWorker& worker, uint64_t capacity);
  ~EndpointCache();
  EndpointCache(const EndpointCache&) = delete;
  EndpointCache& operator=(const EndpointCache&) = delete;

  // The endpoint to the worker whose address is `worker_address`, created on first use.
  // kInvalidArgument (field x-oc-target-worker) if UCX refuses the address; a failed
  // endpoint is never returned.
  Result<std::shared_ptr<Endpoint>> Get(ByteSpan worker_address);

  // Marks `endpoint` failed and drops it from the cache. With `close_now`, also force-closes
  // it at once, so requests stuck on it complete as cancelled; not from a UCX callback
  // (close_now = false there; the endpoint is then closed when its last holder lets go).
  void Fail(Endpoint& endpoint, std::string_view reason, bool close_now);

  // For the owner's teardown, after UcxWorker::Stop() and before the worker is destroyed:
  // closes every cached endpoint (with a flush; a failed one by force) and progresses the
  // worker until every close issued since the cache was created has completed, or
  // `timeout`; false then. Endpoints released afterwards (by requests the worker's
  // destruction completes) skip their UCX close, since destroying the worker releases them.
  bool Shutdown(std::chrono::milliseconds timeout);

  bool shut_down() const { return shut_down_.load(); }

  // Endpoints currently cached (healthy, not yet evicted).
  uint64_t size() const;
  // Endpoints dropped after a UCX error since the cache was created.
  uint64_t failures() const { return failures_.load(std::memory_order_relaxed); }

 private:
  friend class Endpoint;
  using Lru = std::list<std::shared_ptr<Endpoint>>;

  // UCX error handler (progress thread): marks the endpoint failed and drops it.
  static void OnEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status);
  void Forget(Endpoint* endpoint);  // from ~Endpoint
  // Posts ucp_ep_close_nbx on the owning thread (flush mode, or force), counted in
  // closes_in_flight_ until UCX completes it.
  void CloseUcxEndpoint(ucp_ep_h ep, bool force);
  void DropLocked(const std::string& key, std::vector<std::shared_ptr<Endpoint>>& out)
      OC_REQUIRES(mu_);

  data_plane::UcxWorker& worker_;
  const uint64_t capacity_;
  std::atomic<bool> shut_down_{false};
  std::atomic<uint64_t> failures_{0};
  std::atomic<uint64_t> closes_in_flight_{0};  // ucp_ep_close_nbx posted, not completed

  mutable std::mutex mu_;
  Lru lru_ OC_GUARDED_BY(mu_);  // most recently used first
  std::unordered_map<std::string, Lru::iterator> by_key_ OC_GUARDED_BY(mu_);
  // Every live Endpoint, cached or still held by a request, by UCX handle: how the error
  // handler finds the one UCX names.
  std::unordered_map<ucp_ep_h, Endpoint*> by_ep_ OC_GUARDED_BY(mu_);
  // Endpoints dropped inside the error handler; destroyed later outside UCX callbacks,
  // because closing an endpoint from its own error callback is not allowed.
  std::vector<std::shared_ptr<Endpoint>> graveyard_ OC_GUARDED_BY(mu_);
};

}  // namespace oc::storage
