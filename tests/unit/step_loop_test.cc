// A loop without a DataLoader (lib/analysis/meters/step_loop.h): the first
// step's window, as long as the second step or the median of the next ones
// where that is shorter, so that a slow second step does not stretch the
// loop back into the start-up and count the start-up's reads as a wait.
#include "lib/analysis/meters/step_loop.h"

#include <gtest/gtest.h>

#include <vector>

namespace dlprof::analysis {
namespace {

constexpr uint64_t kMs = 1000000;

TEST(StepLoopTest, TheFirstPeriodIsTheSecondStepsOrTheNextStepsMedianIfShorter) {
  EXPECT_EQ(StepLoop::FirstPeriod({}), 0u);
  EXPECT_EQ(StepLoop::FirstPeriod({5}), 0u);
  EXPECT_EQ(StepLoop::FirstPeriod({0, 30}), 30u);
  EXPECT_EQ(StepLoop::FirstPeriod({0, 30, 40}), 30u);  // two periods: the second step's
  EXPECT_EQ(StepLoop::FirstPeriod({0, 10, 20, 30, 40}), 10u);
  // The second step slow (a compilation): the median of 100, 10, 10, 10.
  EXPECT_EQ(StepLoop::FirstPeriod({0, 100, 110, 120, 130}), 10u);
  // A slow third step (a save) changes nothing: the second's is shorter.
  EXPECT_EQ(StepLoop::FirstPeriod({0, 10, 100, 110, 120}), 10u);
  // Only the first five marks count.
  EXPECT_EQ(StepLoop::FirstPeriod({0, 100, 110, 120, 130, 1000, 5000}), 10u);
  // Three periods: their median (the middle one).
  EXPECT_EQ(StepLoop::FirstPeriod({0, 50, 70, 90}), 20u);
}

TEST(StepLoopTest, ASlowSecondStepLeavesTheStartUpsReadsOutOfTheFirstWait) {
  // One thread: a start-up read at 900 ms (the data set's index), the first
  // step's get_batch reads at 990-995 ms, steps ending at 1000, 1100 (a
  // slow second step), 1110, 1120, 1130 ms, a read before each.
  StepLoop loop;
  const uint64_t t = 1;
  loop.AddDataIo(t, 900 * kMs, 901 * kMs, 4096, 0);
  loop.AddDataIo(t, 990 * kMs, 995 * kMs, 4096, 0);
  loop.AddStep(t, 998 * kMs, 1000 * kMs);
  const uint64_t ends[] = {1100, 1110, 1120, 1130};
  for (uint64_t end : ends) {
    loop.AddDataIo(t, (end - 8) * kMs, (end - 7) * kMs, 4096, 0);
    loop.AddStep(t, (end - 2) * kMs, end * kMs);
  }
  const StepLoop::Result r = loop.Finish(0);
  ASSERT_EQ(r.steps.size(), 5u);
  // The first window is 10 ms (the next steps' median), not 100: the
  // start-up read at 900 ms is not the first step's wait.
  EXPECT_EQ(r.loop_start, 990 * kMs);
  EXPECT_EQ(r.steps[0].window_start, 990 * kMs);
  EXPECT_EQ(r.steps[0].io_ns, 5 * kMs);
  EXPECT_EQ(r.first_window_io_ns, 5 * kMs);
  EXPECT_EQ(r.first_window_io_ops, 1u);
  EXPECT_EQ(r.loop_end, 1130 * kMs);
}

}  // namespace
}  // namespace dlprof::analysis
