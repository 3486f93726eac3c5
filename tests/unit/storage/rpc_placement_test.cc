// RemoteStore's placement (remote_store.h; docs/decisions/remote-store-shared-placement.md), chosen
// at connect from every server's ServerInfo, against real RpcServers over real RocksDB stores. The
// shared case needs servers that report one RADOS target: here each RocksDB store is wrapped so
// that it reports one (ReportingStore; a test-only override of Store::identity, nothing else
// changes). Their data is NOT shared, which is what makes the routing observable: where an object
// landed shows which server a call went to. The end-to-end test over a real cluster (two servers
// over one pool) is RADOS-backed and lives with the RADOS store's tests.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "kv_test_util.h"
#include "oc/storage/open_store.h"
#include "oc/storage/remote_store.h"
#include "oc/storage/rpc_server.h"
#include "oc/storage/store.h"
#include "rpc_test_util.h"
#include "store_test_util.h"

namespace oc::storage::test {
namespace {

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

const StoreIdentity kRados{"rados", "5f1c0a52-fsid", "oc-pool", "ns"};

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
bool Serve(Server& s, uint16_t port) {
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

std::unique_ptr<Server> Start(std::optional<StoreIdentity> identity) {
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

Result<std::unique_ptr<Store>> ConnectTo(const std::vector<const Server*>& servers) {
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

bool Has(Store& store, const ObjectKey& key) { return store.Head(key).has_value(); }

TEST(RemotePlacement, ServerInfoReportsTheServedStoresIdentity) {
  auto rocks = Start(std::nullopt);
  auto rados = Start(kRados);
  ASSERT_TRUE(rocks && rados);
  Result<std::unique_ptr<Store>> r = ConnectTo({rocks.get()});
  ASSERT_TRUE(r.has_value()) << r.error();
  EXPECT_EQ((*r)->identity().backend, "rocksdb");
  Result<std::unique_ptr<Store>> s = ConnectTo({rados.get()});
  ASSERT_TRUE(s.has_value()) << s.error();
  const StoreIdentity id = (*s)->identity();
  EXPECT_EQ(id.backend, "rados");
  EXPECT_EQ(id.fsid, kRados.fsid);
  EXPECT_EQ(id.pool, kRados.pool);
  EXPECT_EQ(id.rados_namespace, kRados.rados_namespace);
}

TEST(RemotePlacement, RocksServersKeepEachBucketOnOneServer) {
  auto a = Start(std::nullopt);
  auto b = Start(std::nullopt);
  ASSERT_TRUE(a && b);
  Result<std::unique_ptr<Store>> remote = ConnectTo({a.get(), b.get()});
  ASSERT_TRUE(remote.has_value()) << remote.error();
  int on_a = 0;
  for (int i = 0; i < 8; ++i) {
    const std::string bucket = "bucket-" + std::to_string(i);
    ASSERT_TRUE((*remote)->CreateBucket(bucket, "me").ok());
    for (int j = 0; j < 4; ++j) {
      ASSERT_TRUE(PutString(**remote, {bucket, "k" + std::to_string(j)}, "x").has_value());
    }
    const bool in_a = a->local->HeadBucket(bucket).has_value();
    const bool in_b = b->local->HeadBucket(bucket).has_value();
    EXPECT_NE(in_a, in_b) << bucket << " must live on exactly one server";
    Store& home = in_a ? *a->local : *b->local;
    for (int j = 0; j < 4; ++j) {
      EXPECT_TRUE(Has(home, {bucket, "k" + std::to_string(j)})) << "every object with its bucket";
    }
    on_a += in_a ? 1 : 0;
  }
  EXPECT_GT(on_a, 0);
  EXPECT_LT(on_a, 8);
}

TEST(RemotePlacement, MixedBackendsAreAStartupErrorNamingTheServers) {
  auto rocks = Start(std::nullopt);
  auto rados = Start(kRados);
  ASSERT_TRUE(rocks && rados);
  Result<std::unique_ptr<Store>> r = ConnectTo({rocks.get(), rados.get()});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.error().field(), "endpoints");
  EXPECT_NE(r.error().message().find(rocks->endpoint), std::string_view::npos) << r.error();
  EXPECT_NE(r.error().message().find(rados->endpoint), std::string_view::npos) << r.error();
}

TEST(RemotePlacement, DifferentSharedTargetsAreAStartupError) {
  for (StoreIdentity other : {StoreIdentity{"rados", "another-fsid", "oc-pool", "ns"},
                              StoreIdentity{"rados", kRados.fsid, "other-pool", "ns"},
                              StoreIdentity{"rados", kRados.fsid, "oc-pool", "other-ns"}}) {
    SCOPED_TRACE(other.fsid + "/" + other.pool + "/" + other.rados_namespace);
    auto a = Start(kRados);
    auto b = Start(other);
    ASSERT_TRUE(a && b);
    Result<std::unique_ptr<Store>> r = ConnectTo({a.get(), b.get()});
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), Code::kInvalidArgument);
    EXPECT_NE(r.error().message().find(a->endpoint), std::string_view::npos) << r.error();
    EXPECT_NE(r.error().message().find(b->endpoint), std::string_view::npos) << r.error();
  }
}

TEST(RemotePlacement, SharedTargetSpreadsCallsRoundRobin) {
  SharedPair pair;
  ASSERT_TRUE(pair.a && pair.b && pair.Prepare());
  Result<std::unique_ptr<Store>> remote = ConnectTo({pair.a.get(), pair.b.get()});
  ASSERT_TRUE(remote.has_value()) << remote.error();
  EXPECT_EQ((*remote)->identity().backend, "rados");
  // One bucket, ten PUTs from one thread: they alternate between the servers.
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(PutString(**remote, {"bkt", "o" + std::to_string(i)}, "x").has_value());
  }
  int on_a = 0;
  int on_b = 0;
  for (int i = 0; i < 10; ++i) {
    const ObjectKey key{"bkt", "o" + std::to_string(i)};
    on_a += Has(*pair.a->local, key) ? 1 : 0;
    on_b += Has(*pair.b->local, key) ? 1 : 0;
  }
  EXPECT_EQ(on_a, 5);
  EXPECT_EQ(on_b, 5);
  // A copy is one call on one server (both hold both buckets).
  Result<ObjectMeta> copy = (*remote)->Copy({"bkt", "k"}, {"bkt", "copy"}, std::nullopt, {});
  ASSERT_TRUE(copy.has_value()) << copy.error();
  EXPECT_NE(Has(*pair.a->local, {"bkt", "copy"}), Has(*pair.b->local, {"bkt", "copy"}));
}

TEST(RemotePlacement, SharedStreamsStayOnTheServerThatOpenedThem) {
  SharedPair pair;
  ASSERT_TRUE(pair.a && pair.b && pair.Prepare());
  Result<std::unique_ptr<Store>> remote = ConnectTo({pair.a.get(), pair.b.get()});
  ASSERT_TRUE(remote.has_value()) << remote.error();
  Result<std::unique_ptr<ObjectWriter>> w = (*remote)->Put({"bkt", "streamed"}, {});
  ASSERT_TRUE(w.has_value()) << w.error();
  const std::string data = Bytes(7, 3 << 20);
  for (size_t pos = 0; pos < data.size(); pos += 1 << 20) {
    ASSERT_TRUE((*w)->Append(AsBytes(std::string_view(data).substr(pos, 1 << 20))).ok());
    ASSERT_TRUE((*remote)->Head({"bkt", "k"}).has_value());  // other calls move the turn on
  }
  ASSERT_TRUE((*w)->Commit().has_value());
  const bool on_a = Has(*pair.a->local, {"bkt", "streamed"});
  const bool on_b = Has(*pair.b->local, {"bkt", "streamed"});
  ASSERT_NE(on_a, on_b);
  Store& holder = on_a ? *pair.a->local : *pair.b->local;
  Result<std::string> local_copy =
      GetString(holder, {"bkt", "streamed"}, ByteRange::All(), 1 << 20);
  ASSERT_TRUE(local_copy.has_value());
  EXPECT_TRUE(*local_copy == data);
}

TEST(RemotePlacement, SharedReadsAreRetriedOnAnotherServer) {
  for (const bool stop_first : {true, false}) {
    SCOPED_TRACE(stop_first ? "first server stopped" : "second server stopped");
    SharedPair pair;
    ASSERT_TRUE(pair.a && pair.b && pair.Prepare());
    Result<std::unique_ptr<Store>> remote = ConnectTo({pair.a.get(), pair.b.get()});
    ASSERT_TRUE(remote.has_value()) << remote.error();
    // One server is gone; the remote store still counts it in its turn.
    (stop_first ? pair.a : pair.b)->rpc.reset();
    for (int i = 0; i < 4; ++i) {
      SCOPED_TRACE(i);
      Result<ObjectMeta> head = (*remote)->Head({"bkt", "k"});
      ASSERT_TRUE(head.has_value()) << head.error();
      Result<std::string> got = GetString(**remote, {"bkt", "k"}, ByteRange::All(), 1 << 20);
      ASSERT_TRUE(got.has_value()) << got.error();
      EXPECT_EQ(*got, "same bytes");
      Result<ListResult> list = (*remote)->List("bkt", ListOptions{});
      ASSERT_TRUE(list.has_value()) << list.error();
    }
  }
}

// A rolling restart: a is stopped (a call marks it skipped) and started again, then b is
// stopped at once. A read that fails on b is retried on a, skipped or not; before, no server
// was left to retry on and the read failed until a's skip expired.
TEST(RemotePlacement, SharedReadsAreRetriedOnASkippedServerRatherThanFailed) {
  SharedPair pair;
  ASSERT_TRUE(pair.a && pair.b && pair.Prepare());
  Result<std::unique_ptr<Store>> remote = ConnectTo({pair.a.get(), pair.b.get()});
  ASSERT_TRUE(remote.has_value()) << remote.error();
  const uint16_t a_port = pair.a->rpc->port();
  pair.a->rpc.reset();
  for (int i = 0; i < 2; ++i) {  // one of them is routed to a, which is then skipped
    ASSERT_TRUE((*remote)->Head({"bkt", "k"}).has_value());
  }
  ASSERT_TRUE(Serve(*pair.a, a_port));
  pair.b->rpc.reset();
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(i);
    Result<ObjectMeta> head = (*remote)->Head({"bkt", "k"});
    ASSERT_TRUE(head.has_value()) << head.error();
  }
}

