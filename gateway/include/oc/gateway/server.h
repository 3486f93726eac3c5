#pragma once
// Server: the S3 gateway (DESIGN: roles). HTTP/1.1 over Boost.Beast, one coroutine per
// connection on `io_threads` io_contexts, Store calls on a separate pool of `store_threads`,
// descriptor transfers on the store's descriptor executor (Store::descriptor_executor; GETs
// wait in its bounded admission queue, and a full queue, a GET still waiting at the admission
// timeout, or a PUT finding every worker busy is answered 503 SlowDown).
// It sees storage only through oc::storage::Store, so `objectcache serve` (OpenStore)
// and `oc-gateway` (ConnectRemoteStore) run the same code.
//
// Lifecycle: Create() binds the listening socket (so port() is known before Run); Run()
// serves until Stop() or SIGTERM/SIGINT, then stops accepting, closes idle connections,
// lets in-flight requests finish, and returns OK.
// Thread safety: Stop() and port() may be called from any thread; Run() from one.

#include <cstdint>
#include <memory>
#include <string>

#include "oc/common/result.h"
#include "oc/gateway/options.h"
#include "oc/storage/store.h"

namespace oc::gateway {

class Server {
 public:
  virtual ~Server() = default;

  // Loads the credentials file named in `options`, binds `options.listen`.
  // kInvalidArgument for bad options, kNotFound/kIOError for the credentials file, kIOError
  // if the address cannot be bound. REQUIRES: `store` outlives the server.
  static Result<std::unique_ptr<Server>> Create(const GatewayOptions& options,
                                                storage::Store* store);

  // The bound port (useful with port 0).
  virtual uint16_t port() const = 0;
  // Serves until stopped; returns OK after a clean shutdown.
  virtual Status Run() = 0;
  virtual void Stop() = 0;
};

// What EnsureCredentialsFile did, for the binary to print.
struct CredentialsSetup {
  bool created = false;
  std::string access_key;  // of the first user, when created
  std::string secret_key;  // of the first user, when created
};

// Creates `path` (mode 0600) with one admin user when it does not exist: its keys from
// OC_ACCESS_KEY / OC_SECRET_KEY when both are set in the environment, else random. An
// existing file is left alone. kIOError if it cannot be written.
Result<CredentialsSetup> EnsureCredentialsFile(const std::string& path);

}  // namespace oc::gateway
