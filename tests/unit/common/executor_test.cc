// BoundedExecutor (oc/common/executor.h): admission up to threads + max_queued, refusal
// naming the field, submission order of queued tasks, workers bounded, and a shutdown that
// runs every admitted task. Tasks block on latches the test opens: no timing.
#include "oc/common/executor.h"

#include <atomic>
#include <chrono>
#include <future>
#include <latch>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

namespace oc {
namespace {

BoundedExecutor::Options Opts(uint32_t threads, uint32_t max_queued) {
  BoundedExecutor::Options o;
  o.threads = threads;
  o.max_queued = max_queued;
  o.field = "kv.descriptor_threads";
  return o;
}

TEST(BoundedExecutor, RefusesWhenEveryWorkerIsBusyAndNoQueue) {
  BoundedExecutor ex(Opts(2, 0));
  std::latch started(2);
  std::promise<void> release;
  std::shared_future<void> go = release.get_future().share();
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(ex.Submit([&, go] {
                    started.count_down();
                    go.wait();
                  }).ok());
  }
  started.wait();  // both run at once: a task admitted with no queue starts immediately
  bool ran = false;
  const Status refused = ex.Submit([&] { ran = true; });
  EXPECT_EQ(refused.code(), Code::kResourceExhausted);
  EXPECT_EQ(refused.field(), "kv.descriptor_threads");
  EXPECT_EQ(ex.in_flight(), 2u);
  release.set_value();
  ex.Shutdown();
  EXPECT_FALSE(ran);
  EXPECT_EQ(ex.workers(), 0u);  // joined
}

TEST(BoundedExecutor, QueuedTasksRunInOrderOnBoundedWorkers) {
  BoundedExecutor ex(Opts(1, 3));
  std::promise<void> release;
  std::shared_future<void> go = release.get_future().share();
  std::latch first_started(1);
  std::mutex mu;
  std::vector<int> order;
  ASSERT_TRUE(ex.Submit([&, go] {
                  first_started.count_down();
                  go.wait();
                  std::lock_guard lock(mu);
                  order.push_back(0);
                }).ok());
  first_started.wait();
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(ex.Submit([&, i] {
                    std::lock_guard lock(mu);
                    order.push_back(i);
                  }).ok());
  }
  EXPECT_EQ(ex.Submit([] {}).code(), Code::kResourceExhausted);  // 1 running + 3 queued
  EXPECT_EQ(ex.workers(), 1u);
  release.set_value();
  ex.Shutdown();  // drains: the queued tasks run before the workers are joined
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

TEST(BoundedExecutor, ShutdownRunsAdmittedTasksAndRefusesNewOnes) {
  auto ex = std::make_unique<BoundedExecutor>(Opts(4, 16));
  std::atomic<int> ran{0};
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(ex->Submit([&] { ++ran; }).ok()) << i;
  }
  ex->Shutdown();
  EXPECT_EQ(ran.load(), 20);
  EXPECT_EQ(ex->Submit([] {}).code(), Code::kUnavailable);
  ex->Shutdown();  // idempotent
  ex.reset();
}

TEST(BoundedExecutor, WorkersStartOnDemandAndNeverExceedTheBound) {
  BoundedExecutor ex(Opts(3, 100));
  EXPECT_EQ(ex.workers(), 0u);
  std::promise<void> release;
  std::shared_future<void> go = release.get_future().share();
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(ex.Submit([go] { go.wait(); }).ok());
  }
  EXPECT_EQ(ex.workers(), 3u);
  release.set_value();
  ex.Shutdown();
  EXPECT_EQ(ex.in_flight(), 0u);
}

TEST(BoundedExecutor, StartAllStartsEveryWorkerAtOnce) {
  BoundedExecutor::Options o = Opts(5, 0);
  o.start_all = true;
  BoundedExecutor ex(o);
  EXPECT_EQ(ex.workers(), 5u);
  std::atomic<int> ran{0};
  ASSERT_TRUE(ex.Submit([&] { ++ran; }).ok());
  ex.Shutdown();
  EXPECT_EQ(ran.load(), 1);
}

