#pragma once
// Helpers shared by the RemotePlacement tests (rpc_placement_test.cc, rpc_retry_test.cc): real
// RpcServers over real RocksDB stores in temp dirs, some wrapped so that they report one RADOS
// target (ReportingStore; a test-only override of Store::identity, nothing else changes). Their
// data is NOT shared, which is what makes the routing observable: where an object landed shows
// which server a call went to.

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "oc/storage/open_store.h"
#include "oc/storage/remote_store.h"
#include "oc/storage/rpc_server.h"
#include "oc/storage/store.h"
#include "rpc_test_util.h"
#include "store_test_util.h"

namespace oc::storage::test {

// A store that forwards every call to `inner` and reports `identity`.
class ReportingStore final : public Store {
 public:
  ReportingStore(Store* inner, StoreIdentity identity)
      : inner_(inner), identity_(std::move(identity)) {}

  Status CreateBucket(std::string_view b, std::string_view owner) override {
    return inner_->CreateBucket(b, owner);
  }
  Status DeleteBucket(std::string_view b) override { return inner_->DeleteBucket(b); }
  Result<BucketInfo> HeadBucket(std::string_view b) override { return inner_->HeadBucket(b); }
  Result<std::vector<BucketInfo>> ListBuckets() override { return inner_->ListBuckets(); }
  Status SetBucketLifecycle(std::string_view b, std::string_view config) override {
    return inner_->SetBucketLifecycle(b, config);
  }
  Result<std::string> GetBucketLifecycle(std::string_view b) override {
    return inner_->GetBucketLifecycle(b);
  }
  Result<std::unique_ptr<ObjectWriter>> Put(const ObjectKey& k, const PutOptions& o) override {
    return inner_->Put(k, o);
  }
  Result<std::unique_ptr<ObjectReader>> Get(const ObjectKey& k, ByteRange r) override {
    return inner_->Get(k, r);
  }
  Result<ObjectMeta> Head(const ObjectKey& k) override { return inner_->Head(k); }
  Result<std::vector<std::optional<ObjectMeta>>> HeadMany(
      std::string_view b, std::span<const std::string> names) override {
    return inner_->HeadMany(b, names);
  }
  Status Delete(const ObjectKey& k) override { return inner_->Delete(k); }
  Status DeleteIf(const ObjectKey& k, const ObjectVersionMatch& v) override {
    return inner_->DeleteIf(k, v);
  }
  Result<ObjectMeta> Copy(const ObjectKey& s, const ObjectKey& d,
                          const std::optional<PutOptions>& r, const WriteConditions& c) override {
    return inner_->Copy(s, d, r, c);
  }
  Result<ObjectMeta> PutObjectTags(const ObjectKey& k, const Tags& tags) override {
    return inner_->PutObjectTags(k, tags);
  }
  Result<ListResult> List(std::string_view b, const ListOptions& o) override {
    return inner_->List(b, o);
  }
  Result<std::string> CreateMultipartUpload(const ObjectKey& k, const PutOptions& o) override {
    return inner_->CreateMultipartUpload(k, o);
  }
  Result<std::unique_ptr<ObjectWriter>> UploadPart(const ObjectKey& k, std::string_view id,
                                                   uint32_t part, const PutOptions& o) override {
    return inner_->UploadPart(k, id, part, o);
  }
  Result<ObjectMeta> CompleteMultipartUpload(const ObjectKey& k, std::string_view id,
                                             std::span<const CompletedPart> parts,
                                             const CompleteOptions& o) override {
    return inner_->CompleteMultipartUpload(k, id, parts, o);
  }
  Status AbortMultipartUpload(const ObjectKey& k, std::string_view id) override {
    return inner_->AbortMultipartUpload(k, id);
  }
  Result<ListPartsResult> ListParts(const ObjectKey& k, std::string_view id, uint32_t marker,
                                    uint32_t max) override {
    return inner_->ListParts(k, id, marker, max);
  }
  Result<ListUploadsResult> ListMultipartUploads(std::string_view b,
                                                 const ListUploadsOptions& o) override {
    return inner_->ListMultipartUploads(b, o);
  }
  Result<KvProbeResult> ProbeChunks(std::string_view b, const descriptor::Descriptor& d) override {
    return inner_->ProbeChunks(b, d);
  }
  Result<KvGetReport> GetLayers(std::string_view b, const descriptor::Descriptor& d,
                                LayerSink* sink,
                                const std::function<Status(const KvPlan&)>& on_plan) override {
    return inner_->GetLayers(b, d, sink, on_plan);
  }
  Result<KvPutReport> PutChunks(std::string_view b, const descriptor::Descriptor& d,
                                ChunkSource* body) override {
    return inner_->PutChunks(b, d, body);
  }
  BoundedExecutor* descriptor_executor() override { return inner_->descriptor_executor(); }
  Result<DataPlaneInfo> DataPlane(std::string_view b) override { return inner_->DataPlane(b); }
  StoreIdentity identity() const override { return identity_; }
  Result<StoreStats> Stats() override { return inner_->Stats(); }

