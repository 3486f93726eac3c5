#pragma once
// Helpers for the storage RPC tests: a real RocksDB store served by an in-process
// RpcServer on 127.0.0.1 (port chosen at bind time), and a remote store connected to it.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "oc/storage/open_store.h"
#include "oc/storage/remote_store.h"
#include "oc/storage/rpc_server.h"
#include "oc/storage/store.h"
#include "oc/testutil/testutil.h"
#include "store_test_util.h"

namespace oc::storage::test {

inline constexpr std::string_view kTestSecret = "rpc-test-secret";

// A local store in a temp dir and a server in front of it. Destroying it shuts the server
// down (draining) and then closes the store.
struct ServedStore {
  testutil::TempDir dir;
  std::unique_ptr<Store> local;
  std::unique_ptr<rpc::RpcServer> server;

  ~ServedStore() {
    server.reset();
    local.reset();
  }
};

// `kv`: the served store's KvOptions (the descriptor calls run in the server). With
// `rados_namespace` the served store is RADOS (that namespace of the test cluster,
// store_test_util.h), else RocksDB in a temp dir.
inline std::unique_ptr<ServedStore> Serve(rpc::RpcServerOptions options = {},
                                          KvOptions kv = KvOptions{},
                                          std::optional<std::string> rados_namespace = {}) {
  auto s = std::make_unique<ServedStore>();
  StoreOptions so;
  so.data_dir = (s->dir.path() / "db").string();
  so.block_cache_bytes = 64 << 20;
  so.read_threads = 2;
  so.kv = std::move(kv);
  Result<std::unique_ptr<Store>> local = rados_namespace.has_value()
                                             ? OpenTestStore(Backend::kRados, so, *rados_namespace)
                                             : OpenStore(so);
  EXPECT_TRUE(local.has_value()) << local.error();
  if (!local.has_value()) {
    return nullptr;
  }
  s->local = std::move(*local);
  options.listen = "127.0.0.1:0";
  options.io_threads = 2;
  options.store_threads = 4;
  Result<std::unique_ptr<rpc::RpcServer>> server =
      rpc::RpcServer::Start(s->local.get(), options, std::string(kTestSecret));
  EXPECT_TRUE(server.has_value()) << server.error();
  if (!server.has_value()) {
    return nullptr;
  }
  s->server = std::move(*server);
  return s;
}

inline std::unique_ptr<Store> Connect(const std::vector<std::string>& endpoints,
                                      std::string_view secret = kTestSecret) {
  RemoteStoreOptions o;
  o.endpoints = endpoints;
  o.secret = std::string(secret);
  o.max_idle_connections = 4;
  Result<std::unique_ptr<Store>> s = ConnectRemoteStore(o);
  EXPECT_TRUE(s.has_value()) << s.error();
  return s.has_value() ? std::move(*s) : nullptr;
}

inline uint64_t Figure(const StoreStats& stats, std::string_view name) {
  for (const auto& [n, v] : stats.figures) {
    if (n == name) {
      return v;
    }
  }
  ADD_FAILURE() << "no figure " << name;
  return 0;
}

}  // namespace oc::storage::test
