// The whole run's checkpoint saves from a bounded trace's counters
// (lib/analysis/whole_run_saves.h): counters files written with the
// format's own functions and read as dlprof-dump reads them
// (ReadWholeRun). A save counts in the loop's window or within a step's
// time after it, blocking on the loop's thread, else in the background; a
// final save of the loop's thread ends the loop; the saves of a cache (four
// or more of its files loaded as data) are none; the verdict says so.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "lib/analysis/findings/whole_run_verdict.h"
#include "lib/analysis/whole_run.h"
#include "lib/format/counters.h"
#include "tests/helpers/counters_dir.h"

namespace dlprof::analysis {
namespace {

constexpr uint64_t kMs = 1000000;
constexpr uint64_t kS = 1000 * kMs;
constexpr uint64_t kT0 = 1000 * kS;  // the run's first interval's start
constexpr uint32_t kStepName = 1;    // "optimizer_step"

class WholeRunSavesTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(dir_.empty()); }

  // One process: a 4 s interval whose loop is 10 optimizer steps from 1 s
  // to 3 s (a step's time 200 ms), then `saves`.
  WholeRun Run(const format::SavesRecord& saves, uint64_t step_wait_ns = 0) {
    std::vector<uint8_t> b;
    format::AppendStringsRecord({{kStepName, "optimizer_step"}}, &b);
    format::IntervalRecord r;
    r.start_ns = kT0;
    r.end_ns = kT0 + 4 * kS;
    r.regions.push_back(
        format::RegionRow{kStepName, 10, 100 * kMs, 10 * kMs, kT0 + kS, kT0 + 3 * kS});
    format::AppendIntervalRecord(r, &b);
    if (step_wait_ns > 0) {
      format::StepRecord steps;
      steps.start_ns = kT0;
      steps.waits = 10;
      steps.wait_ns = step_wait_ns;
      steps.loop_start_ns = kT0 + kS;
      format::AppendStepRecord(steps, &b);
    }
    format::SavesRecord s = saves;
    s.start_ns = kT0;
    s.loop_threads = {1};
    format::AppendSavesRecord(s, &b);
    dir_.Add(dlprof::testing::SegmentProcess(1, "/bin/train"), b);
    return dir_.Read();
  }

  dlprof::testing::CountersDir dir_{"whole_run_saves_test"};
};

// A save [from_ms, to_ms) after kT0 of file `file`, on the loop's thread
// (1) or another (2).
format::SaveSample Save(uint64_t from_ms, uint64_t to_ms, bool loop_thread, uint32_t file = 9) {
  return format::SaveSample{kT0 + from_ms * kMs, kT0 + to_ms * kMs, 1 << 20, 5 * kMs, file,
                            loop_thread ? 1u : 2u};
}

TEST_F(WholeRunSavesTest, SavesInTheLoopBlockItOnItsThreadAndTheLastOneEndsIt) {
  format::SavesRecord r;
  r.saves = {Save(500, 600, true),      // at start-up: stopped no loop
             Save(2000, 2100, true),    // blocking
             Save(2050, 2250, false),   // in the background
             Save(3050, 3350, true),    // the final weights: the loop's, and its end
             Save(3400, 3500, false)};  // more than a step after the loop: none
  const WholeRun w = Run(r);
  ASSERT_TRUE(w.has_checkpoint);
  EXPECT_EQ(w.checkpoint.saves, 3u);
  EXPECT_EQ(w.checkpoint.bytes, 3u << 20);
  EXPECT_EQ(w.checkpoint.write_ns, 15 * kMs);
  EXPECT_EQ(w.checkpoint.blocking_ns, 400 * kMs);
  EXPECT_EQ(w.checkpoint.background_ns, 200 * kMs);
  EXPECT_EQ(w.checkpoint.ns, 550 * kMs);
  EXPECT_EQ(w.loop_end_ns, kT0 + 3350 * kMs);
  EXPECT_EQ(w.loop_ns, 2350 * kMs);
  // 400 ms of a 2.35 s loop: 17.0 %, over the verdict's tenth.
  const Verdict v = WholeRunVerdict(w);
  EXPECT_EQ(v.bound, Bound::kCheckpoint);
  ASSERT_FALSE(v.findings.empty());
  EXPECT_EQ(v.findings[0].rule, "checkpoint");
  EXPECT_NE(v.findings[0].what.find("3 checkpoint saves 17.0 % of the loop"), std::string::npos)
      << v.findings[0].what;
}

// Samples cached with torch.save, four of them loaded as data: those
// saves were the cache's; the checkpoint of another file still counts.
TEST_F(WholeRunSavesTest, ACachesSavesAreNoCheckpoints) {
  format::SavesRecord r;
  for (uint32_t f = 10; f < 14; ++f) r.saves.push_back(Save(1000 + 100 * f, 1050 + 100 * f, true, f));
  r.saves.push_back(Save(2800, 2900, true, 20));
  r.loaded = {10, 11, 12, 13};
  const WholeRun w = Run(r);
  EXPECT_EQ(w.checkpoint.saves, 1u);
  EXPECT_EQ(w.checkpoint.blocking_ns, 100 * kMs);
}

// A loop without a DataLoader filling the cache on its thread: the fills,
// which its step windows leave out as every save, are its steps' wait, as
// the full events count them: their writes reading, the rest preprocessing.
TEST_F(WholeRunSavesTest, ACachesFillsAreTheStepsWait) {
  format::SavesRecord r;
  for (uint32_t f = 10; f < 14; ++f) r.saves.push_back(Save(1000 + 100 * f, 1050 + 100 * f, true, f));
  r.loaded = {10, 11, 12, 13};
  const WholeRun w = Run(r, 50 * kMs);
  EXPECT_FALSE(w.has_checkpoint);
  EXPECT_EQ(w.batch_wait_ns, 250 * kMs);
  EXPECT_EQ(w.causes.reading_ns, 70 * kMs);
  EXPECT_EQ(w.causes.preprocessing_ns, 180 * kMs);
}

// Three files loaded back (the best model reloaded each epoch): checkpoints
// still, every save.
TEST_F(WholeRunSavesTest, FewerFilesLoadedThanACachesAreCheckpointsReloaded) {
  format::SavesRecord r;
  for (uint32_t f = 10; f < 14; ++f) r.saves.push_back(Save(1000 + 100 * f, 1050 + 100 * f, true, f));
  r.loaded = {10, 11, 12};
  EXPECT_EQ(Run(r).checkpoint.saves, 4u);
}

TEST_F(WholeRunSavesTest, ARunWithoutSavesHasNoCheckpoint) {
  const WholeRun w = Run(format::SavesRecord());
  EXPECT_FALSE(w.has_checkpoint);
  EXPECT_EQ(w.loop_ns, 2 * kS);
  EXPECT_NE(WholeRunVerdict(w).bound, Bound::kCheckpoint);
}

}  // namespace
}  // namespace dlprof::analysis
