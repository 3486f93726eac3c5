#pragma once
// One client connection: a coroutine that reads a request header, routes, authenticates,
// validates, streams the body, runs the handler on the Store pool, streams the response,
// and loops while the connection is kept alive (STYLE 3.6). Only session.cc includes Beast.
// Thread safety: a session lives on one io_context (one thread); the registry is shared.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/thread_pool.hpp>

#include "auth/sigv4.h"
#include "handlers/handlers.h"
#include "metrics.h"
#include "oc/common/thread_annotations.h"
#include "oc/gateway/options.h"

namespace oc::gateway {

class SessionBase {
 public:
  virtual ~SessionBase() = default;
  // Closes the connection if it is waiting for a request (shutdown). Called on the
  // session's own io_context thread.
  virtual void CloseIfIdle() = 0;
};

// Live sessions, so shutdown can close the idle ones (rgw's ConnectionList).
class ConnectionRegistry {
 public:
  void Add(uint64_t id, SessionBase* session, boost::asio::io_context* ioc);
  void Remove(uint64_t id);
  // Posts CloseIfIdle to every live session on its own thread.
  void CloseIdle();

 private:
  struct Entry {
    SessionBase* session;
    boost::asio::io_context* ioc;
  };
  std::mutex mu_;
  std::unordered_map<uint64_t, Entry> sessions_ OC_GUARDED_BY(mu_);
};

// What every session shares; owned by the server, outlives every session.
struct SessionShared {
  const GatewayOptions* options = nullptr;
  HandlerEnv* env = nullptr;
  const auth::Authenticator* authenticator = nullptr;
  Metrics* metrics = nullptr;
  boost::asio::thread_pool* pool = nullptr;
  boost::asio::ssl::context* tls = nullptr;  // nullptr: plain HTTP
  ConnectionRegistry* registry = nullptr;
  std::atomic<bool>* stopping = nullptr;
};

// Starts the session coroutine for an accepted socket on `ioc` (the socket's context).
void StartSession(SessionShared& shared, boost::asio::io_context& ioc,
                  boost::asio::ip::tcp::socket socket);

}  // namespace oc::gateway