// A mutation whose server is stopped never left the gateway (the connection was refused, so
// no byte of it was sent): it runs on the other server, where it cannot be applied twice.
// Before, it failed with kUnavailable each time the stopped server's skip had expired. (A
// mutation whose connection breaks after it was sent is still never retried: the server may
// have applied it; remote_store_impl.h, Routed.)
TEST(RemotePlacement, SharedMutationsThatCannotBeSentRunOnAnotherServer) {
  SharedPair pair;
  ASSERT_TRUE(pair.a && pair.b && pair.Prepare());
  Result<std::unique_ptr<Store>> remote = ConnectTo({pair.a.get(), pair.b.get()});
  ASSERT_TRUE(remote.has_value()) << remote.error();
  pair.b->rpc.reset();
  // Round-robin sends one of every two calls to b first: each goes to a instead, once.
  for (int i = 0; i < 4; ++i) {
    const std::string bucket = "new-" + std::to_string(i);
    Status st = (*remote)->CreateBucket(bucket, "me");
    ASSERT_TRUE(st.ok()) << bucket << ": " << st;
    EXPECT_TRUE(pair.a->local->HeadBucket(bucket).has_value()) << bucket;
    EXPECT_EQ((*remote)->CreateBucket(bucket, "me").code(), Code::kAlreadyExists) << bucket;
  }
}

