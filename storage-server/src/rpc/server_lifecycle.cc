// Starting, accepting and shutting down (oc/storage/rpc_server.h): RpcServer's public
// methods and the acceptor of RpcServer::Impl (server_impl.h). Each accepted socket becomes
// a Connection (server_connection.h) on its own strand.
#include <csignal>
#include <exception>
#include <utility>

#include <fmt/core.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>

#include "oc/common/log.h"
#include "rpc/server_connection.h"
#include "rpc/server_impl.h"
#include "rpc/wire.h"

namespace oc::storage::rpc {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

const Logger kLog{"rpc"};

}  // namespace

bool RpcServer::Impl::Register(const std::shared_ptr<Connection>& c) {
  std::lock_guard<std::mutex> lock(mu);
  if (stopping_locked || connections.size() >= options.max_connections) {
    return false;
  }
  connections.insert(c);
  connections_active.fetch_add(1);
  connections_total.fetch_add(1);
  return true;
}

void RpcServer::Impl::Unregister(const std::shared_ptr<Connection>& c) {
  std::lock_guard<std::mutex> lock(mu);
  if (connections.erase(c) > 0) {
    connections_active.fetch_sub(1);
  }
}

asio::awaitable<void> RpcServer::Impl::Accept() {
  for (;;) {
    error_code ec;
    tcp::socket socket(asio::make_strand(io));
    co_await acceptor.async_accept(socket, Awaitable(ec));
    if (ec) {
      if (!acceptor.is_open() || stopping()) {
        co_return;
      }
      kLog.Warn("accept failed error={}", ec.message());
      continue;
    }
    auto conn =
        std::make_shared<Connection>(*this, std::move(socket), next_connection_id.fetch_add(1));
    const bool registered = Register(conn);
    auto log_exception = [](std::exception_ptr e) {
      if (e) {
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& ex) {
          kLog.Error("connection ended by exception what={}", ex.what());
        }
      }
    };
    asio::co_spawn(conn->executor(), conn->Watchdog(), log_exception);
    if (!registered) {
      asio::co_spawn(
          conn->executor(),
          conn->RefuseAndClose(Status::ResourceExhausted(
              "connections", stopping() ? "the server is shutting down" : "too many connections")),
          log_exception);
      continue;
    }
    asio::co_spawn(conn->executor(), conn->Run(), log_exception);
  }
}

void RpcServer::Impl::BeginShutdown() {
  std::vector<std::shared_ptr<Connection>> open;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (stopping_locked) {
      return;
    }
    stopping_locked = true;
    stopping_flag.store(true, std::memory_order_release);
    open.assign(connections.begin(), connections.end());
  }
  kLog.Info("shutting down: no new connections, draining open={}", open.size());
  asio::post(control, [this] {
    error_code ec;
    acceptor.close(ec);
    signals.cancel(ec);
  });
  for (const std::shared_ptr<Connection>& c : open) {
    asio::post(c->executor(), [c] { c->CloseIfIdle(); });
  }
}

// --- RpcServer ---

RpcServer::RpcServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RpcServer::~RpcServer() {
  Shutdown();
  Wait();
}

Result<std::unique_ptr<RpcServer>> RpcServer::Start(Store* store, const RpcServerOptions& options,
                                                    std::string secret) {
  OC_RETURN_IF_ERROR(options.Validate());
  if (secret.empty()) {
    return Status::InvalidArgument("secret", "the RPC shared secret must not be empty");
  }
  if (secret.size() > kMaxSecretBytes) {
    return Status::InvalidArgument("secret", fmt::format("longer than {} bytes", kMaxSecretBytes));
  }
  OC_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(options.listen, "rpc.listen"));
  auto impl = std::make_unique<Impl>(store, options, std::move(secret));
  error_code ec;
  tcp::resolver resolver(impl->io);
  const auto results =
      resolver.resolve(hp.host, std::to_string(hp.port),
                       tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || results.empty()) {
    return Status(Code::kIOError, Subject::kNone, "rpc.listen",
                  fmt::format("cannot resolve {}: {}", hp.host, ec.message()));
  }
  const tcp::endpoint endpoint = results.begin()->endpoint();
  tcp::acceptor& acceptor = impl->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) {
    acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  }
  if (!ec) {
    acceptor.bind(endpoint, ec);
  }
  if (!ec) {
    acceptor.listen(asio::socket_base::max_listen_connections, ec);
  }
  if (ec) {
    return Status(Code::kIOError, Subject::kNone, "rpc.listen",
                  fmt::format("cannot listen on {}: {}", options.listen, ec.message()));
  }
  impl->host = endpoint.address().to_string();
  impl->port = acceptor.local_endpoint(ec).port();
  Impl* raw = impl.get();
  asio::co_spawn(raw->control, raw->Accept(), asio::detached);
  const uint32_t io_threads = RpcIoThreadsFor(options.io_threads);
  for (uint32_t i = 0; i < io_threads; ++i) {
    raw->io_threads.emplace_back([raw] { raw->io.run(); });
  }
  return std::unique_ptr<RpcServer>(new RpcServer(std::move(impl)));
}

uint16_t RpcServer::port() const { return impl_->port; }

std::string RpcServer::endpoint() const {
  const bool v6 = impl_->host.find(':') != std::string::npos;
  return v6 ? fmt::format("[{}]:{}", impl_->host, impl_->port)
            : fmt::format("{}:{}", impl_->host, impl_->port);
}

void RpcServer::HandleSignals() {
  Impl* impl = impl_.get();
  // Registered now, so a signal from here on is queued for the wait posted below.
  error_code ec;
  impl->signals.add(SIGTERM, ec);
  impl->signals.add(SIGINT, ec);
  asio::post(impl->control, [impl] {
    impl->signals.async_wait([impl](const error_code& wait_ec, int signal) {
      if (!wait_ec) {
        kLog.Info("signal received signal={}", signal);
        impl->BeginShutdown();
      }
    });
  });
}

void RpcServer::Shutdown() { impl_->BeginShutdown(); }

void RpcServer::Wait() {
  std::call_once(impl_->joined, [this] {
    for (std::thread& t : impl_->io_threads) {
      t.join();
    }
    impl_->store_pool.join();
  });
}

std::vector<std::pair<std::string, uint64_t>> RpcServer::Figures() const {
  return impl_->Figures();
}

}  // namespace oc::storage::rpc
