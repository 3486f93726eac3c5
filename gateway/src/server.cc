#include "oc/gateway/server.h"

#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "access.h"
#include "auth/credentials.h"
#include "auth/sigv4.h"
#include "handlers/handlers.h"
#include "metrics.h"
#include "oc/common/log.h"
#include "session.h"

namespace oc::gateway {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

const Logger kLog{"gateway"};

// How long shutdown waits for in-flight requests before closing what is left.
constexpr std::chrono::seconds kShutdownGrace{30};

Status FromAsio(const boost::system::error_code& ec, std::string_view what) {
  return Status::IOError(std::string(what) + ": " + ec.message());
}

auth::AuthOptions MakeAuthOptions(const GatewayOptions& options) {
  auth::AuthOptions auth;
  auth.region = options.region;
  // The session decodes every aws-chunked mode with AwsChunkedDecoder(AuthResult).
  auth.accept_unsigned_trailer = true;
  return auth;
}

class ServerImpl final : public Server {
 public:
  ServerImpl(const GatewayOptions& options, storage::Store* store, auth::Credentials creds)
      : options_(options),
        store_(store),
        creds_(std::move(creds)),
        authenticator_(creds_, MakeAuthOptions(options)),
        access_(options_, store),
        pool_(options.store_threads) {
    for (uint32_t i = 0; i < options_.io_threads; ++i) {
      iocs_.push_back(std::make_unique<asio::io_context>(1));
    }
    acceptor_.emplace(*iocs_[0]);
    env_.store = store_;
    env_.options = &options_;
    env_.access = &access_;
    env_.metrics = &metrics_;
    env_.effective_config_json = ToJson(options_);
    shared_.options = &options_;
    shared_.env = &env_;
    shared_.authenticator = &authenticator_;
    shared_.metrics = &metrics_;
    shared_.pool = &pool_;
    shared_.registry = &registry_;
    shared_.stopping = &stopping_;
  }

  ~ServerImpl() override { pool_.join(); }

  Status Init() {
    std::string host;
    uint16_t port = 0;
    OC_RETURN_IF_ERROR(SplitHostPort(options_.listen, "gateway.listen", &host, &port));
    boost::system::error_code ec;
    const asio::ip::address address = asio::ip::make_address(host, ec);
    if (ec) {
      return Status::InvalidArgument("gateway.listen", "not an IP address: " + host);
    }
    const tcp::endpoint endpoint(address, port);
    acceptor_->open(endpoint.protocol(), ec);
    if (!ec) {
      acceptor_->set_option(tcp::acceptor::reuse_address(true), ec);
    }
    if (!ec) {
      acceptor_->bind(endpoint, ec);
    }
    if (!ec) {
      acceptor_->listen(asio::socket_base::max_listen_connections, ec);
    }
    if (ec) {
      return FromAsio(ec, "cannot listen on " + options_.listen);
    }
    port_ = acceptor_->local_endpoint().port();
    if (!options_.tls_cert_file.empty()) {
      tls_.emplace(asio::ssl::context::tls_server);
      tls_->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                        asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                        asio::ssl::context::no_tlsv1_1);
      tls_->use_certificate_chain_file(options_.tls_cert_file, ec);
      if (ec) {
        return FromAsio(ec, "gateway.tls_cert_file " + options_.tls_cert_file);
      }
      tls_->use_private_key_file(options_.tls_key_file, asio::ssl::context::pem, ec);
      if (ec) {
        return FromAsio(ec, "gateway.tls_key_file " + options_.tls_key_file);
      }
      shared_.tls = &*tls_;
    }
    return Status::Ok();
  }

  uint16_t port() const override { return port_; }

