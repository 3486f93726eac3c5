// The storage RPC's descriptor calls run on the served store's descriptor executor
// (Store::descriptor_executor), the one every front end of that store shares: when its
// workers are busy (here: a task another front end submitted), KvGetLayers and KvPutChunks
// are refused with kResourceExhausted naming kv.descriptor_threads, nothing is stored, and the
// connection stays usable; once the worker is free they succeed. No timing: the busy worker
// waits on a promise the test fulfils, and the first call after it is retried until admitted.
#include <chrono>
#include <future>
#include <memory>
#include <thread>
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

// Calls `call` until it is not refused by a full executor (at most 1000 times).
template <typename F>
auto Retried(F call) -> decltype(call()) {
  auto r = call();
  for (int attempt = 1;
       attempt < 1000 && !r.has_value() && r.error().code() == Code::kResourceExhausted;
       ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    r = call();
  }
  return r;
}

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

  // A worker is free again once its task has returned, a moment after the call it ran was
  // answered: the calls below retry on the refusal as S3 clients do on SlowDown.
  release.set_value();
  Result<KvPutReport> stored = Retried([&] {
    MemorySource source(body, 1024);
    return remote->PutChunks(kBucket, d, &source);
  });
  ASSERT_TRUE(stored.has_value()) << stored.error();
  std::unique_ptr<VectorSink> sink;
  Result<KvGetReport> got = Retried([&] {
    sink = std::make_unique<VectorSink>(4, 16 << 10);
    return remote->GetLayers(kBucket, d, sink.get(), {});
  });
  ASSERT_TRUE(got.has_value()) << got.error();
  EXPECT_EQ(got->plan.matched, s.n);
  EXPECT_EQ(sink->body().size(), body.size());
}

}  // namespace
}  // namespace oc::storage::test
