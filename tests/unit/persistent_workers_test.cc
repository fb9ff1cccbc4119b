// What persistent_workers=True would save (docs/ANALYSIS.md, "batch wait"
// and "Where the wait goes") on rank groups built by hand with answers worked
// out by hand: the workers' start-ups after a loader's first pass, and the
// waits at the passes' ends while torch shut non-persistent workers down;
// then the verdict's hand-over advice, which names that shut-down rather
// than the batches' size, and the loader it would save of; the start-up's
// advice of fork over spawn, only to workers that did not fork.
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
  // By loader, the same in all (loader 0's iter() and ends, 1700; the
  // second pass's batch, whose wait holds no `batch` mark here, -1's 300).
  uint64_t by_loader = 0;
  for (const LoaderWait& w : f.loader_waits) {
    by_loader += w.persistent_save_ns;
    EXPECT_EQ(w.persistent_save_ns, w.loader == 0 ? 1700u : 300u) << w.loader;
  }
  EXPECT_EQ(by_loader, 2000u);
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

// Both passes left early (a loop that takes one batch and breaks): each
// pass's worker still fetching a batch it began before the end's wait, for
// 500 of its 800 (a slow sample torch's shut-down waits for). Persistent
// workers would finish pass 1's at pass 2's start too: only its other 300
// is saved; pass 2's, the last, is saved whole. (It counted all 1600: 980
// ms where a loop's own clock said 417.)
TEST(PersistentWorkersTest, AShutDownWaitingForALeftoverFetchSavesItOnlyAtTheLastPass) {
  Group g(2);
  g.Iter(1000, 1100, kFirstPass);
  g.Wait(1200, 2000);
  g.Fetch(1, 1500, 1900);
  g.Flow(1, 1899, 1950, 1);
  g.Fetch(1, 2000, 2600);  // prefetched, never taken
  g.Wait(2100, 2900);
  g.PassEnd(2150);
  g.Iter(3000, 3100, kSecondPass);
  g.Wait(3200, 4000);
  g.Fetch(2, 3500, 3900);
  g.Flow(2, 3899, 3950, 2);
  g.Fetch(2, 4000, 4600);
  g.Wait(4100, 4900);
  g.PassEnd(4150);
  const RankFigures f = g.Measure();
  ASSERT_EQ(f.steps.size(), 6u);
  EXPECT_EQ(f.steps[2].request, StepRequest::kEnd);
  EXPECT_EQ(f.handover_ns, 1800u);
  EXPECT_EQ(f.pass_end_shutdown_ns, 1600u);  // the shut-downs, as the loop waited
  EXPECT_EQ(f.pass_end_leftover_ns, 500u);
  EXPECT_EQ(f.startup_after_first_pass_ns, 400u);
  const Verdict v = testing::VerdictOfOneRank(f, 5000);
  EXPECT_EQ(v.persistent_workers_save_ns(), 400u + 300u + 800u);
  uint64_t by_loader = 0;
  for (const LoaderWait& w : f.loader_waits) by_loader += w.persistent_save_ns;
  EXPECT_EQ(by_loader, 1500u);
}

TEST(PersistentWorkersTest, TheAdviceNamesTheLoaderItWouldSaveOf) {
  // Beside a training loader of persistent workers (loader 0, nothing to
  // save), a validation loader of non-persistent ones (loader 1): the
  // advice said "persistent_workers=True" alone, to a loop whose training
  // loader had them.
  Verdict v = testing::VerdictOfOneRank(TwoPasses(kFirstPass, kSecondPass), 5000);
  v.loader_waits = {{0, 3000, 10, "train.py:40", 0}, {1, 2000, 4, "train.py:52", 2000}};
  const std::string named = "persistent_workers=True for loader 1 at train.py:52 (it would "
                            "save about 2 us: the start-ups after the first pass and the "
                            "shut-downs";
  EXPECT_NE(WorkerStartupAdvice(v).find(named), std::string::npos) << WorkerStartupAdvice(v);
  EXPECT_NE(HandoverAdvice(v).find(named), std::string::npos) << HandoverAdvice(v);
  // Both would save: both named; one the marks do not name: none named.
  v.loader_waits[0].persistent_save_ns = 500;
  EXPECT_NE(WorkerStartupAdvice(v).find("persistent_workers=True for loader 0 at train.py:40 "
                                        "and loader 1 at train.py:52 (it"),
            std::string::npos)
      << WorkerStartupAdvice(v);
  v.loader_waits[0].loader = -1;
  EXPECT_NE(WorkerStartupAdvice(v).find("persistent_workers=True (it"), std::string::npos)
      << WorkerStartupAdvice(v);
}

