// A rank restarted by its launcher (torchrun's elastic restarts: a new
// process each attempt) on a rank group built by hand (rank_group.h): its
// loop is its attempts' loops summed, never one window over the dead time
// between them (failure detection, rendezvous, the next start-up); two
// processes of one rank looping side by side stay one window.
#include <gtest/gtest.h>

#include "tests/helpers/rank_group.h"

namespace dlprof::testing {
namespace {

// Attempt 1 (process 0, pid 100): waits [0, 100) and [110, 200), steps
// [100, 110) and [200, 210), then dies: its loop [0, 210). Attempt 2 (pid
// 300, started by the launcher, pid 1): reads at `read` for 10 (its
// start-up), waits [at, at + 100) and [at + 110, at + 200), steps
// [at + 100, at + 110) and [at + 200, at + 210): its loop [at, at + 210).
void TwoAttempts(RankGroup* g, uint64_t read, uint64_t at) {
  g->Wait(0, 100);
  g->Step(100, 110);
  g->Wait(110, 200);
  g->Step(200, 210);
  const uint32_t second = g->AddProcess(300, 1);
  g->Read(second, read, read + 10);
  g->Call(second, EventKind::AppRegion, at, at + 100, kLoad);
  g->Call(second, EventKind::AppRegion, at + 100, at + 110, kStep);
  g->Call(second, EventKind::AppRegion, at + 110, at + 200, kLoad);
  g->Call(second, EventKind::AppRegion, at + 200, at + 210, kStep);
}

TEST(RankRestartTest, AttemptsOneAfterAnotherAreTheirLoopsSummed) {
  RankGroup g(0);
  TwoAttempts(&g, 1000, 1500);
  const RankFigures f = g.Measure();
  ASSERT_TRUE(f.loop);
  // 210 + 210, not the window [0, 1710) with the 790 between attempts and
  // the second attempt's start-up in it.
  EXPECT_EQ(f.loops, 2u);
  EXPECT_EQ(f.loop_ns(), 420u);
  EXPECT_EQ(f.batch_wait_ns, 380u);
  EXPECT_EQ(f.optimizer_steps, 4u);
  // Each attempt's start-up from its own first event: 0 and 500.
  EXPECT_EQ(f.startup_ns(), 500u);
  const Verdict v = VerdictOfOneRank(f, 2000);
  EXPECT_EQ(v.wait_per_mille(), 904u);  // 380 of 420, where 380 of 1710 read 22 %
}

TEST(RankRestartTest, ProcessesLoopingSideBySideAreOneLoop) {
  // The second process's loop [150, 360) overlaps the first one's: the
  // rank's one window [0, 360), as before.
  RankGroup g(0);
  TwoAttempts(&g, 50, 150);
  const RankFigures f = g.Measure();
  ASSERT_TRUE(f.loop);
  EXPECT_LE(f.loops, 1u);
  EXPECT_EQ(f.loop_ns(), 360u);
}

}  // namespace
}  // namespace dlprof::testing
