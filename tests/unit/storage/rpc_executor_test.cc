// The storage RPC's descriptor calls run on the served store's descriptor executor
// (Store::descriptor_executor), the one every front end of that store shares: when its
// workers are busy (here: a task another front end submitted), KvGetLayers and KvPutChunks
// are refused with kResourceExhausted naming kv.descriptor_threads, nothing is stored, and the
// connection stays usable; once the worker is free they succeed. No timing: the busy worker
// waits on a promise the test fulfils.
#include <future>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "kv_test_util.h"
#include "rpc_test_util.h"

namespace oc::storage::test {
namespace {

using kvtest::ChunkBytes;
using kvtest::kBucket;
using kvtest::MakeDescriptor;
using kvtest::MemorySource;
using kvtest::Shape;
using kvtest::StoredLayout;
using kvtest::VectorSink;

TEST(RpcDescriptorExecutor, AFullExecutorRefusesDescriptorCallsAndStoresNothing) {
  KvOptions kv;
  kv.descriptor_threads = 1;
  std::unique_ptr<ServedStore> served = Serve({}, kv);
  ASSERT_NE(served, nullptr);
  std::unique_ptr<Store> remote = Connect({served->server->endpoint()});
  ASSERT_NE(remote, nullptr);
  ASSERT_TRUE(remote->CreateBucket(kBucket, "tester").ok());
  const Shape s{2, 2, 4096, StoredLayout::kL2TD};
  const descriptor::Descriptor d = MakeDescriptor(s, /*compact=*/false, 5);
  std::vector<std::byte> body;
  for (uint64_t j = 0; j < s.n; ++j) {
    const std::vector<std::byte> c = ChunkBytes(5, j, s);
    body.insert(body.end(), c.begin(), c.end());
  }

  // Another front end of the same store holds its only worker.
  BoundedExecutor* executor = served->local->descriptor_executor();
  ASSERT_NE(executor, nullptr);
  std::promise<void> started;
  std::promise<void> release;
  std::shared_future<void> go = release.get_future().share();
  ASSERT_TRUE(executor
                  ->Submit([&started, go] {
                    started.set_value();
                    go.wait();
                  })
                  .ok());
  started.get_future().wait();

  MemorySource refused_body(body, 1024);
  Result<KvPutReport> put = remote->PutChunks(kBucket, d, &refused_body);
  ASSERT_FALSE(put.has_value());
  EXPECT_EQ(put.error().code(), Code::kResourceExhausted) << put.error();
  EXPECT_EQ(put.error().field(), "kv.descriptor_threads");
  VectorSink refused_sink(4, 16 << 10);
  Result<KvGetReport> get = remote->GetLayers(kBucket, d, &refused_sink, {});
  ASSERT_FALSE(get.has_value());
  EXPECT_EQ(get.error().code(), Code::kResourceExhausted) << get.error();
  Result<KvProbeResult> probe = remote->ProbeChunks(kBucket, d);  // probes are not refused
  ASSERT_TRUE(probe.has_value()) << probe.error();
  EXPECT_EQ(probe->matched, 0u);  // the refused PUT stored nothing

  release.set_value();
  MemorySource source(body, 1024);
  Result<KvPutReport> stored = remote->PutChunks(kBucket, d, &source);
  ASSERT_TRUE(stored.has_value()) << stored.error();
  VectorSink sink(4, 16 << 10);
  Result<KvGetReport> got = remote->GetLayers(kBucket, d, &sink, {});
  ASSERT_TRUE(got.has_value()) << got.error();
  EXPECT_EQ(got->plan.matched, s.n);
  EXPECT_EQ(sink.body().size(), body.size());
}

}  // namespace
}  // namespace oc::storage::test