TEST(PersistentWorkersTest, ForkIsAdvisedOnlyToWorkersThatDidNotFork) {
  // A main process and a worker that fetched: forked from it (fork), or
  // started as a new image (spawn's fork and exec). It said "fork rather
  // than spawn" to forked workers too.
  for (const bool forked : {true, false}) {
    Summary s;
    s.process_ids["pid 1 (python3)"].batch_waits = 4;
    Summary::ProcessId& worker = s.process_ids["pid 2 (python3)"];
    worker.ppid = 1;
    worker.batch_fetches = 4;
    worker.forked = forked;
    Verdict v = ComputeVerdict(s);
    EXPECT_EQ(v.worker_start,
              forked ? Verdict::WorkerStart::kForked : Verdict::WorkerStart::kExeced);
    EXPECT_EQ(WorkerStartupAdvice(v).find("fork rather than spawn") == std::string::npos, forked)
        << WorkerStartupAdvice(v);
  }
  // Not known (the whole run's counters): said, as before.
  EXPECT_NE(WorkerStartupAdvice(Verdict{}).find("fork rather than spawn"), std::string::npos);
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

TEST(PersistentWorkersTest, ALoaderMadeAnewEachPassIsRebuiltAfterSeveralNot) {
  // Persistent workers, a DataLoader made anew for each pass (two first
  // passes): the second's start-up (iter 100, its batch 300) is what
  // making it anew cost. A k-fold's loader, iterated twice and then made
  // anew for the next fold: its persistent workers saved the second
  // pass's start-up, and the third's is no rebuild (the review's k-fold
  // run was told "persistent_workers=True saves nothing").
  EXPECT_EQ(TwoPasses(kFirstPersistentPass, kFirstPersistentPass).rebuilt_persistent_ns, 400u);
  Group g(2);
  const uint32_t marks[] = {kFirstPersistentPass, kSecondPersistentPass, kFirstPersistentPass};
  for (uint64_t p = 0; p < 3; ++p) {
    const uint64_t t = 2000 * p;
    g.Iter(1000 + t, 1100 + t, marks[p]);
    g.Wait(1200 + t, 2000 + t);
    g.Fetch(1 + p % 2, 1500 + t, 1900 + t);
    g.Flow(1 + p % 2, 1899 + t, 1950 + t, 1 + p);
    g.Wait(2100 + t, 2900 + t);
    g.PassEnd(2150 + t);
  }
  const RankFigures f = g.Measure();
  EXPECT_EQ(f.rebuilt_persistent_ns, 0u);
  const Verdict v = testing::VerdictOfOneRank(f, 7000);
  for (const Finding& x : v.findings) {
    EXPECT_EQ(x.advice.find("saves nothing"), std::string::npos) << x.advice;
  }
}

TEST(PersistentWorkersTest, ALoaderOfWorkersNotPersistentMadeAnewEachPassIsToBeKept) {
  // `loader = DataLoader(...)` at the top of each epoch, workers not
  // persistent (two first passes of loader 0): the second's start-up and
  // both ends are what one DataLoader kept with persistent workers would
  // save; persistent_workers=True alone saves none of it (the review's
  // run of 3 epochs was told "persistent_workers=True ... would save about
  // 53.3 ms: the shut-downs", its 667.8 ms of start-ups unnamed).
  const RankFigures f = TwoPasses(kFirstPass, kFirstPass);
  EXPECT_EQ(f.startup_after_first_pass_ns, 400u);
  EXPECT_EQ(f.pass_end_shutdown_ns, 1600u);
  EXPECT_EQ(f.rebuilt_persistent_ns, 0u);
  uint64_t made_anew = 0;
  for (const LoaderWait& w : f.loader_waits) made_anew += w.made_anew_ns;
  EXPECT_EQ(made_anew, 400u);
  const Verdict v = testing::VerdictOfOneRank(f, 5000);
  EXPECT_EQ(v.persistent_workers_save_ns(), 2000u);
  const Finding* wait = testing::FindingOf(v, "batch_wait");
  ASSERT_NE(wait, nullptr);
  EXPECT_NE(wait->advice.find("one DataLoader kept across the passes (it is made anew each "
                              "pass), with persistent_workers=True (it would save about 2 us: "
                              "the start-ups after the first pass and the shut-downs at the "
                              "passes' ends)"),
            std::string::npos)
      << wait->advice;
  // One DataLoader iterated twice: persistent workers alone.
  const Verdict kept = testing::VerdictOfOneRank(TwoPasses(kFirstPass, kSecondPass), 5000);
  for (const Finding& x : kept.findings) {
    EXPECT_EQ(x.advice.find("one DataLoader kept"), std::string::npos) << x.advice;
  }
}

TEST(PersistentWorkersTest, AJobRestartedInANewProcessMadeNoDataLoaderAnew) {
  // One DataLoader, one pass, a process (the job run again, a torchrun
  // restart): each process's loader 0 ran its only pass. No start-up is a
  // later pass's (each process's L begins at 0: taken for one L, the second
  // process's was "made anew each pass", 731.6 ms claimed saved in a
  // review's run of three such processes).
  Group g(2);
  const uint32_t second = g.AddProcess(300, 1);
  const uint32_t mains[] = {0, second};
  for (uint64_t p = 0; p < 2; ++p) {
    const uint64_t t = 2000 * p;
    g.Iter(1000 + t, 1100 + t, kFirstPass, mains[p]);
    g.Wait(1200 + t, 2000 + t, mains[p]);
    g.Fetch(1 + p, 1500 + t, 1900 + t);
    g.Flow(1 + p, 1899 + t, 1950 + t, 1 + p);
    g.Wait(2100 + t, 2900 + t, mains[p]);
    g.PassEnd(2150 + t, mains[p]);
  }
  const RankFigures f = g.Measure();
  EXPECT_EQ(f.startup_after_first_pass_ns, 0u);
  for (const LoaderWait& w : f.loader_waits) EXPECT_EQ(w.made_anew_ns, 0u) << w.loader;
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
