#include "oc/gateway/server.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
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
#include "deferred_response.h"
#include "handlers/handlers.h"
#include "lifecycle/lifecycle_configs.h"
#include "lifecycle/lifecycle_worker.h"
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
// After the grace, how long the connections still open get to unwind once closed; the process
// exits only after (destroying the io_contexts under a live session would free it twice).
constexpr std::chrono::seconds kShutdownCloseWait{5};
// After an accept failure, the acceptor waits before the next attempt: out of file descriptors,
// accepting again at once would fail again (and spin). Short when a connection was just shed
// (its descriptor is being closed on its own thread), longer when none could be.
constexpr std::chrono::milliseconds kAcceptRetryAfterShed{1};
constexpr std::chrono::milliseconds kAcceptRetryDelay{50};
// Descriptors kept for everything but client connections (the store's files, its RPC and
// data-plane sockets, logs) when the open-file limit caps the connection count.
constexpr uint64_t kReservedDescriptors = 256;
// At most one accept-failure warning per this interval; the others are counted into it.
constexpr std::chrono::seconds kAcceptWarnInterval{10};

// Raises the soft open-file limit to the hard one: every connection is a descriptor, and the
// soft default (often 1024) is below max_connections plus the store's own files. Returns the
// soft limit in force afterwards.
uint64_t RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return 0;
  }
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) {
      limit = raised;
    }
  }
  return limit.rlim_cur == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(limit.rlim_cur);
}

// Runs `ioc` until it stops. Nothing a client sends should throw, but a handler that did would
// otherwise end the process from io_context::run(); asio lets run() be called again after an
// exception, and the throwing operation's handler (a session's coroutine) is destroyed while
// the exception unwinds, which closes that connection alone.
void RunIoContext(asio::io_context& ioc) {
  for (;;) {
    try {
      ioc.run();
      return;
    } catch (const std::exception& e) {
      kLog.Error("an I/O handler threw, its connection is closed: {}", e.what());
    } catch (...) {
      kLog.Error("an I/O handler threw an unknown exception, its connection is closed");
    }
  }
}

Status FromAsio(const boost::system::error_code& ec, std::string_view what) {
  return Status::IOError(std::string(what) + ": " + ec.message());
}

