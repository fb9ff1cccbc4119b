// The whole run's verdict from a bounded trace's counters
// (lib/analysis/findings/whole_run_verdict.h): the full verdict's rules and
// thresholds on the counters' loop, batch waits and causes, worked out by
// hand; the loop summed over the ranks.
#include "lib/analysis/findings/whole_run_verdict.h"

#include <gtest/gtest.h>

#include <string>

namespace dlprof::analysis {
namespace {

constexpr uint64_t kMs = 1000000;
constexpr uint64_t kS = 1000 * kMs;

// A loop of `loop` that waited `wait` over `batches` batches, the wait split
// reading / preprocessing / hand-over / worker start-up as given.
template <typename Loop>
void SetLoop(Loop* l, uint64_t loop, uint64_t batches, uint64_t reading, uint64_t preprocessing,
             uint64_t handover, uint64_t startup) {
  l->loop_ns = loop;
  l->batches = batches;
  l->batch_wait_ns = reading + preprocessing + handover + startup;
  l->causes.reading_ns = reading;
  l->causes.preprocessing_ns = preprocessing;
  l->causes.handover_ns = handover;
  l->causes.worker_startup_ns = startup;
  l->causes.own_waits = batches;
}

WholeRun RunOf(uint64_t length) {
  WholeRun w;
  w.present = true;
  w.start_ns = 100 * kS;
  w.end_ns = w.start_ns + length;
  return w;
}

const Finding* Rule(const Verdict& v, const std::string& rule) {
  for (const Finding& f : v.findings) {
    if (f.rule == rule) return &f;
  }
  return nullptr;
}

TEST(WholeRunVerdictTest, WaitingForDataNamesTheCauseAndAdvisesForIt) {
  WholeRun w = RunOf(120 * kS);
  // 30 s of wait in a 100 s loop: reading 24 s, preprocessing 3, start-up 3.
  SetLoop(&w, 100 * kS, 1000, 24 * kS, 3 * kS, 0, 3 * kS);
  w.steps = 1000;
  const Verdict v = WholeRunVerdict(w);
  EXPECT_EQ(v.bound, Bound::kData);
  EXPECT_EQ(v.loop_basis, LoopBasis::kDataLoader);
  EXPECT_EQ(v.run_ns, 120 * kS);
  EXPECT_EQ(v.loop_ns, 100 * kS);
  EXPECT_EQ(v.wait_loop_ns, 100 * kS);
  EXPECT_EQ(v.batch_wait_ns, 30 * kS);
  EXPECT_EQ(v.steps, 1000u);
  EXPECT_TRUE(v.optimizer_steps);
  EXPECT_EQ(v.loop_steps, 1000u);
  EXPECT_TRUE(v.split);
  EXPECT_EQ(v.cause, WaitCause::kReading);
  ASSERT_EQ(v.findings.size(), 2u);
  EXPECT_EQ(v.findings[0].rule, "batch_wait");
  EXPECT_EQ(v.findings[0].what,
            "The training loop waited for data 30.0 % of the loop (30.00 s over 1000 batches); "
            "of that wait, reading 80.0 % (24.00 s).");
  EXPECT_NE(v.findings[0].advice.find("the loader was reading data files"), std::string::npos);
  // Worker start-up 10 % of the wait: a finding of its own, without the
  // passes the counters do not keep.
  EXPECT_EQ(v.findings[1].rule, "worker_startup");
  EXPECT_EQ(v.findings[1].what,
            "The loop waited 3.00 s for its loader workers to start: 10.0 % of the batch wait.");
  // How the workers started unknown (no counters said), one pass: both
  // ways advised.
  EXPECT_NE(v.findings[1].advice.find("fork rather than spawn"), std::string::npos);
  EXPECT_EQ(v.findings[1].advice.find("persistent_workers"), std::string::npos);
}

// Workers forked afresh each of four passes (a torch DataLoader without
// persistent_workers): the advice keeps them, and says nothing of spawn,
// which they did not (it said "fork rather than spawn" to forked workers,
// and never persistent_workers=True). Spawned ones are told both.
TEST(WholeRunVerdictTest, WorkersStartingEachPassAreAdvisedForHowTheyStarted) {
  for (const bool forked : {true, false}) {
    WholeRun w = RunOf(120 * kS);
    SetLoop(&w, 100 * kS, 1000, 10 * kS, 3 * kS, 0, 7 * kS);
    w.regions["loader_iter"].count = 4;
    (forked ? w.workers_forked : w.workers_execed) = true;
    const Verdict v = WholeRunVerdict(w);
    const Finding* f = Rule(v, "worker_startup");
    ASSERT_NE(f, nullptr);
    EXPECT_NE(f->advice.find("persistent_workers=True (the workers started again each pass)"),
              std::string::npos)
        << f->advice;
    EXPECT_EQ(f->advice.find("fork rather than spawn") == std::string::npos, forked) << f->advice;
  }
}

TEST(WholeRunVerdictTest, TheBatchWaitThresholdIsTheVerdicts) {
  WholeRun below = RunOf(100 * kS);
  SetLoop(&below, 100 * kS, 100, 0, 9999 * kMs, 0, 0);  // 9.999 %
  const Verdict v = WholeRunVerdict(below);
  EXPECT_EQ(v.bound, Bound::kNeither);
  EXPECT_EQ(Rule(v, "batch_wait"), nullptr);
  WholeRun at = RunOf(100 * kS);
  SetLoop(&at, 100 * kS, 100, 0, 10 * kS, 0, 0);
  const Verdict a = WholeRunVerdict(at);
  EXPECT_EQ(a.bound, Bound::kData);
  EXPECT_EQ(a.cause, WaitCause::kPreprocessing);
  ASSERT_NE(Rule(a, "batch_wait"), nullptr);
  EXPECT_EQ(Rule(a, "worker_startup"), nullptr);
}

TEST(WholeRunVerdictTest, RanksLoopsAreSummedAndASlowRankIsNamed) {
  WholeRun w = RunOf(20 * kS);
  // Three ranks of 10 s loops: 1 s, 1 s and 3 s of wait; a fourth rank
  // without a loader (no wait) adds its loop but not to the waits' loop.
  const uint64_t waits[] = {1 * kS, 1 * kS, 3 * kS, 0};
  for (int32_t rank = 0; rank < 4; ++rank) {
    WholeRunRank r;
    r.rank = rank;
    SetLoop(&r, 10 * kS, waits[rank] > 0 ? 100 : 0, waits[rank], 0, 0, 0);
    w.ranks.push_back(r);
  }
  const Verdict v = WholeRunVerdict(w);
  EXPECT_EQ(v.loop_ns, 40 * kS);
  EXPECT_EQ(v.wait_loop_ns, 30 * kS);
  EXPECT_EQ(v.batch_wait_ns, 5 * kS);
  EXPECT_EQ(v.steps, 300u);
  EXPECT_EQ(v.bound, Bound::kData);  // 16.6 % of the waiting ranks' loops
  const Finding* slow = Rule(v, "slow_rank");
  ASSERT_NE(slow, nullptr);
  // The median of 4 ranks (3, 1, 1, 0 s) is the lower middle one: 1 s.
  EXPECT_EQ(slow->what,
            "Rank 2 waited 3.00 s for batches, the median rank 1.00 s: its loader holds the "
            "other ranks back.");
  EXPECT_EQ(slow->cost_ns, 2 * kS);
}

TEST(WholeRunVerdictTest, EvenRanksNameNoSlowOne) {
  WholeRun w = RunOf(20 * kS);
  for (int32_t rank = 0; rank < 3; ++rank) {
    WholeRunRank r;
    r.rank = rank;
    SetLoop(&r, 10 * kS, 100, 2 * kS, 0, 0, 0);
    w.ranks.push_back(r);
  }
  const Verdict v = WholeRunVerdict(w);
  EXPECT_EQ(v.bound, Bound::kData);
  EXPECT_EQ(Rule(v, "slow_rank"), nullptr);
}

TEST(WholeRunVerdictTest, AHandOverWithoutItsPartsIsAdvisedWithoutThem) {
  WholeRun w = RunOf(60 * kS);
  SetLoop(&w, 50 * kS, 500, 0, 1 * kS, 20 * kS, 0);
  const Verdict v = WholeRunVerdict(w);
  ASSERT_FALSE(v.findings.empty());
  EXPECT_EQ(v.cause, WaitCause::kHandover);
  EXPECT_EQ(v.findings[0].advice.rfind("the batches were made but slow to arrive: smaller", 0),
            0u)
      << v.findings[0].advice;
}

TEST(WholeRunVerdictTest, UnsplitWaitsLeaveTheCauseUnnamed) {
  WholeRun w = RunOf(60 * kS);
  SetLoop(&w, 50 * kS, 500, 0, 0, 0, 0);
  w.batch_wait_ns = 20 * kS;
  w.causes.unsplit_ns = 20 * kS;  // waits for workers' batches, none sampled
  const Verdict v = WholeRunVerdict(w);
  EXPECT_EQ(v.bound, Bound::kData);
  EXPECT_FALSE(v.split);
  ASSERT_FALSE(v.findings.empty());
  EXPECT_EQ(v.findings[0].what,
            "The training loop waited for data 40.0 % of the loop (20.00 s over 500 batches).");
}

TEST(WholeRunVerdictTest, AGpuIdleMostOfTheLoopWithoutWaitingIsTheHosts) {
  WholeRun w = RunOf(120 * kS);
  SetLoop(&w, 100 * kS, 1000, 5 * kS, 0, 0, 0);  // 5 % waiting
  w.gpu = true;
  w.gpu_busy_ns = 30 * kS;
  w.gpu_first_ns = 101 * kS;
  w.gpu_last_ns = 215 * kS;
  const Verdict v = WholeRunVerdict(w);
  EXPECT_TRUE(v.has_gpu);
  EXPECT_EQ(v.gpu_busy_ns, 30 * kS);
  EXPECT_EQ(v.bound, Bound::kHost);  // idle 70 % of the loop
  // Idle just under half the loop: neither.
  w.gpu_busy_ns = 51 * kS;
  EXPECT_EQ(WholeRunVerdict(w).bound, Bound::kNeither);
  // Waiting for data comes first, idle or not.
  w.gpu_busy_ns = 10 * kS;
  SetLoop(&w, 100 * kS, 1000, 20 * kS, 0, 0, 0);
  EXPECT_EQ(WholeRunVerdict(w).bound, Bound::kData);
}

TEST(WholeRunVerdictTest, GpuWorkWithoutALoopIsMeasuredOverTheGpusWindow) {
  WholeRun w = RunOf(60 * kS);
  w.gpu = true;
  w.gpu_busy_ns = 12 * kS;
  w.gpu_first_ns = 110 * kS;
  w.gpu_last_ns = 150 * kS;
  const Verdict v = WholeRunVerdict(w);
  EXPECT_EQ(v.loop_basis, LoopBasis::kGpu);
  EXPECT_EQ(v.loop_ns, 40 * kS);
  EXPECT_EQ(v.bound, Bound::kHost);  // busy 30 % of its window
}

TEST(WholeRunVerdictTest, NoLoopNoVerdict) {
  WholeRun steps_only = RunOf(30 * kS);
  steps_only.loop_ns = 25 * kS;
  steps_only.steps = 50;
  const Verdict s = WholeRunVerdict(steps_only);
  EXPECT_EQ(s.loop_basis, LoopBasis::kSteps);
  EXPECT_EQ(s.loop_ns, 25 * kS);
  EXPECT_EQ(s.loop_steps, 50u);
  EXPECT_EQ(s.bound, Bound::kUnknown);  // no wait, and GPU work is not in the counters
  EXPECT_TRUE(s.findings.empty());
  const Verdict none = WholeRunVerdict(RunOf(30 * kS));
  EXPECT_EQ(none.loop_basis, LoopBasis::kRun);
  EXPECT_EQ(none.loop_ns, 30 * kS);
  EXPECT_EQ(none.bound, Bound::kUnknown);
}

// A loop of steps whose measured wait is small while what it cannot see is
// not (the counters' step unseen figures, ranks summed): not measured, the
// bound unknown, the reason the full verdict's (verdict.cc, StepUnmeasured),
// and no batch wait finding. (It read "not held back by data (batch wait
// 0.0 % of the loop)" where the kept events' verdict said it was not known:
// integration.step_gaps.)
TEST(WholeRunVerdictTest, ALoopOfStepsWhoseWaitItCannotSeeIsNotMeasured) {
  struct Case {
    uint64_t unjoined, other, map;
    const char* reason;
  };
  for (const Case& c : {Case{6 * kS, 0, 0, "spread out"}, Case{0, 6 * kS, 0, "another thread"},
                        Case{0, 0, 20 * kS, "memory map"}}) {
    WholeRun w = RunOf(60 * kS);
    w.ranks.resize(2);
    for (size_t r = 0; r < 2; ++r) {
      WholeRunRank& k = w.ranks[r];
      k.rank = static_cast<int32_t>(r);
      SetLoop(&k, 25 * kS, 500, 100 * kMs, 0, 0, 0);
      k.loop_of_steps = true;
      k.steps = 500;
      k.steps_unjoined_ns = c.unjoined / 2;
      k.other_threads_io_ns = c.other / 2;
      k.steps_map_live_ns = c.map / 2;
    }
    const Verdict v = WholeRunVerdict(w);
    EXPECT_EQ(v.loop_basis, LoopBasis::kSteps) << c.reason;
    EXPECT_TRUE(v.wait_unmeasured) << c.reason;
    EXPECT_FALSE(v.has_batch_wait) << c.reason;
    EXPECT_EQ(v.bound, Bound::kUnknown) << c.reason;
    EXPECT_NE(v.batch_wait_missing.find(c.reason), std::string::npos) << v.batch_wait_missing;
    EXPECT_EQ(Rule(v, "batch_wait"), nullptr) << c.reason;
  }
  // Below the share (under 10 % of the 50 s loop): the wait stands.
  WholeRun w = RunOf(60 * kS);
  SetLoop(&w, 50 * kS, 500, 100 * kMs, 0, 0, 0);
  w.loop_of_steps = true;
  w.steps = 500;
  w.steps_map_live_ns = 4 * kS;
  const Verdict v = WholeRunVerdict(w);
  EXPECT_FALSE(v.wait_unmeasured);
  EXPECT_EQ(v.bound, Bound::kNeither);
}

// Four ranks whose loops are one length while their waits differ (2.4 s,
// 1.1 s, 1.0 s and 0.7 s of 10 s: an allreduce each step waits for the
// slow one): in lockstep, the job's wait is at least the slowest rank's,
// 24.0 % of a rank's loop, not the sums' 13.0 %. Loops as long as their
// waits make them (ranks at their own pace) keep the sums.
TEST(WholeRunVerdictTest, RanksThatStepTogetherWaitAsTheSlowestRank) {
  const uint64_t waits[] = {2400 * kMs, 1100 * kMs, 1000 * kMs, 700 * kMs};
  for (const bool together : {true, false}) {
    WholeRun w = RunOf(12 * kS);
    for (int32_t r = 0; r < 4; ++r) {
      WholeRunRank k;
      k.rank = r;
      SetLoop(&k, together ? 10 * kS : 7600 * kMs + waits[r], 400, waits[r], 0, 0, 0);
      k.loop_start_ns = w.start_ns + r * kMs;  // begun a little apart
      k.loop_end_ns = k.loop_start_ns + k.loop_ns;
      w.ranks.push_back(k);
    }
    const Verdict v = WholeRunVerdict(w);
    EXPECT_EQ(v.bound, Bound::kData) << together;
    EXPECT_EQ(v.lockstep.found, together);
    if (together) {
      EXPECT_EQ(v.lockstep.ranks, 4u);
      EXPECT_EQ(v.lockstep.wait_ns, 2400 * kMs);
      EXPECT_EQ(v.wait_per_mille(), 240u);
    } else {
      EXPECT_EQ(v.wait_per_mille(), PerMille(5200 * kMs, v.wait_loop_ns));
    }
  }
}

}  // namespace
}  // namespace dlprof::analysis
