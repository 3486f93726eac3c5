// RemoteStore's placement (remote_store.h; docs/decisions/remote-store-shared-placement.md), chosen
// at connect from every server's ServerInfo, against real RpcServers over real RocksDB stores
// (rpc_placement_test_util.h: the shared case wraps each store so that it reports one RADOS
// target, and their data stays separate, so where an object landed shows which server a call
// went to). Calls cut after they were sent are in rpc_retry_test.cc. The end-to-end test over a
// real cluster (two servers over one pool) is RADOS-backed and lives with the RADOS store's tests.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "kv_test_util.h"
#include "oc/storage/remote_store.h"
#include "oc/storage/store.h"
#include "rpc_placement_test_util.h"

namespace oc::storage::test {
namespace {

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
// Before, it failed with kUnavailable each time the stopped server's skip had expired. (One
// whose connection breaks after it was sent runs elsewhere only if it is idempotent:
// rpc_retry_test.cc.)
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