 private:
  Store* const inner_;
  const StoreIdentity identity_;
};

inline const StoreIdentity kRados{"rados", "5f1c0a52-fsid", "oc-pool", "ns"};

// A RocksDB store in a temp dir, served by an RpcServer as a store reporting `identity`
// (nullopt: the RocksDB store's own).
struct Server {
  testutil::TempDir dir;
  std::unique_ptr<Store> local;
  std::unique_ptr<Store> reporting;
  std::unique_ptr<rpc::RpcServer> rpc;
  std::string endpoint;

  ~Server() {
    rpc.reset();
    reporting.reset();
    local.reset();
  }
};

// Starts serving s's store (the reporting one if any) on `port` (0: a free one).
inline bool Serve(Server& s, uint16_t port) {
  rpc::RpcServerOptions options;
  options.listen = "127.0.0.1:" + std::to_string(port);
  options.io_threads = 1;
  options.store_threads = 2;
  Store* served = s.reporting != nullptr ? s.reporting.get() : s.local.get();
  Result<std::unique_ptr<rpc::RpcServer>> server =
      rpc::RpcServer::Start(served, options, std::string(kTestSecret));
  EXPECT_TRUE(server.has_value()) << server.error();
  if (!server.has_value()) {
    return false;
  }
  s.rpc = std::move(*server);
  return true;
}

inline std::unique_ptr<Server> Start(std::optional<StoreIdentity> identity) {
  auto s = std::make_unique<Server>();
  StoreOptions so;
  so.data_dir = (s->dir.path() / "db").string();
  so.block_cache_bytes = 16 << 20;
  so.read_threads = 2;
  Result<std::unique_ptr<Store>> local = OpenStore(so);
  EXPECT_TRUE(local.has_value()) << local.error();
  if (!local.has_value()) {
    return nullptr;
  }
  s->local = std::move(*local);
  if (identity.has_value()) {
    s->reporting = std::make_unique<ReportingStore>(s->local.get(), *identity);
  }
  if (!Serve(*s, 0)) {
    return nullptr;
  }
  s->endpoint = "127.0.0.1:" + std::to_string(s->rpc->port());
  return s;
}

inline Result<std::unique_ptr<Store>> ConnectTo(const std::vector<const Server*>& servers) {
  RemoteStoreOptions o;
  for (const Server* s : servers) {
    o.endpoints.push_back(s->endpoint);
  }
  o.secret = std::string(kTestSecret);
  o.max_idle_connections = 4;
  return ConnectRemoteStore(o);
}

// Two servers that report one RADOS target, each holding bucket "bkt" with object "k".
struct SharedPair {
  std::unique_ptr<Server> a = Start(kRados);
  std::unique_ptr<Server> b = Start(kRados);

  bool Prepare() {
    for (Server* s : {a.get(), b.get()}) {
      if (!s->local->CreateBucket("bkt", "me").ok() ||
          !PutString(*s->local, {"bkt", "k"}, "same bytes").has_value()) {
        return false;
      }
    }
    return true;
  }
};

inline bool Has(Store& store, const ObjectKey& key) { return store.Head(key).has_value(); }

}  // namespace oc::storage::test
