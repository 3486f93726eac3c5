#pragma once
// EndpointCache: the server's UCX endpoints, one per client connection, keyed by the random
// 128-bit connection id the server issued (docs/protocol.md, "Data plane: connecting";
// docs/decisions/data-plane-who-connects-to-whom.md). Endpoints are created only from
// connection requests on the data plane's listener (Accept), never from bytes a client sent
// over HTTP; a descriptor names its connection by id (x-oc-target-connection) and Find()
// looks it up. A connection is usable once the client's hello arrived (OnHello): that records
// the client's owner token and this endpoint's view of the client's memory domains (for
// CheckRkey) and answers with the welcome carrying the id. The first principal that names a
// connection in a request owns it; another principal naming it is refused.
// Bounded: the least recently used connection is closed when a new one would exceed the
// capacity. An endpoint that fails is marked failed and dropped at once, so its id becomes
// unknown and the client connects again.
// Failure is found two ways, chosen per connection by the error-handling mode both ends
// derive (oc/ucx/transports.h, ErrorMode; docs/decisions/data-plane-vanished-client.md):
//  - UCX peer error handling (UCP_ERR_HANDLING_MODE_PEER + keepalive): UCX calls the error
//    handler and completes the endpoint's requests with an error (TCP, verbs).
//  - Without it (UCP_ERR_HANDLING_MODE_NONE: shared memory on one host), an operation that
//    errors or stalls past the sink's timeout fails the endpoint (Fail()), which
//    force-closes it; the stuck requests never complete, so the sink retires their staging
//    buffers. The connection manager still reports the client's disconnect through the
//    error handler.
// Requests hold their endpoint by shared_ptr: an endpoint dropped while a request still uses
// it is closed when the request lets go.
// Thread safety: every method may be called from any thread, except Accept and OnHello,
// which run on the worker's owning thread (UCX callbacks). The cache must outlive every
// Endpoint it handed out, and the UcxWorker must outlive the cache.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data_plane/rkey_check.h"
#include "oc/common/result.h"
#include "oc/common/thread_annotations.h"
#include "oc/descriptor/descriptor.h"
#include "oc/ucx/owner_token.h"
#include "oc/ucx/worker.h"

namespace oc::storage {

class EndpointCache;

class Endpoint {
 public:
  ~Endpoint();  // closes the UCX endpoint (forcibly if it failed)
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  const descriptor::ConnectionId& id() const { return id_; }
  // True if UCX watches the peer (UCP_ERR_HANDLING_MODE_PEER): its requests then complete,
  // with an error, when it fails or is force-closed.
  bool peer_error_handling() const { return peer_error_handling_; }
  // True once the endpoint failed (UCX error or timeout); it then carries no more traffic.
  bool failed() const { return failed_.load(std::memory_order_seq_cst); }
  // Set by the client's hello, before Find() can return the endpoint; constant afterwards.
  const ucx::OwnerToken& owner() const { return owner_; }
  const EndpointInfo& info() const { return info_; }

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
  Endpoint(EndpointCache* cache, const descriptor::ConnectionId& id) : cache_(cache), id_(id) {}
  void Close();  // once; force if failed. REQUIRES: no Post() can start a new operation

  EndpointCache* const cache_;
  const descriptor::ConnectionId id_;
  ucp_ep_h ep_ = nullptr;
  bool peer_error_handling_ = true;
  ucx::OwnerToken owner_{};
  EndpointInfo info_;
  std::atomic<bool> failed_{false};
  std::atomic<bool> closed_{false};
  // Guarded by the cache's mu_.
  bool welcomed_ = false;
  bool bound_ = false;     // `principal_` is set
  std::string principal_;  // the first principal that named the connection
};

class EndpointCache {
 public:
  // REQUIRES: capacity > 0; `worker` outlives the cache. `shared_memory`: this server's
  // transports allow shared memory (ErrorMode).
  EndpointCache(ucx::UcxWorker& worker, uint64_t capacity, bool shared_memory);
  ~EndpointCache();
  EndpointCache(const EndpointCache&) = delete;
  EndpointCache& operator=(const EndpointCache&) = delete;

  // Listener connection handler: creates the endpoint for `request` with the mode ErrorMode
  // derives from the client's announcement and address, under a fresh random id (OpenSSL
  // RAND_bytes), closing the least recently used connection beyond the capacity. A request
  // that cannot be served is rejected. REQUIRES: on the owning thread.
  void Accept(ucp_listener_h listener, ucp_conn_request_h request);

  // Hello active-message handler: records the client's owner token and endpoint info for the
  // endpoint `ep` the hello came on and sends the welcome with its id. A malformed or repeated
  // hello, or one for an endpoint without peer error handling whose lanes include TCP, fails
  // the endpoint instead. REQUIRES: on the owning thread.
  void OnHello(ucp_ep_h ep, ByteSpan header);

  // The welcomed connection `id`, bound to `principal` on first use. kInvalidArgument (field
  // x-oc-target-connection) if no such connection is open here (unknown, closed, evicted or
  // failed); kPermissionDenied (same field) if another principal named it first.
  Result<std::shared_ptr<Endpoint>> Find(const descriptor::ConnectionId& id,
                                         std::string_view principal);

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

  // Connections currently open (healthy, not yet evicted), welcomed or not.
  uint64_t size() const;
  // Endpoints dropped after a UCX error since the cache was created.
  uint64_t failures() const { return failures_.load(std::memory_order_relaxed); }

 private:
  friend class Endpoint;
  using Lru = std::list<std::shared_ptr<Endpoint>>;
  using Key = descriptor::ConnectionId;

  // UCX error handler (progress thread): marks the endpoint failed and drops it.
  static void OnEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status);
  void Forget(Endpoint* endpoint);  // from ~Endpoint
  // Posts ucp_ep_close_nbx on the owning thread (flush mode, or force), counted in
  // closes_in_flight_ until UCX completes it.
  void CloseUcxEndpoint(ucp_ep_h ep, bool force);
  // Destroys the endpoints dropped inside callbacks (outside any callback: UcxWorker::Defer).
  void ReleaseGraveyard();
  void DropLocked(const Key& key, std::vector<std::shared_ptr<Endpoint>>& out) OC_REQUIRES(mu_);

  ucx::UcxWorker& worker_;
  const uint64_t capacity_;
  const bool shared_memory_;
  std::atomic<bool> shut_down_{false};
  std::atomic<uint64_t> failures_{0};
  std::atomic<uint64_t> closes_in_flight_{0};  // ucp_ep_close_nbx posted, not completed

  mutable std::mutex mu_;
  Lru lru_ OC_GUARDED_BY(mu_);  // most recently used first
  std::map<Key, Lru::iterator> by_key_ OC_GUARDED_BY(mu_);
  // Every live Endpoint, cached or still held by a request, by UCX handle: how the error
  // and hello handlers find the one UCX names.
  std::unordered_map<ucp_ep_h, Endpoint*> by_ep_ OC_GUARDED_BY(mu_);
  // Endpoints dropped inside a UCX callback; destroyed later outside UCX callbacks, because
  // closing an endpoint from its own error callback is not allowed.
  std::vector<std::shared_ptr<Endpoint>> graveyard_ OC_GUARDED_BY(mu_);
};

}  // namespace oc::storage
