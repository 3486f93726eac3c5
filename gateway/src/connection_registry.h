#pragma once
// The live connections, as the server sees them: each session registers itself and reports
// where it is in its request cycle, so shutdown can close the idle ones (rgw's ConnectionList)
// and the acceptor can shed one at the connection limit
// (docs/decisions/gateway-hostile-http-input.md). Thread safety: the registry may be used from any
// thread; a session's state is written by its own thread only, and CloseIfIdle always runs there.

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>

#include <boost/asio/io_context.hpp>

#include "oc/common/thread_annotations.h"

namespace oc::gateway {

// Where a connection is in its request cycle: what the acceptor looks at when it must close
// one to admit another (GatewayOptions::max_connections).
enum class ConnectionState : uint8_t {
  kFresh,    // accepted (or in its TLS handshake); no request byte yet
  kHeader,   // part-way through a request line and header block
  kWaiting,  // kept alive after a request, waiting for the next one's first byte
  kBusy,     // a request header arrived; being served
};

class SessionBase {
 public:
  virtual ~SessionBase() = default;
  // Closes the connection if it is waiting for a request (shutdown, or shed at the connection
  // limit); true if it did. Called on the session's own io_context thread.
  virtual bool CloseIfIdle() = 0;
  // Closes the connection whatever it is doing (shutdown once its grace is over, or its
  // response's producer gave up on a client that stopped reading): its pending reads and writes
  // fail and its coroutine unwinds. Called on the session's own thread.
  virtual void CloseNow() = 0;
  // Written by the session's thread, read by the acceptor's.
  ConnectionState state() const { return state_.load(std::memory_order_relaxed); }

 protected:
  void set_state(ConnectionState state) { state_.store(state, std::memory_order_relaxed); }

 private:
  std::atomic<ConnectionState> state_{ConnectionState::kFresh};
};

// Live sessions, so shutdown can close the idle ones (rgw's ConnectionList) and the acceptor
// can shed one at the connection limit.
class ConnectionRegistry {
 public:
  void Add(uint64_t id, SessionBase* session, boost::asio::io_context* ioc);
  void Remove(uint64_t id);
  // Posts CloseIfIdle to every live session on its own thread.
  void CloseIdle();
  // Posts CloseNow to every live session on its own thread.
  void CloseAll();
  // Gives up one connection for a new one: the oldest kFresh, else the oldest kHeader, else the
  // oldest kWaiting, never one picked before; posts CloseIfIdle to it on its own thread.
  // Returns false when every connection is busy with a request.
  bool ShedOne();
  // Posts CloseNow to session `id` on its own thread, if it is still open then. Any thread.
  void PostClose(uint64_t id);

 private:
  struct Entry {
    SessionBase* session;
    boost::asio::io_context* ioc;
    bool shed = false;  // ShedOne picked it; its close is on the way
  };
  void PostCloseIfIdle(uint64_t id, boost::asio::io_context& ioc);
  // Posts CloseNow to session `id` on `ioc`, its thread. REQUIRES: mu_ held.
  void PostCloseNow(uint64_t id, boost::asio::io_context& ioc);

  std::mutex mu_;
  // By id, which grows with each accept: ascending order is oldest first.
  std::map<uint64_t, Entry> sessions_ OC_GUARDED_BY(mu_);
};

}  // namespace oc::gateway