// The admission queue (docs/decisions/many-clients-admission-queue.md): a full queue refuses naming
// the field and saying the queue is full.
TEST(BoundedExecutor, AFullQueueRefusesSayingSo) {
  BoundedExecutor ex(Opts(1, 1));
  std::promise<void> release;
  std::shared_future<void> go = release.get_future().share();
  std::latch started(1);
  ASSERT_TRUE(ex.Submit([&, go] {
                  started.count_down();
                  go.wait();
                }).ok());
  started.wait();
  std::atomic<int> ran{0};
  ASSERT_TRUE(ex.Submit([&] { ++ran; }, [](const Status&) { FAIL() << "no timeout set"; }).ok());
  EXPECT_EQ(ex.queued(), 1u);
  const Status full = ex.Submit([&] { ++ran; }, [](const Status&) {});
  EXPECT_EQ(full.code(), Code::kResourceExhausted);
  EXPECT_EQ(full.field(), "kv.descriptor_threads");
  EXPECT_NE(full.message().find("admission queue is full"), std::string_view::npos) << full;
  release.set_value();
  ex.Shutdown();
  EXPECT_EQ(ran.load(), 1);  // the queued one ran once the worker was free
}

// A queued task still waiting at queue_timeout leaves the queue unrun; its `expired` says the
// deadline passed. One that finds a worker first runs and never expires.
TEST(BoundedExecutor, AQueuedTaskPastItsDeadlineExpiresUnrun) {
  BoundedExecutor::Options o = Opts(1, 4);
  o.queue_timeout = std::chrono::milliseconds(1);
  BoundedExecutor ex(o);
  std::promise<void> release;
  std::shared_future<void> go = release.get_future().share();
  std::latch started(1);
  ASSERT_TRUE(ex.Submit([&, go] {
                  started.count_down();
                  go.wait();
                }).ok());
  started.wait();
  std::promise<Status> expired;
  std::atomic<bool> ran{false};
  ASSERT_TRUE(ex.Submit([&] { ran = true; }, [&](const Status& s) { expired.set_value(s); }).ok());
  const Status s = expired.get_future().get();  // the worker stays busy until it expired
  EXPECT_EQ(s.code(), Code::kResourceExhausted);
  EXPECT_EQ(s.field(), "kv.descriptor_threads");
  EXPECT_NE(s.message().find("admission timeout"), std::string_view::npos) << s;
  EXPECT_EQ(ex.queued(), 0u);
  EXPECT_EQ(ex.expired(), 1u);
  release.set_value();
  ex.Shutdown();
  EXPECT_FALSE(ran.load());
}

TEST(BoundedExecutor, AQueuedTaskThatGetsAWorkerInTimeRuns) {
  BoundedExecutor::Options o = Opts(1, 4);
  o.queue_timeout = std::chrono::hours(1);
  BoundedExecutor ex(o);
  std::promise<void> release;
  std::shared_future<void> go = release.get_future().share();
  ASSERT_TRUE(ex.Submit([go] { go.wait(); }).ok());
  std::promise<void> ran;
  ASSERT_TRUE(ex.Submit([&] { ran.set_value(); }, [](const Status&) { FAIL() << "expired"; }).ok());
  release.set_value();
  ran.get_future().get();
  ex.Shutdown();
  EXPECT_EQ(ex.expired(), 0u);
}

// SubmitNow (PUTs, RPC calls) never waits in the queue, whatever room it has.
TEST(BoundedExecutor, SubmitNowStartsAtOnceOrRefuses) {
  BoundedExecutor ex(Opts(1, 8));
  std::promise<void> release;
  std::shared_future<void> go = release.get_future().share();
  ASSERT_TRUE(ex.SubmitNow([go] { go.wait(); }).ok());
  const Status busy = ex.SubmitNow([] {});
  EXPECT_EQ(busy.code(), Code::kResourceExhausted);
  EXPECT_NE(busy.message().find("workers are busy"), std::string_view::npos) << busy;
  EXPECT_TRUE(ex.Submit([] {}).ok());  // a queued one still may wait
  release.set_value();
  ex.Shutdown();
}

}  // namespace
}  // namespace oc
