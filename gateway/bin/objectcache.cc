// objectcache: the all-in-one binary. `objectcache serve` runs the S3 gateway over the
// in-process store: RocksDB in the data dir (the embedded default), or a Ceph RADOS pool
// with `[storage] backend = "rados"` (OpenStore, oc/storage/open_store.h). A store that
// cannot be opened for a configuration reason (no cluster, no pool) exits 2 with one line.
//   objectcache serve [--config FILE] [--data-dir DIR] [--listen HOST:PORT]
// Precedence: built-in defaults (the values conf/objectcache.toml lists) < --config file <
// flags. On first start the credentials file (<data dir>/credentials.toml unless
// gateway.credentials_file says otherwise) is created with one admin user whose keys come
// from OC_ACCESS_KEY/OC_SECRET_KEY or are generated.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <boost/program_options.hpp>

#include "oc/common/config.h"
#include "oc/gateway/options.h"
#include "oc/gateway/server.h"
#include "oc/sched/options.h"
#include "oc/storage/open_store.h"
#include "oc/storage/options.h"

namespace po = boost::program_options;

namespace {

int Fail(const oc::Status& status, int code = 1) {
  std::fprintf(stderr, "objectcache: %s\n", status.ToString().c_str());
  return code;
}

constexpr int kExitBadConfig = 2;

void PrintUsage(const po::options_description& flags) {
  std::cout << "Usage: objectcache serve [--config FILE] [--data-dir DIR] [--listen HOST:PORT]\n"
               "Runs the S3 gateway with the embedded store (data in ./data by default).\n"
               "OC_ACCESS_KEY / OC_SECRET_KEY set the first user's keys on first start.\n\n"
            << flags;
}

}  // namespace

int main(int argc, char** argv) {
  po::options_description flags("Options");
  flags.add_options()("help,h", "show this help")(
      "config", po::value<std::string>(), "TOML configuration file (conf/objectcache.toml)")(
      "data-dir", po::value<std::string>(), "data directory (storage.data_dir)")(
      "listen", po::value<std::string>(), "HOST:PORT to listen on (gateway.listen)")(
      "virtual-host-domain", po::value<std::string>(),
      "serve <bucket>.DOMAIN virtual-host requests (gateway.virtual_host_domain)");
  po::options_description hidden;
  hidden.add_options()("command", po::value<std::string>());
  po::options_description all;
  all.add(flags).add(hidden);
  po::positional_options_description positional;
  positional.add("command", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "objectcache: %s (see --help)\n", e.what());
    return 2;
  }
  if (vm.count("help") != 0 || vm.count("command") == 0) {
    PrintUsage(flags);
    return vm.count("help") != 0 ? 0 : 2;
  }
  if (vm["command"].as<std::string>() != "serve") {
    std::fprintf(stderr, "objectcache: unknown command '%s' (see --help)\n",
                 vm["command"].as<std::string>().c_str());
    return 2;
  }

  oc::Config config = oc::Config::Empty();
  if (vm.count("config") != 0) {
    oc::Result<oc::Config> loaded = oc::Config::LoadFile(vm["config"].as<std::string>());
    if (!loaded.has_value()) {
      return Fail(loaded.error());
    }
    config = std::move(*loaded);
  }
  oc::gateway::GatewayOptions gateway;
  oc::storage::StoreOptions store;
  if (oc::Status s = oc::gateway::ApplyConfig(config, &gateway); !s.ok()) {
    return Fail(s);
  }
  if (oc::Status s = oc::storage::ApplyConfig(config, &store); !s.ok()) {
    return Fail(s);
  }
  oc::sched::SchedulerOptions scheduler;
  if (oc::Status s = oc::sched::ApplyConfig(config, &scheduler); !s.ok()) {
    return Fail(s);
  }
  // The embedded store paces layerwise GetLayers under this table (storage-server/src/kv/pacing.h).
  store.kv.scheduler = std::make_shared<const oc::sched::SchedulerOptions>(std::move(scheduler));
  if (oc::Status s = config.CheckNoUnknownKeys(); !s.ok()) {
    return Fail(s);
  }
  if (vm.count("data-dir") != 0) {
    store.data_dir = vm["data-dir"].as<std::string>();
  }
  if (vm.count("listen") != 0) {
    gateway.listen = vm["listen"].as<std::string>();
  }
  if (vm.count("virtual-host-domain") != 0) {
    gateway.virtual_host_domain = vm["virtual-host-domain"].as<std::string>();
  }
  if (gateway.credentials_file.empty()) {
    gateway.credentials_file = store.data_dir + "/credentials.toml";
  }
  if (oc::Status s = store.Validate(); !s.ok()) {
    return Fail(s);
  }
  if (oc::Status s = gateway.Validate(); !s.ok()) {
    return Fail(s);
  }

  oc::Result<oc::gateway::CredentialsSetup> setup =
      oc::gateway::EnsureCredentialsFile(gateway.credentials_file);
  if (!setup.has_value()) {
    return Fail(setup.error());
  }
  oc::Result<std::unique_ptr<oc::storage::Store>> opened = oc::storage::OpenStore(store);
  if (!opened.has_value()) {
    return Fail(opened.error(),
                oc::storage::IsStoreConfigError(store, opened.error()) ? kExitBadConfig : 1);
  }
  oc::Result<std::unique_ptr<oc::gateway::Server>> server =
      oc::gateway::Server::Create(gateway, opened->get());
  if (!server.has_value()) {
    return Fail(server.error());
  }
  const std::string host = gateway.listen.substr(0, gateway.listen.rfind(':'));
  const std::string scheme = gateway.tls_cert_file.empty() ? "http" : "https";
  if (setup->created) {
    std::printf(
        "objectcache: created %s with a new admin user. Point aws-cli at this server with:\n"
        "  export AWS_ACCESS_KEY_ID=%s\n"
        "  export AWS_SECRET_ACCESS_KEY=%s\n"
        "  export AWS_DEFAULT_REGION=%s\n"
        "  aws --endpoint-url %s://%s:%u s3 ls\n",
        gateway.credentials_file.c_str(), setup->access_key.c_str(), setup->secret_key.c_str(),
        gateway.region.empty() ? "us-east-1" : gateway.region.c_str(), scheme.c_str(), host.c_str(),
        (*server)->port());
  } else {
    std::printf("objectcache: serving on %s://%s:%u (keys in %s)\n", scheme.c_str(), host.c_str(),
                (*server)->port(), gateway.credentials_file.c_str());
  }
  std::fflush(stdout);
  if (oc::Status s = (*server)->Run(); !s.ok()) {
    return Fail(s);
  }
  return 0;
}
