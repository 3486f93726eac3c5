// ByteBudget (storage-server/src/data_plane/staging_pool.h), the bound on zero-copy bytes in
// flight that every delivery shares: waiters are served in arrival order, a small request does
// not overtake a larger one ahead of it, and one that times out lets those behind it through.
// The test sequences the threads by the budget's own waiter count: no timing.
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "data_plane/staging_pool.h"

namespace oc::storage {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;

void WaitForWaiters(const ByteBudget& b, size_t n) {
  while (b.waiting() != n) {
    std::this_thread::yield();
  }
}

TEST(ByteBudget, WaitersAreServedInArrivalOrder) {
  ByteBudget budget(10);
  ASSERT_EQ(budget.Acquire(10, hours(1)), 10u);
  std::thread a([&] { EXPECT_EQ(budget.Acquire(6, std::chrono::seconds(60)), 6u); });
  WaitForWaiters(budget, 1);
  std::thread b([&] { EXPECT_EQ(budget.Acquire(4, std::chrono::seconds(60)), 4u); });
  WaitForWaiters(budget, 2);
  budget.Release(4);  // enough for b, but a is ahead: nobody is served yet
  EXPECT_EQ(budget.waiting(), 2u);
  EXPECT_EQ(budget.free(), 4u);
  budget.Release(2);  // a's 6: a is served, b still waits
  a.join();
  EXPECT_EQ(budget.waiting(), 1u);
  EXPECT_EQ(budget.free(), 0u);
  budget.Release(4);  // b's 4
  b.join();
  EXPECT_EQ(budget.waiting(), 0u);
  EXPECT_EQ(budget.free(), 0u);
  budget.Release(10);
  EXPECT_EQ(budget.free(), 10u);
  EXPECT_EQ(budget.taken_total(), 20u);
}

TEST(ByteBudget, AWaiterThatTimesOutLetsThoseBehindThrough) {
  ByteBudget budget(10);
  ASSERT_EQ(budget.Acquire(8, hours(1)), 8u);  // 2 left
  std::thread big([&] { EXPECT_EQ(budget.Acquire(10, milliseconds(1)), 0u); });
  big.join();  // timed out: it held nobody back after it left
  EXPECT_EQ(budget.waiting(), 0u);
  EXPECT_EQ(budget.Acquire(2, hours(1)), 2u);
  // A request larger than the capacity takes the whole capacity.
  budget.Release(10);
  EXPECT_EQ(budget.Acquire(1000, hours(1)), 10u);
}

}  // namespace
}  // namespace oc::storage