// A descriptor GET whose server is stopped never left the gateway (its connect failed): it
// runs on the other server instead of failing, as reads do. Before, it failed with
// kUnavailable each time the stopped server's skip had expired.
TEST(RemotePlacement, SharedDescriptorCallsThatCannotBeSentRunOnAnotherServer) {
  SharedPair pair;
  ASSERT_TRUE(pair.a && pair.b);
  const kvtest::Shape shape{2, 3, 100, descriptor::StoredLayout::kL2TD};
  const kvtest::Descriptor d = kvtest::MakeDescriptor(shape, /*compact=*/true, /*seed=*/5);
  std::vector<std::vector<std::byte>> chunks;
  ASSERT_TRUE(pair.a->local->CreateBucket(kvtest::kBucket, "me").ok());
  for (uint64_t j = 0; j < shape.n; ++j) {
    chunks.push_back(kvtest::ChunkBytes(5, j, shape));
    ASSERT_TRUE(kvtest::StoreChunk(*pair.a->local, d, j, chunks.back()).ok());
  }
  std::vector<std::byte> want(shape.n * shape.layers * shape.s);
  kvtest::OraclePayload(chunks, shape, d.delivery, shape.n, shape.n, want);
  Result<std::unique_ptr<Store>> remote = ConnectTo({pair.a.get(), pair.b.get()});
  ASSERT_TRUE(remote.has_value()) << remote.error();
  pair.b->rpc.reset();
  // Within two turns one GET is routed to b; both are answered, by a (only a holds chunks).
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(i);
    kvtest::VectorSink sink(2, 4'096);
    Result<KvGetReport> report = (*remote)->GetLayers(kvtest::kBucket, d, &sink, {});
    ASSERT_TRUE(report.has_value()) << report.error();
    EXPECT_EQ(report->plan.matched, shape.n);
    EXPECT_TRUE(sink.body() == want);
  }
}

TEST(RemotePlacement, SharedBucketDataPlaneStaysOnOneServer) {
  SharedPair pair;
  ASSERT_TRUE(pair.a && pair.b && pair.Prepare());
  Result<std::unique_ptr<Store>> remote = ConnectTo({pair.a.get(), pair.b.get()});
  ASSERT_TRUE(remote.has_value()) << remote.error();
  Result<DataPlaneInfo> first = (*remote)->DataPlane("bkt");
  ASSERT_TRUE(first.has_value()) << first.error();
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < i; ++j) {
      ASSERT_TRUE((*remote)->Head({"bkt", "k"}).has_value());  // the turn moves on
    }
    Result<DataPlaneInfo> again = (*remote)->DataPlane("bkt");
    ASSERT_TRUE(again.has_value()) << again.error();
    EXPECT_EQ(again->address, first->address) << "a bucket's data plane must not move";
  }
}

}  // namespace
}  // namespace oc::storage::test
