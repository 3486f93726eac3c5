// oc-gateway: the S3 gateway in front of one or more oc-storage-server daemons
// (DESIGN: roles). Stateless; the same gateway code as `objectcache serve`.
//   oc-gateway [--config FILE] --storage HOST:PORT[,HOST:PORT...] [--listen HOST:PORT]
// OC_RPC_SECRET is the storage RPC's shared secret. The credentials file is
// gateway.credentials_file, created on first start as `objectcache serve` does.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include <boost/program_options.hpp>

#include "oc/common/config.h"
#include "oc/gateway/options.h"
#include "oc/gateway/server.h"
#include "oc/storage/remote_store.h"

namespace po = boost::program_options;

namespace {

int Fail(const oc::Status& status) {
  std::fprintf(stderr, "oc-gateway: %s\n", status.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  po::options_description flags("Options");
  flags.add_options()("help,h", "show this help")("config", po::value<std::string>(),
                                                  "TOML configuration file (conf/gateway.toml)")(
      "storage", po::value<std::string>(), "HOST:PORT[,HOST:PORT...] of oc-storage-server(s)")(
      "listen", po::value<std::string>(), "HOST:PORT to listen on (gateway.listen)")(
      "virtual-host-domain", po::value<std::string>(),
      "serve <bucket>.DOMAIN virtual-host requests (gateway.virtual_host_domain)");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, flags), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oc-gateway: %s (see --help)\n", e.what());
    return 2;
  }
  if (vm.count("help") != 0) {
    std::cout << "Usage: oc-gateway [--config FILE] --storage HOST:PORT[,HOST:PORT...] "
                 "[--listen HOST:PORT] [--virtual-host-domain DOMAIN]\nOC_RPC_SECRET: the storage "
                 "RPC shared secret.\n\n"
              << flags;
    return 0;
  }
  if (vm.count("storage") == 0) {
    std::fprintf(stderr, "oc-gateway: --storage is required (see --help)\n");
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
  if (oc::Status s = oc::gateway::ApplyConfig(config, &gateway); !s.ok()) {
    return Fail(s);
  }
  if (oc::Status s = config.CheckNoUnknownKeys(); !s.ok()) {
    return Fail(s);
  }
  if (vm.count("listen") != 0) {
    gateway.listen = vm["listen"].as<std::string>();
  }
  if (vm.count("virtual-host-domain") != 0) {
    gateway.virtual_host_domain = vm["virtual-host-domain"].as<std::string>();
  }
  if (gateway.credentials_file.empty()) {
    gateway.credentials_file = "./credentials.toml";
  }
  oc::storage::RemoteStoreOptions remote;
  const std::string endpoints = vm["storage"].as<std::string>();
  for (size_t start = 0; start <= endpoints.size();) {
    const size_t comma = std::min(endpoints.find(',', start), endpoints.size());
    if (comma > start) {
      remote.endpoints.push_back(endpoints.substr(start, comma - start));
    }
    start = comma + 1;
  }
  if (const char* secret = std::getenv("OC_RPC_SECRET")) {
    remote.secret = secret;
  }
  if (oc::Status s = remote.Validate(); !s.ok()) {
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
  oc::Result<std::unique_ptr<oc::storage::Store>> store = oc::storage::ConnectRemoteStore(remote);
  if (!store.has_value()) {
    return Fail(store.error());
  }
  oc::Result<std::unique_ptr<oc::gateway::Server>> server =
      oc::gateway::Server::Create(gateway, store->get());
  if (!server.has_value()) {
    return Fail(server.error());
  }
  if (setup->created) {
    std::printf("oc-gateway: created %s; access key %s, secret key %s\n",
                gateway.credentials_file.c_str(), setup->access_key.c_str(),
                setup->secret_key.c_str());
  }
  std::printf("oc-gateway: serving on port %u\n", (*server)->port());
  std::fflush(stdout);
  if (oc::Status s = (*server)->Run(); !s.ok()) {
    return Fail(s);
  }
  return 0;
}
