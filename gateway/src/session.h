#pragma once
// One client connection: a coroutine that reads a request header, routes, authenticates,
// validates, streams the body, runs the handler on the Store pool, streams the response,
// and loops while the connection is kept alive (STYLE 3.6). Only the session files include
// Beast (session_impl.h: the class, and which file holds which seam).
// Thread safety: a session lives on one io_context (one thread); the registry
// (connection_registry.h) is shared.

#include <atomic>
#include <cstdint>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/thread_pool.hpp>

#include "auth/sigv4.h"
#include "connection_registry.h"
#include "handlers/handlers.h"
#include "metrics.h"
#include "oc/gateway/options.h"

namespace oc::gateway {

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

// Starts the session coroutine for an accepted socket on `ioc` (the socket's context). The
// caller has counted the connection open (Metrics::ConnectionOpened) when it accepted it, so
// the count includes sessions not started yet; the session counts it closed when it ends.
void StartSession(SessionShared& shared, boost::asio::io_context& ioc,
                  boost::asio::ip::tcp::socket socket);

}  // namespace oc::gateway