auth::AuthOptions MakeAuthOptions(const GatewayOptions& options) {
  auth::AuthOptions auth;
  auth.region = options.region;
  // The session decodes every aws-chunked mode with AwsChunkedDecoder(AuthResult).
  auth.accept_unsigned_trailer = true;
  auth.virtual_host_domain = options.virtual_host_domain;
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
        lifecycle_(store),
        lifecycle_worker_(store, options.lifecycle),
        pool_(StoreThreadsFor(options.store_threads)) {
    const uint32_t io_threads = IoThreadsFor(options_.io_threads);
    for (uint32_t i = 0; i < io_threads; ++i) {
      iocs_.push_back(std::make_unique<asio::io_context>(1));
    }
    acceptor_.emplace(*iocs_[0]);
    env_.store = store_;
    env_.descriptors = store_->descriptor_executor();
    if (env_.descriptors == nullptr) {
      // A store that forwards descriptor calls (RemoteStore): the relaying runs on our own
      // executor, sized and queued like a store's default one.
      own_descriptors_ = std::make_unique<BoundedExecutor>(storage::DescriptorExecutorOptions(
          0, storage::kDefaultAdmissionQueue, storage::kDefaultAdmissionTimeout));
      env_.descriptors = own_descriptors_.get();
    }
    env_.deferred = &deferred_;
    env_.options = &options_;
    env_.access = &access_;
    env_.metrics = &metrics_;
    env_.effective_config_json = ToJson(options_);
    env_.lifecycle = &lifecycle_;
    env_.lifecycle_worker = &lifecycle_worker_;
    shared_.options = &options_;
    shared_.env = &env_;
    shared_.authenticator = &authenticator_;
    shared_.metrics = &metrics_;
    shared_.pool = &pool_;
    shared_.registry = &registry_;
    shared_.stopping = &stopping_;
  }

  // Descriptor tasks still running post their deferred responses to our io_contexts, and
  // those on our own executor use the store: wait for them before anything is torn down.
  ~ServerImpl() override {
    deferred_.WaitIdle();
    if (own_descriptors_ != nullptr) {
      own_descriptors_->Shutdown();
    }
    pool_.join();
  }

  Status Init() {
    // The connection limit must be reached before the descriptor limit, or accepts fail with
    // EMFILE instead of shedding idle connections: cap it below the open-file limit.
    const uint64_t open_files = RaiseOpenFileLimit();
    connection_limit_ = options_.max_connections;
    if (open_files < connection_limit_ + kReservedDescriptors) {
      connection_limit_ = open_files > 2 * kReservedDescriptors
                              ? open_files - kReservedDescriptors
                              : std::max<uint64_t>(open_files / 2, 1);
      kLog.Warn(
          "open-file limit {} is below max_connections {} + {} reserved: at most {} "
          "connections",
          open_files, options_.max_connections, kReservedDescriptors, connection_limit_);
    }
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
      threads.emplace_back([&ioc] { RunIoContext(*ioc); });
    }
    asio::signal_set signals(*iocs_[0], SIGINT, SIGTERM);
    signals.async_wait([this](const boost::system::error_code& ec, int signal) {
      if (!ec) {
        kLog.Info("signal={} stopping", signal);
        Stop();
      }
    });
    asio::co_spawn(*iocs_[0], AcceptLoop(), asio::detached);
    lifecycle_worker_.Start();
    kLog.Info("listening on {}:{} tls={} config={}",
              options_.listen.substr(0, options_.listen.rfind(':')), port_, tls_ ? "on" : "off",
              ToJson(options_));

    {
      std::unique_lock lock(stop_mu_);
      stop_cv_.wait(lock, [this] { return stop_requested_; });
    }
    // Stop accepting, close idle connections, let in-flight requests finish.
    stopping_ = true;
    lifecycle_worker_.Stop();
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
      kLog.Warn("shutdown grace over with {} connections open: closing them",
                metrics_.open_connections());
      registry_.CloseAll();
      const auto closed_by = std::chrono::steady_clock::now() + kShutdownCloseWait;
      while (metrics_.open_connections() > 0 && std::chrono::steady_clock::now() < closed_by) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
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
  // Accepts forever, spreading connections over the io_contexts. At max_connections, and when
  // out of descriptors, a connection still waiting for a request is shed to make room
  // (ConnectionRegistry::ShedOne; docs/decisions/gateway-hostile-http-input.md).
  asio::awaitable<void> AcceptLoop() {
    size_t next = 0;
    uint64_t failures_unreported = 0;
    auto next_warning = std::chrono::steady_clock::now();
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
        // EMFILE/ENFILE: the pending connection stays queued in the kernel. Free a descriptor
        // by shedding a connection that waits for a request, and retry after a pause (never a
        // spin); the warning is rate-limited, a flood must not flood the log.
        bool shed = false;
        if (ec == asio::error::no_descriptors || ec.value() == ENFILE) {
          shed = registry_.ShedOne();
          if (shed) {
            metrics_.ConnectionShed();
          }
        }
        ++failures_unreported;
        if (std::chrono::steady_clock::now() >= next_warning) {
          kLog.Warn("accept failed: {} (failures={})", ec.message(), failures_unreported);
          failures_unreported = 0;
          next_warning = std::chrono::steady_clock::now() + kAcceptWarnInterval;
        }
        asio::steady_timer timer(*iocs_[0], shed ? kAcceptRetryAfterShed : kAcceptRetryDelay);
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        continue;
      }
      if (metrics_.open_connections() >= static_cast<int64_t>(connection_limit_)) {
        if (registry_.ShedOne()) {
          metrics_.ConnectionShed();
        } else {
          metrics_.ConnectionRefused();
          socket.close(ec);
          continue;
        }
      }
      // Counted here, not when the session starts on its thread, so a burst of accepts sees
      // the connections it already admitted.
      metrics_.ConnectionOpened();
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
  LifecycleConfigs lifecycle_;
  LifecycleWorker lifecycle_worker_;  // started by Run, stopped before the store is let go
  HandlerEnv env_;
  std::vector<std::unique_ptr<asio::io_context>> iocs_;
  asio::thread_pool pool_;
  std::unique_ptr<BoundedExecutor> own_descriptors_;  // only in front of a remote store
  DeferredTracker deferred_;
  std::optional<tcp::acceptor> acceptor_;
  std::optional<asio::ssl::context> tls_;
  ConnectionRegistry registry_;
  std::atomic<bool> stopping_{false};
  SessionShared shared_;
  uint16_t port_ = 0;
  uint64_t connection_limit_ = 0;  // max_connections, or less under a low open-file limit

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
