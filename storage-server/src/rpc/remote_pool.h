#pragma once
// The remote store's connections (docs/decisions/remote-store-placement-retry.md): an Endpoint is
// one storage server and its idle connections; a Lease is a connection checked out for one call.
// Private to oc_storage_rpc_client.
//
// Thread safety: Endpoint may be used from any thread (its idle list is guarded by mu_); a
// Lease belongs to one call on one thread.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "oc/common/result.h"
#include "oc/common/thread_annotations.h"
#include "rpc/client_conn.h"
#include "rpc/wire.h"

namespace oc::storage::rpc {

inline constexpr std::chrono::milliseconds kConnectTimeout{5'000};
// Generous: a call includes the server's store work (a synced commit, a large batch).
inline constexpr std::chrono::milliseconds kIoTimeout{120'000};

// How long shared placement skips a server after a call to it failed with kUnavailable
// before it tries it again (docs/decisions/remote-store-shared-placement.md).
inline constexpr std::chrono::milliseconds kEndpointRetryDelay{1'000};

// One storage server and its idle connections.
class Endpoint {
 public:
  Endpoint(HostPort address, std::string secret, uint32_t max_idle)
      : address_(std::move(address)), secret_(std::move(secret)), max_idle_(max_idle) {}

  const HostPort& address() const { return address_; }
  // "host:port", for messages.
  std::string name() const;

  // Shared placement's view of this server (remote_store.cc): whether it answered ServerInfo
  // with the shared RADOS target (kMember), with another (kForeign: never used), or not yet
  // (kUnknown: asked again before it is used), and until when it is skipped after a failure.
  enum class Membership : uint8_t { kUnknown, kMember, kForeign };
  Membership membership() const { return membership_.load(std::memory_order_acquire); }
  void set_membership(Membership m) { membership_.store(m, std::memory_order_release); }
  // False while the server is skipped after a failure.
  bool Available(std::chrono::steady_clock::time_point now) const {
    return now.time_since_epoch().count() >= skip_until_.load(std::memory_order_relaxed);
  }
  // Skips the server for kEndpointRetryDelay from `now`.
  void MarkDown(std::chrono::steady_clock::time_point now) {
    skip_until_.store((now + kEndpointRetryDelay).time_since_epoch().count(),
                      std::memory_order_relaxed);
  }

  // A connection for one call: an idle one that still looks alive, else a new one
  // (connect + Hello). `reused` tells whether it came from the pool.
  Result<std::unique_ptr<ClientConn>> Acquire(uint64_t request_id, bool* reused);

  // Takes a connection back after a call; broken ones and those above the cap are closed.
  void Release(std::unique_ptr<ClientConn> c);

 private:
  const HostPort address_;
  const std::string secret_;
  const uint32_t max_idle_;
  std::atomic<Membership> membership_{Membership::kUnknown};
  std::atomic<std::chrono::steady_clock::rep> skip_until_{0};
  std::mutex mu_;
  std::vector<std::unique_ptr<ClientConn>> idle_ OC_GUARDED_BY(mu_);
};

// A connection checked out for one call; returned to its endpoint on destruction when
// the call left it in a clean state, closed otherwise.
class Lease {
 public:
  Lease() = default;
  Lease(Endpoint* endpoint, std::unique_ptr<ClientConn> conn)
      : endpoint_(endpoint), conn_(std::move(conn)) {}
  Lease(Lease&&) = default;
  Lease& operator=(Lease&& other);
  ~Lease() { Return(); }

  ClientConn* operator->() { return conn_.get(); }
  ClientConn& conn() { return *conn_; }
  explicit operator bool() const { return conn_ != nullptr; }
  // The call completed and the stream is at a frame boundary: reusable.
  void MarkClean() { clean_ = true; }
  void MarkDirty() { clean_ = false; }
  // Gives the connection back now (if clean) or closes it.
  void Return();

 private:
  Endpoint* endpoint_ = nullptr;
  std::unique_ptr<ClientConn> conn_;
  bool clean_ = false;
};

}  // namespace oc::storage::rpc
