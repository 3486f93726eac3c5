#pragma once
// GatewayFixture: a real gateway over a local store (RocksDB in a temp dir, UCX over TCP) on a
// free port, run on its own thread, and a liboc_client Client signed in to it with bucket
// kBucket made; shared by the client tests that need a gateway in process
// (layer_handle_test.cc, put_chunks_test.cc).
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "oc/client/client.h"
#include "oc/descriptor/descriptor.h"
#include "oc/gateway/server.h"
#include "oc/storage/open_store.h"
#include "oc/testutil/testutil.h"

namespace oc::client {

constexpr char kBucket[] = "kv-layers";
constexpr uint32_t kLayers = 4;
constexpr uint64_t kLayerBytes = 4096;

// A gateway serving a local store on a free port, run on its own thread until destroyed.
class GatewayFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    storage::StoreOptions so;
    so.data_dir = (dir_.path() / "data").string();
    so.sync_writes = false;
    so.kv.data_plane_transports = "tcp";
    auto store = storage::OpenStore(so);
    ASSERT_TRUE(store.has_value()) << store.error();
    store_ = std::move(*store);
    gateway::GatewayOptions go;
    go.listen = "127.0.0.1:0";
    go.credentials_file = (dir_.path() / "credentials.toml").string();
    go.access_log = false;
    auto setup = gateway::EnsureCredentialsFile(go.credentials_file);
    ASSERT_TRUE(setup.has_value()) << setup.error();
    auto server = gateway::Server::Create(go, store_.get());
    ASSERT_TRUE(server.has_value()) << server.error();
    server_ = std::move(*server);
    run_ = std::thread([this] { (void)server_->Run(); });
    ClientOptions co;
    co.endpoint = "http://127.0.0.1:" + std::to_string(server_->port());
    co.access_key = setup->access_key;
    co.secret_key = setup->secret_key;
    co.data_plane.transports = "tcp";
    auto client = Client::Open(co);
    ASSERT_TRUE(client.has_value()) << client.error();
    client_ = std::move(*client);
    const Status made = client_->CreateBucket(kBucket);
    ASSERT_TRUE(made.ok()) << made.ToString();
  }
  void TearDown() override {
    client_.reset();
    if (server_ != nullptr) {
      server_->Stop();
      run_.join();
    }
  }

  // A client of this gateway with `access_key` / `secret_key` ("" for anonymous requests).
  std::unique_ptr<Client> ClientWith(std::string access_key, std::string secret_key) const {
    ClientOptions co = client_->options();
    co.access_key = std::move(access_key);
    co.secret_key = std::move(secret_key);
    auto c = Client::Open(co);
    return c.has_value() ? std::move(*c) : nullptr;
  }

  static descriptor::Descriptor Toy(descriptor::StoredLayout layout) {
    descriptor::Descriptor d;
    d.keys = descriptor::ExplicitKeys{{"llama@1@0@h0@bfloat16", "llama@1@0@h1@bfloat16"}};
    d.num_layers = kLayers;
    d.chunk_tokens = 16;
    d.layer_bytes = kLayerBytes;
    d.layout = layout;
    return d;
  }

  testutil::TempDir dir_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<gateway::Server> server_;
  std::thread run_;
  std::unique_ptr<Client> client_;
};

}  // namespace oc::client
