// oc-storage-server: serves the local store (RocksDB, or a Ceph RADOS pool with
// `[storage] backend = "rados"`) over the storage RPC.
//
//   OC_RPC_SECRET=... oc-storage-server [--config FILE] [--data-dir DIR] [--listen HOST:PORT]
//
// Settings: built-in defaults < the TOML file ([storage] and [rpc] tables; every key with
// its default in conf/storage-server.toml) < flags. The effective settings are logged at
// start, then "listening on HOST:PORT" (also printed on stdout, so --listen 127.0.0.1:0
// can be used and the port read back). SIGTERM or SIGINT: stop accepting, finish the calls
// in flight, close the store (flushing it), exit 0. A bad setting, or a RADOS cluster or pool
// that cannot be reached, exits 2 with one line.

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include <boost/program_options.hpp>

#include "oc/common/config.h"
#include "oc/common/log.h"
#include "oc/common/units.h"
#include "oc/sched/options.h"
#include "oc/storage/open_store.h"
#include "oc/storage/options.h"
#include "oc/storage/rpc_server.h"

namespace {

namespace po = boost::program_options;
using oc::storage::rpc::RpcServer;
using oc::storage::rpc::RpcServerOptions;

const oc::Logger kLog{"storage-server"};

constexpr int kExitBadConfig = 2;
constexpr int kExitFailed = 1;

int Fail(int code, const std::string& line) {
  std::fprintf(stderr, "oc-storage-server: %s\n", line.c_str());
  return code;
}

struct Flags {
  std::string config;
  std::string data_dir;
  std::string listen;
};

// Parses argv; returns an exit code when the process should stop (help or a bad flag).
std::optional<int> ParseFlags(int argc, char** argv, Flags* flags) {
  po::options_description desc("oc-storage-server options");
  desc.add_options()("help,h", "print this help")("config", po::value(&flags->config),
                                                  "TOML config file ([storage] and [rpc] tables)")(
      "data-dir", po::value(&flags->data_dir), "RocksDB directory (overrides storage.data_dir)")(
      "listen", po::value(&flags->listen), "HOST:PORT to serve on (overrides rpc.listen)");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return Fail(kExitBadConfig, e.what());
  }
  if (vm.count("help") > 0) {
    std::cout << desc << "\nThe shared secret comes from the OC_RPC_SECRET environment variable.\n";
    return 0;
  }
  return std::nullopt;
}

int Run(int argc, char** argv) {
  Flags flags;
  if (std::optional<int> exit = ParseFlags(argc, argv, &flags)) {
    return *exit;
  }
  const char* secret_env = std::getenv("OC_RPC_SECRET");
  if (secret_env == nullptr || *secret_env == '\0') {
    return Fail(kExitBadConfig,
                "OC_RPC_SECRET is not set: refusing to serve without the shared RPC secret");
  }
  const std::string secret = secret_env;

  oc::Config config = oc::Config::Empty();
  if (!flags.config.empty()) {
    oc::Result<oc::Config> loaded = oc::Config::LoadFile(flags.config);
    if (!loaded.has_value()) {
      return Fail(kExitBadConfig, loaded.error().ToString());
    }
    config = std::move(*loaded);
  }
  oc::storage::StoreOptions store_options;
  RpcServerOptions rpc_options;
  // [scheduler]: layerwise GetLayers share its cap, paced (storage-server/src/kv/pacing.h).
  auto scheduler = std::make_shared<oc::sched::SchedulerOptions>();
  for (const oc::Status& st :
       {oc::storage::ApplyConfig(config, &store_options),
        oc::storage::rpc::ApplyConfig(config, &rpc_options),
        oc::sched::ApplyConfig(config, scheduler.get()), config.CheckNoUnknownKeys()}) {
    if (!st.ok()) {
      return Fail(kExitBadConfig, st.ToString());
    }
  }
  store_options.kv.scheduler = std::move(scheduler);
  if (!flags.data_dir.empty()) {
    store_options.data_dir = flags.data_dir;
  }
  if (!flags.listen.empty()) {
    rpc_options.listen = flags.listen;
  }
  for (const oc::Status& st : {store_options.Validate(), rpc_options.Validate()}) {
    if (!st.ok()) {
      return Fail(kExitBadConfig, st.ToString());
    }
  }
  kLog.Info("starting config={} {} {}", flags.config.empty() ? "(none)" : flags.config,
            oc::storage::DescribeStore(store_options), rpc_options.ToString());

  oc::Result<std::unique_ptr<oc::storage::Store>> store = oc::storage::OpenStore(store_options);
  if (!store.has_value()) {
    return Fail(oc::storage::IsStoreConfigError(store_options, store.error()) ? kExitBadConfig
                                                                              : kExitFailed,
                "cannot open the store: " + store.error().ToString());
  }
  oc::Result<std::unique_ptr<RpcServer>> server =
      RpcServer::Start(store->get(), rpc_options, secret);
  if (!server.has_value()) {
    return Fail(kExitFailed, "cannot start the RPC server: " + server.error().ToString());
  }
  (*server)->HandleSignals();
  kLog.Info("listening on {}", (*server)->endpoint());
  std::printf("oc-storage-server listening on %s\n", (*server)->endpoint().c_str());
  std::fflush(stdout);

  (*server)->Wait();  // returns after SIGTERM/SIGINT once the calls in flight are done
  server->reset();
  store->reset();  // closes RocksDB (flushes memtables, syncs) or the RADOS connection
  kLog.Info("stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }
