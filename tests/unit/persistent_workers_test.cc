// What persistent_workers=True would save (docs/ANALYSIS.md, "batch wait"
// and "Where the wait goes") on rank groups built by hand with answers worked
// out by hand: the workers' start-ups after a loader's first pass, and the
// waits at the passes' ends while torch shut non-persistent workers down;
// then the verdict's hand-over advice, which names that shut-down rather
// than the batches' size.
#include <gtest/gtest.h>

#include <string>

#include "lib/analysis/findings/verdict.h"
#include "tests/helpers/rank_group.h"

namespace dlprof::analysis {
namespace {

using namespace testing::rank_group;  // kFirstPass, kSecondPass, ...
using Group = testing::RankGroup;

// Two passes over a loader of one worker a pass (1, then 2). Each pass:
// iter() 100 (start-up), one batch whose worker begins 300 into its wait
// (start-up 300, preprocessing 400, hand-over 100), and the request that
// finds the pass over, 800 long (hand-over: the workers shut down).
RankFigures TwoPasses(uint32_t first_mark, uint32_t second_mark) {
  Group g(2);
  g.Iter(1000, 1100, first_mark);
  g.Wait(1200, 2000);
  g.Fetch(1, 1500, 1900);
  g.Flow(1, 1899, 1950, 1);
  g.Wait(2100, 2900);
  g.PassEnd(2150);
  g.Iter(3000, 3100, second_mark);
  g.Wait(3200, 4000);
  g.Fetch(2, 3500, 3900);
  g.Flow(2, 3899, 3950, 2);
  g.Wait(4100, 4900);
  g.PassEnd(4150);
  return g.Measure();
}

TEST(PersistentWorkersTest, TheShutDownsAtThePassesEndsAreSavedToo) {
  const RankFigures f = TwoPasses(kFirstPass, kSecondPass);
  ASSERT_EQ(f.steps.size(), 6u);
  EXPECT_EQ(f.steps[2].request, StepRequest::kEnd);
  EXPECT_EQ(f.handover_ns, 1800u);
  // The second pass's start-up (iter 100, its batch 300), and both passes'
  // ends: pass 1's too, which persistent workers would not have shut down.
  EXPECT_EQ(f.startup_after_first_pass_ns, 400u);
  EXPECT_EQ(f.pass_end_shutdown_ns, 1600u);
  // The ends are no batch's hand-over: the batches' causes hold the rest.
  uint64_t causes = 0;
  for (uint64_t ns : f.handover_cause_ns) causes += ns;
  EXPECT_EQ(causes, 200u);
  const Verdict v = testing::VerdictOfOneRank(f, 5000);
  EXPECT_EQ(v.cause, WaitCause::kHandover);
  EXPECT_EQ(v.persistent_workers_save_ns(), 2000u);
  EXPECT_NE(VerdictJson(v).find("\"persistent_workers_save_ns\":2000,"
                                "\"pass_end_shutdown_ns\":1600,"),
            std::string::npos)
      << VerdictJson(v);
  // Most of the hand-over was the shut-downs: the advice says so and is
  // persistent workers, not the batches' size (they were 500 bytes).
  const Finding* wait = testing::FindingOf(v, "batch_wait");
  ASSERT_NE(wait, nullptr);
  EXPECT_NE(wait->advice.find("at the passes' ends while torch shut the workers down"),
            std::string::npos)
      << wait->advice;
  EXPECT_NE(wait->advice.find("persistent_workers=True (it would save about 2 us: the "
                              "start-ups after the first pass and the shut-downs"),
            std::string::npos)
      << wait->advice;
  EXPECT_EQ(wait->advice.find("smaller batches"), std::string::npos) << wait->advice;
  const Finding* startup = testing::FindingOf(v, "worker_startup");
  ASSERT_NE(startup, nullptr);
  EXPECT_NE(startup->advice.find("it would save about 2 us"), std::string::npos)
      << startup->advice;
}

TEST(PersistentWorkersTest, PersistentPassesSaveNothing) {
  // The same loop with persistent workers: no start-up to save, and the
  // passes' ends shut nothing down (torch keeps the workers).
  const RankFigures f = TwoPasses(kFirstPersistentPass, kSecondPersistentPass);
  EXPECT_EQ(f.startup_after_first_pass_ns, 0u);
  EXPECT_EQ(f.pass_end_shutdown_ns, 0u);
  const Verdict v = testing::VerdictOfOneRank(f, 5000);
  EXPECT_EQ(v.persistent_workers_save_ns(), 0u);
  for (const Finding& x : v.findings) {
    EXPECT_EQ(x.advice.find("persistent_workers=True"), std::string::npos) << x.advice;
  }
}

TEST(PersistentWorkersTest, UnmarkedPassesClaimNoShutDown) {
  // Without pass marks nothing tells the workers' kind: the ends stay the
  // loader's machinery, as before (hand-over, no saving claimed for them).
  Group g(1);
  g.Iter(1000, 1100, kOther);
  g.Wait(1200, 2000);
  g.Fetch(1, 1500, 1900);
  g.Flow(1, 1899, 1950, 1);
  g.Wait(2100, 2200);
  g.PassEnd(2150);
  const RankFigures f = g.Measure();
  EXPECT_EQ(f.pass_end_shutdown_ns, 0u);
  EXPECT_EQ(f.handover_ns, 200u);
}

}  // namespace
}  // namespace dlprof::analysis
