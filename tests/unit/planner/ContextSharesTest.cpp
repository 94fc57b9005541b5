// The context-parallel share program: CBC's answer against trying every split, and the
// shapes of good splits (later positions cost more; faster devices take more).
#include "planner/ContextShares.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace hspmd::planner;

TEST(ContextShares, CbcFindsTheBestSplit) {
  const ContextCost cost{1.0, 40.0, 0};
  for (const auto &speeds : std::vector<std::vector<double>>{{1, 1, 1}, {1, 2, 3}, {3, 1, 2}, {1, 1, 4, 4}}) {
    std::vector<ShareDevice> devices;
    for (double s : speeds)
      devices.push_back({s, 0});
    const ContextPlan exact = bruteForceContextShares(devices, 96, 8, cost);
    const ContextPlan cbc = planContextShares(devices, 96, 8, cost);
    ASSERT_TRUE(cbc.error.empty()) << cbc.error;
    EXPECT_TRUE(cbc.optimal);
    EXPECT_NEAR(cbc.makespan, exact.makespan, 1e-9 * exact.makespan) << speeds.size() << " devices";
    const ContextPlan fast = planContextSharesFast(devices, 96, 8, cost);
    EXPECT_NEAR(fast.makespan, exact.makespan, 1e-9 * exact.makespan) << speeds.size() << " devices (bisection)";
    EXPECT_EQ(std::accumulate(cbc.lengths.begin(), cbc.lengths.end(), int64_t{0}), 96);
  }
}

TEST(ContextShares, EqualDevicesTakeFewerLaterPositions) {
  const ContextPlan plan = planContextShares({{1, 0}, {1, 0}, {1, 0}, {1, 0}}, 256, 8, ContextCost{1, 0, 0});
  ASSERT_EQ(plan.lengths.size(), 4u);
  for (size_t d = 0; d + 1 < plan.lengths.size(); ++d)
    EXPECT_GT(plan.lengths[d], plan.lengths[d + 1]) << "a later range costs more per position";
  // Better than equal shares, whose last device does 7/16 of the attention.
  const double equal = contextMakespan({{1, 0}, {1, 0}, {1, 0}, {1, 0}}, {64, 64, 64, 64}, ContextCost{1, 0, 0});
  EXPECT_LT(plan.makespan, 0.7 * equal);
}

TEST(ContextShares, MemoryCapsAShare) {
  // The fast device would take most positions but can hold only 32 of them.
  const ContextCost cost{1, 0, 1.0}; // one byte per position
  const ContextPlan plan = planContextShares({{1, 0}, {10, 32}}, 128, 8, cost);
  ASSERT_TRUE(plan.error.empty());
  EXPECT_EQ(plan.lengths[1], 32);
  EXPECT_EQ(plan.lengths[0], 96);
  EXPECT_EQ(planContextSharesFast({{1, 0}, {10, 32}}, 128, 8, cost).lengths, plan.lengths);
  const ContextPlan none = planContextShares({{1, 16}, {10, 32}}, 128, 8, cost);
  EXPECT_EQ(none.error, "no split of 128 positions fits the devices' memory");
  EXPECT_EQ(planContextSharesFast({{1, 16}, {10, 32}}, 128, 8, cost).error, none.error);
}

// Time per position that does not scale with FLOP/s (a TP group's all-reduces over slow
// links): of two equally fast devices, the one with slow links takes fewer positions, and all
// three programs agree on the best split.
TEST(ContextShares, SlowLinksTakeFewerPositions) {
  const ContextCost cost{1.0, 40.0, 0};
  const std::vector<ShareDevice> plain = {{1, 0}, {1, 0}}, linked = {{1, 0, 0}, {1, 0, 200.0}};
  for (const auto &devices : {plain, linked, std::vector<ShareDevice>{{1, 0, 100.0}, {2, 0, 0}, {1, 0, 50.0}}}) {
    const ContextPlan exact = bruteForceContextShares(devices, 96, 8, cost);
    const ContextPlan cbc = planContextShares(devices, 96, 8, cost);
    ASSERT_TRUE(cbc.error.empty()) << cbc.error;
    EXPECT_NEAR(cbc.makespan, exact.makespan, 1e-9 * exact.makespan) << devices.size() << " devices";
    EXPECT_NEAR(planContextSharesFast(devices, 96, 8, cost).makespan, exact.makespan, 1e-9 * exact.makespan);
  }
  const auto before = planContextShares(plain, 96, 8, cost).lengths,
             after = planContextShares(linked, 96, 8, cost).lengths;
  EXPECT_LT(after[1], before[1]) << "the device with slow links (the later range) gives up positions";
  // Its time counts: 96 positions on it alone take their FLOPs plus 96 x 200 s.
  EXPECT_NEAR(contextMakespan(linked, {0, 96}, cost), (96.0 * 97 / 2 + 96 * 40) + 96 * 200.0, 1e-6);
}
