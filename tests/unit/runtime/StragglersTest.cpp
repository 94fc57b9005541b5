// The straggler watch (runtime/Stragglers.h): which device became slower than it was, from
// per-step compute times, with the run's defaults (threshold 1.5, 3 steps in a row, one
// warm-up step, a baseline of the median of the next three).
#include "runtime/Stragglers.h"

#include <gtest/gtest.h>

using hspmd::runtime::StragglerWatch;

namespace {

// Feeds steps `from`..`to` with device d taking times[d] seconds; the verdicts by step.
std::map<int64_t, StragglerWatch::Verdict> feed(StragglerWatch &watch, int64_t from, int64_t to,
                                                const std::map<int, double> &times) {
  std::map<int64_t, StragglerWatch::Verdict> verdicts;
  for (int64_t step = from; step <= to; ++step)
    verdicts[step] = watch.observe(step, times);
  return verdicts;
}

const std::map<int, double> kSteady = {{0, 0.010}, {1, 0.011}, {2, 0.009}, {3, 0.010}};

std::map<int, double> with(int device, double factor) {
  std::map<int, double> times = kSteady;
  times[device] *= factor;
  return times;
}

} // namespace

TEST(Stragglers, SteadyTimesAreNoStraggler) {
  StragglerWatch watch;
  for (const auto &[step, verdict] : feed(watch, 1, 20, kSteady)) {
    EXPECT_FALSE(verdict.straggler) << step;
    EXPECT_TRUE(verdict.flickers.empty()) << step;
  }
}

TEST(Stragglers, ADeviceSlowForThreeStepsIsAStraggler) {
  StragglerWatch watch;
  feed(watch, 1, 6, kSteady);
  auto verdicts = feed(watch, 7, 9, with(1, 2.0));
  EXPECT_FALSE(verdicts[7].straggler);
  EXPECT_FALSE(verdicts[8].straggler);
  ASSERT_TRUE(verdicts[9].straggler);
  EXPECT_EQ(verdicts[9].straggler->device, 1);
  EXPECT_EQ(verdicts[9].straggler->first, 7);
  EXPECT_EQ(verdicts[9].straggler->last, 9);
  EXPECT_NEAR(verdicts[9].straggler->ratio, 2.0, 1e-9);
  // A switch for it: the device's speed is half its type's from now on.
  watch.adopt(*verdicts[9].straggler);
  EXPECT_NEAR(watch.speed(1), 0.5, 1e-9);
  EXPECT_NEAR(watch.speed(0), 1.0, 1e-9);
}

TEST(Stragglers, OneSlowStepIsAFlicker) {
  StragglerWatch watch;
  feed(watch, 1, 6, kSteady);
  EXPECT_FALSE(watch.observe(7, with(2, 3.0)).straggler);
  const StragglerWatch::Verdict after = watch.observe(8, kSteady);
  EXPECT_FALSE(after.straggler);
  ASSERT_EQ(after.flickers.size(), 1u);
  EXPECT_EQ(after.flickers[0].device, 2);
  EXPECT_EQ(after.flickers[0].first, 7);
  EXPECT_EQ(after.flickers[0].last, 7);
  EXPECT_NEAR(after.flickers[0].ratio, 3.0, 1e-9);
  for (const auto &[step, verdict] : feed(watch, 9, 20, kSteady))
    EXPECT_FALSE(verdict.straggler) << step;
}

TEST(Stragglers, AMachineSlowerAsAWholeSlowsNoDevice) {
  StragglerWatch watch;
  feed(watch, 1, 6, kSteady);
  std::map<int, double> loaded = kSteady;
  for (auto &[device, seconds] : loaded)
    seconds *= 2.5;
  for (const auto &[step, verdict] : feed(watch, 7, 15, loaded)) {
    EXPECT_FALSE(verdict.straggler) << step;
    EXPECT_TRUE(verdict.flickers.empty()) << step;
  }
}

TEST(Stragglers, AcceptedSlownessIsTheNewNormal) {
  StragglerWatch watch;
  feed(watch, 1, 6, kSteady);
  auto verdicts = feed(watch, 7, 9, with(1, 2.0));
  ASSERT_TRUE(verdicts[9].straggler);
  watch.accept(*verdicts[9].straggler); // the run stayed on its plan
  for (const auto &[step, verdict] : feed(watch, 10, 20, with(1, 2.0)))
    EXPECT_FALSE(verdict.straggler) << step;
  // ... until it changes again: back at its old speed it is a faster device, three steps on.
  auto back = feed(watch, 21, 23, kSteady);
  ASSERT_TRUE(back[23].straggler);
  EXPECT_EQ(back[23].straggler->device, 1);
  EXPECT_NEAR(back[23].straggler->ratio, 0.5, 1e-9);
}

TEST(Stragglers, ANewPlanIsMeasuredAfresh) {
  StragglerWatch watch;
  feed(watch, 1, 6, kSteady);
  watch.restart();
  // Under the new plan device 3 does twice the work: its baseline, not a straggler.
  for (const auto &[step, verdict] : feed(watch, 7, 20, with(3, 2.0)))
    EXPECT_FALSE(verdict.straggler) << step;
  // Devices without work under a plan have no time: only the others are compared.
  std::map<int, double> three = with(3, 2.0);
  three.erase(0);
  for (const auto &[step, verdict] : feed(watch, 21, 30, three))
    EXPECT_FALSE(verdict.straggler) << step;
}
