// The probes' step timing: warm-up steps not counted, enough steps for a slow and a fast step,
// and a median that one slowed step does not move.
#include "core/step_timing.h"

#include <gtest/gtest.h>

namespace dl::test {
namespace {

// Steps of `seconds` each until done(); returns how many ran.
int run_until_done(StepTiming& t, double seconds) {
  int index = 0;
  while (!t.done() && index < 1000) t.add(index++, seconds);
  return index;
}

TEST(StepTiming, WarmupStepsAreNotTimed) {
  StepTiming t;
  t.add(0, 10.0);
  t.add(1, 5.0);
  EXPECT_EQ(t.timed_steps(), 0u);
  EXPECT_EQ(t.median(), 0.0);
  t.add(2, 0.5);
  EXPECT_EQ(t.timed_steps(), 1u);
  EXPECT_DOUBLE_EQ(t.median(), 0.5);
}

TEST(StepTiming, SlowStepsStopAfterTheMinimumCount) {
  StepTiming t;
  EXPECT_EQ(run_until_done(t, 3.0), StepTiming::kWarmupSteps + 3);
  EXPECT_DOUBLE_EQ(t.median(), 3.0);
}

TEST(StepTiming, FastStepsRunUntilASecondOrTheMaximum) {
  StepTiming mid;
  EXPECT_EQ(run_until_done(mid, 0.125), StepTiming::kWarmupSteps + 8);
  StepTiming fast;
  EXPECT_EQ(run_until_done(fast, 0.001), StepTiming::kWarmupSteps + 30);
}

TEST(StepTiming, OneSlowedStepDoesNotMoveTheMedian) {
  StepTiming t;
  int index = 0;
  t.add(index++, 1.0);
  t.add(index++, 1.0);
  for (double s : {0.20, 0.21, 5.0, 0.19, 0.20}) t.add(index++, s);
  EXPECT_DOUBLE_EQ(t.median(), 0.20);
  t.add(index++, 0.22);
  EXPECT_DOUBLE_EQ(t.median(), (0.20 + 0.21) / 2);
}

}  // namespace
}  // namespace dl::test