  Status Run() override {
    std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards;
    std::vector<std::thread> threads;
    for (auto& ioc : iocs_) {
      guards.push_back(asio::make_work_guard(*ioc));
      threads.emplace_back([&ioc] { ioc->run(); });
    }
    asio::signal_set signals(*iocs_[0], SIGINT, SIGTERM);
    signals.async_wait([this](const boost::system::error_code& ec, int signal) {
      if (!ec) {
        kLog.Info("signal={} stopping", signal);
        Stop();
      }
    });
    asio::co_spawn(*iocs_[0], AcceptLoop(), asio::detached);
    kLog.Info("listening on {}:{} tls={} config={}",
              options_.listen.substr(0, options_.listen.rfind(':')), port_, tls_ ? "on" : "off",
              ToJson(options_));

    {
      std::unique_lock lock(stop_mu_);
      stop_cv_.wait(lock, [this] { return stop_requested_; });
    }
    // Stop accepting, close idle connections, let in-flight requests finish.
    stopping_ = true;
    asio::post(*iocs_[0], [this, &signals] {
      boost::system::error_code ec;
      acceptor_->close(ec);
      signals.cancel(ec);
    });
    const auto deadline = std::chrono::steady_clock::now() + kShutdownGrace;
    while (metrics_.open_connections() > 0 && std::chrono::steady_clock::now() < deadline) {
      registry_.CloseIdle();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (metrics_.open_connections() > 0) {
      kLog.Warn("shutdown grace over with {} connections open", metrics_.open_connections());
    }
    guards.clear();
    for (auto& ioc : iocs_) {
      ioc->stop();
    }
    for (auto& t : threads) {
      t.join();
    }
    pool_.join();
    kLog.Info("stopped");
    return Status::Ok();
  }

  void Stop() override {
    std::lock_guard lock(stop_mu_);
    stop_requested_ = true;
    stop_cv_.notify_all();
  }

 private:
  asio::awaitable<void> AcceptLoop() {
    size_t next = 0;
    for (;;) {
      boost::system::error_code ec;
      asio::io_context& ioc = *iocs_[next];
      next = (next + 1) % iocs_.size();
      tcp::socket socket =
          co_await acceptor_->async_accept(ioc, asio::redirect_error(asio::use_awaitable, ec));
      if (stopping_) {
        co_return;
      }
      if (ec) {
        if (ec == asio::error::operation_aborted) {
          co_return;
        }
        // EMFILE and friends: wait a little instead of spinning.
        kLog.Warn("accept failed: {}", ec.message());
        asio::steady_timer timer(*iocs_[0], std::chrono::milliseconds(50));
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        continue;
      }
      if (metrics_.open_connections() >= static_cast<int64_t>(options_.max_connections)) {
        metrics_.ConnectionRefused();
        socket.close(ec);
        continue;
      }
      // The session must be created on its own io_context's thread.
      asio::post(ioc, [this, &ioc, s = std::move(socket)]() mutable {
        StartSession(shared_, ioc, std::move(s));
      });
    }
  }

  const GatewayOptions options_;
  storage::Store* store_;
  auth::Credentials creds_;
  auth::Authenticator authenticator_;
  Metrics metrics_;
  Access access_;
  HandlerEnv env_;
  std::vector<std::unique_ptr<asio::io_context>> iocs_;
  asio::thread_pool pool_;
  std::optional<tcp::acceptor> acceptor_;
  std::optional<asio::ssl::context> tls_;
  ConnectionRegistry registry_;
  std::atomic<bool> stopping_{false};
  SessionShared shared_;
  uint16_t port_ = 0;

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_requested_ OC_GUARDED_BY(stop_mu_) = false;
};

}  // namespace

Result<std::unique_ptr<Server>> Server::Create(const GatewayOptions& options,
                                               storage::Store* store) {
  OC_RETURN_IF_ERROR(options.Validate());
  if (options.credentials_file.empty()) {
    return Status::InvalidArgument("gateway.credentials_file", "required");
  }
  OC_ASSIGN_OR_RETURN(auth::Credentials creds,
                      auth::Credentials::LoadFile(options.credentials_file));
  auto server = std::make_unique<ServerImpl>(options, store, std::move(creds));
  OC_RETURN_IF_ERROR(server->Init());
  return std::unique_ptr<Server>(std::move(server));
}

Result<CredentialsSetup> EnsureCredentialsFile(const std::string& path) {
  CredentialsSetup setup;
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    return setup;
  }
  const char* access = std::getenv("OC_ACCESS_KEY");
  const char* secret = std::getenv("OC_SECRET_KEY");
  auth::User user = auth::Credentials::Generate("admin");
  if (access != nullptr && secret != nullptr && *access != '\0' && *secret != '\0') {
    user.access_key = access;
    user.secret_key = secret;
  }
  user.admin = true;
  setup.access_key = user.access_key;
  setup.secret_key = user.secret_key;
  OC_ASSIGN_OR_RETURN(auth::Credentials creds, auth::Credentials::FromUsers({user}));
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) {
    std::filesystem::create_directories(parent, ec);
  }
  OC_RETURN_IF_ERROR(creds.SaveFile(path));
  setup.created = true;
  return setup;
}

}  // namespace oc::gateway
