#pragma once
// One store fixture over every way the gateway may reach a store: RocksDB in process, over the
// RPC (one and two servers), RADOS in process and over the RPC. A suite derives from
// ServedStoreTest and instantiates over the Served values it needs, named by ServedName; the
// bucket "bkt" exists.

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rpc_test_util.h"

namespace oc::storage::test {

enum class Served { kLocal, kRemote, kRemoteTwoServers, kRados, kRemoteRados };

inline std::string ServedName(const ::testing::TestParamInfo<Served>& info) {
  switch (info.param) {
    case Served::kLocal:
      return "Local";
    case Served::kRemote:
      return "Remote";
    case Served::kRemoteTwoServers:
      return "RemoteTwoServers";
    case Served::kRados:
      return "Rados";
    case Served::kRemoteRados:
      return "RemoteRados";
  }
  return "?";
}

class ServedStoreTest : public ::testing::TestWithParam<Served> {
 protected:
  void SetUp() override {
    const bool rados = GetParam() == Served::kRados || GetParam() == Served::kRemoteRados;
    servers_.push_back(
        Serve({}, KvOptions{},
              rados ? std::optional<std::string>(RandomRadosNamespace()) : std::nullopt));
    ASSERT_NE(servers_[0], nullptr);
    if (GetParam() == Served::kLocal || GetParam() == Served::kRados) {
      store_ = servers_[0]->local.get();
    } else {
      std::vector<std::string> endpoints = {servers_[0]->server->endpoint()};
      if (GetParam() == Served::kRemoteTwoServers) {
        servers_.push_back(Serve());
        ASSERT_NE(servers_[1], nullptr);
        endpoints.push_back(servers_[1]->server->endpoint());
      }
      remote_ = Connect(endpoints);
      ASSERT_NE(remote_, nullptr);
      store_ = remote_.get();
    }
    ASSERT_TRUE(store().CreateBucket("bkt", "owner").ok());
  }
  void TearDown() override {
    remote_.reset();
    servers_.clear();
  }
  Store& store() { return *store_; }

  std::vector<std::unique_ptr<ServedStore>> servers_;
  std::unique_ptr<Store> remote_;
  Store* store_ = nullptr;
};

}  // namespace oc::storage::test
