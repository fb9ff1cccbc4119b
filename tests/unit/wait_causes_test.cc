// The batch wait split by cause (lib/analysis/meters/wait_causes.h, docs/ANALYSIS.md
// "Where the wait goes") on constructed rank groups with known answers: a
// main process that waits for batches and loader workers that fetch them
// and read, each case worked out by hand; then the verdict that names the
// cause and orders the findings after it.
#include "lib/analysis/meters/wait_causes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "lib/analysis/findings/verdict.h"
#include "tests/helpers/rank_group.h"

namespace dlprof::analysis {
namespace {

using namespace testing::rank_group;  // kLoad, kData, ...
using Group = testing::RankGroup;

struct Split {
  uint64_t reading, preprocessing, handover, worker_startup = 0;
  bool operator==(const Split& o) const {
    return reading == o.reading && preprocessing == o.preprocessing && handover == o.handover &&
           worker_startup == o.worker_startup;
  }
};

std::ostream& operator<<(std::ostream& os, const Split& s) {
  return os << "{reading " << s.reading << ", preprocessing " << s.preprocessing << ", handover "
            << s.handover << ", worker start-up " << s.worker_startup << "}";
}

Split StepSplit(const RankFigures& f, size_t i) {
  const RankStep& s = f.steps.at(i);
  EXPECT_EQ(s.reading_ns + s.preprocessing_ns + s.handover_ns + s.worker_startup_ns,
            s.batch_wait_ns);
  return {s.reading_ns, s.preprocessing_ns, s.handover_ns, s.worker_startup_ns};
}

TEST(WaitCausesTest, TheProducingWorkersReadsInsideTheWait) {
  Group g(1);
  g.Wait(1000, 2000);
  g.Fetch(1, 500, 1900);
  g.Read(1, 600, 800);                // before the wait: not this wait's
  g.Read(1, 900, 1100);               // 100 of it inside
  g.Read(1, 1150, 1400);              // 250
  g.Read(1, 1500, 1600, kCode);       // code: preprocessing
  g.Write(1, 1650, 1680);             // a write: preprocessing
  g.Read(1, 1700, 1750);              // 50
  g.Flow(1, 1899, 1995, 7);
  const RankFigures f = g.Measure();
  ASSERT_EQ(f.steps.size(), 1u);
  // [1000, 1900): 400 reading, 500 the worker's other work; 100 hand-over.
  EXPECT_EQ(StepSplit(f, 0), (Split{400, 500, 100}));
  EXPECT_EQ(f.reading_ns, 400u);
  EXPECT_EQ(f.preprocessing_ns, 500u);
  EXPECT_EQ(f.handover_ns, 100u);
}

TEST(WaitCausesTest, AFetchBegunAfterTheWaitAndABatchReadyBeforeIt) {
  // (The worker's reads before the wait and before its fetch are not this
  // batch's.)
  Group g(1);
  // Step 1: the batch was made before the loop asked: all hand-over.
  g.Fetch(1, 100, 400);
  g.Read(1, 150, 350);
  g.Flow(1, 399, 1050, 1);
  g.Wait(1000, 1100);
  // Step 2: the worker began after the wait (starting, or the index on its
  // way): the producer's side, preprocessing.
  g.Wait(2000, 3000);
  g.Fetch(1, 2200, 2700);
  g.Read(1, 2300, 2350);
  g.Flow(1, 2699, 2990, 2);
  const RankFigures f = g.Measure();
  ASSERT_EQ(f.steps.size(), 2u);
  EXPECT_EQ(StepSplit(f, 0), (Split{0, 0, 100}));
  EXPECT_EQ(StepSplit(f, 1), (Split{50, 650, 300}));
  EXPECT_EQ(f.batch_wait_ns, 1100u);
  EXPECT_EQ(f.reading_ns + f.preprocessing_ns + f.handover_ns, f.batch_wait_ns);
}

TEST(WaitCausesTest, TheFlowNamesTheProducerNotTheBusiestWorker) {
  Group g(2);
  g.Wait(1000, 2000);
  // Worker 2 reads all through the wait for a later batch; worker 1, whose
  // batch this is, computes.
  g.Fetch(2, 900, 2500);
  g.Read(2, 950, 2400);
  g.Fetch(1, 800, 1800);
  g.Flow(1, 1799, 1990, 11);
  g.Flow(2, 2499, 3050, 12);
  g.Wait(3000, 3100);
  const RankFigures f = g.Measure();
  ASSERT_EQ(f.steps.size(), 2u);
  EXPECT_EQ(StepSplit(f, 0), (Split{0, 800, 200}));
  // Worker 2's batch: ready at 2500, before the second wait.
  EXPECT_EQ(StepSplit(f, 1), (Split{0, 0, 100}));
}

TEST(WaitCausesTest, OtherFlowsAreNotBatches) {
  Group g(2);
  g.Wait(1000, 2000);
  g.Fetch(1, 900, 1500);  // flowless: the fallback's
  g.Read(1, 1000, 1300);
  g.Fetch(2, 900, 1900);
  g.Read(2, 1000, 1800);
  g.Flow(2, 1899, 1990, 5, kOther);  // a user's flow, not a batch's
  const RankFigures f = g.Measure();
  // No batch flow: the latest unmatched fetch that ended by the wait's end,
  // worker 2's.
  EXPECT_EQ(StepSplit(f, 0), (Split{800, 100, 100}));
}

TEST(WaitCausesTest, WithoutWorkersTheWaitIsTheMainProcessesOwnWork) {
  Group g(0);  // num_workers=0
  g.Wait(1000, 2000);
  g.Read(0, 1100, 1400);
  g.Read(0, 1500, 1600, kCode);
  g.Wait(3000, 3500);  // no reads: all preprocessing
  const RankFigures f = g.Measure();
  ASSERT_EQ(f.steps.size(), 2u);
  EXPECT_EQ(StepSplit(f, 0), (Split{300, 700, 0}));
  EXPECT_EQ(StepSplit(f, 1), (Split{0, 500, 0}));
}

TEST(WaitCausesTest, WithoutWorkersPinningTheBatchIsHandOver) {
  Group g(0);  // num_workers=0, pin_memory: the batch is made, then pinned
  g.Wait(1000, 2000);
  g.Read(0, 1100, 1400);
  g.Pin(0, 1700, 1950);
  g.Wait(3000, 3500);  // a pin outside any wait counts nowhere
  g.Pin(0, 2600, 2700);
  const RankFigures f = g.Measure();
  ASSERT_EQ(f.steps.size(), 2u);
  EXPECT_EQ(StepSplit(f, 0), (Split{300, 450, 250}));
  EXPECT_EQ(StepSplit(f, 1), (Split{0, 500, 0}));
}

TEST(WaitCausesTest, ALoaderThatRecordsNoFetchesReadsInAnyProcess) {
  // Workers without fetch_batch (a loader of one's own, annotated with a
  // load_batch region only): the group's data reads during the wait, their
  // union, are reading.
  Group g(2);
  g.Wait(1000, 2000);
  g.Read(1, 900, 1300);
  g.Read(2, 1200, 1500);
  g.Read(2, 1900, 2100);
  const RankFigures f = g.Measure();
  EXPECT_EQ(StepSplit(f, 0), (Split{600, 400, 0}));
}

TEST(WaitCausesTest, WithWorkersAWaitNobodyFetchedForIsHandOver) {
  Group g(1);
  g.Fetch(1, 100, 900);
  g.Read(1, 200, 800);
  g.Flow(1, 899, 1990, 3);
  g.Wait(1000, 2000);
  // The call that finds the pass over (shutting the workers down): nothing
  // was fetched for it.
  g.Wait(2100, 2400);
  // A loader without workers beside it (validation): the main process reads.
  g.Wait(3000, 4000);
  g.Read(0, 3200, 3500);
  const RankFigures f = g.Measure();
  ASSERT_EQ(f.steps.size(), 3u);
  EXPECT_EQ(StepSplit(f, 0), (Split{0, 0, 1000}));
  EXPECT_EQ(StepSplit(f, 1), (Split{0, 0, 300}));
  EXPECT_EQ(StepSplit(f, 2), (Split{300, 700, 0}));
}

TEST(WaitCausesTest, AFetchOfTheWaitingProcessItselfIsItsProducer) {
  Group g(1);
  g.Wait(1000, 2000);
  g.Fetch(0, 1100, 1800);  // a fetch_batch inside load_batch: num_workers=0
  g.Read(0, 1200, 1300);
  g.Read(1, 1000, 1900);   // a worker of another loader, reading meanwhile
  const RankFigures f = g.Measure();
  // Before the fetch: the sampler; after it: pinning, say.
  EXPECT_EQ(StepSplit(f, 0), (Split{100, 700, 200}));
}

TEST(WaitCausesTest, NestedWaitsAreOneStepSplitOverTheirUnion) {
  Group g(1);
  g.Wait(1000, 2000);
  g.Wait(1500, 2500);  // overlaps the open one: the same step
  g.Fetch(1, 900, 2300);
  g.Read(1, 1900, 2200);
  g.Flow(1, 2299, 2450, 9);
  const RankFigures f = g.Measure();
  ASSERT_EQ(f.steps.size(), 1u);
  EXPECT_EQ(f.batch_wait_ns, 1500u);
  EXPECT_EQ(StepSplit(f, 0), (Split{300, 1000, 200}));
}

TEST(WaitCausesTest, LeftoverFetchesAreBounded) {
  // Many more batches fetched than waited for (a loop that breaks early,
  // over and over): what is kept stays bounded, and a later batch still
  // finds its fetch.
  Group g(1);
  const uint64_t n = 3 * WaitCauses::kKeptFetches;
  for (uint64_t i = 0; i < n; ++i) {
    g.Fetch(1, 100 + 10 * i, 105 + 10 * i);
    g.Flow(1, 104 + 10 * i, 1000000, 1000 + i);  // finished in no wait
  }
  const uint64_t t = 100 + 10 * n + 1000;
  g.Wait(t, t + 1000);
  g.Fetch(1, t - 500, t + 600);
  g.Read(1, t + 100, t + 200);
  g.Flow(1, t + 599, t + 900, 1);
  const RankFigures f = g.Measure();
  ASSERT_EQ(f.steps.size(), 1u);
  EXPECT_EQ(StepSplit(f, 0), (Split{100, 500, 400}));
}

// The verdict: the cause is the largest part, named in the headline's
// finding with advice for it, and the findings that explain it follow.
Summary ReadingBound(uint64_t reading_ms, uint64_t preprocessing_ms, uint64_t handover_ms) {
  constexpr uint64_t kMs = 1000000;
  Summary s;
  s.run_start_ns = 1000 * kMs;
  s.run_end_ns = s.run_start_ns + 10000 * kMs;
  RankFigures r;
  r.rank = 0;
  r.first_ns = s.run_start_ns;
  r.loop = true;
  r.loop_start_ns = s.run_start_ns + 5000 * kMs;
  r.loop_end_ns = s.run_end_ns;
  r.steps.resize(10);
  r.reading_ns = reading_ms * kMs;
  r.preprocessing_ns = preprocessing_ms * kMs;
  r.handover_ns = handover_ms * kMs;
  r.batch_wait_ns = r.reading_ns + r.preprocessing_ns + r.handover_ns;
  s.rank_figures.push_back(r);
  // 200 small reads of data (a 60 ms finding), imports for 1.5 s of the
  // start-up (a 1.5 s finding).
  IoStats& data = s.files["/data/a.bin"];
  data.read.ops = 200;
  data.read.bytes = 200 * 4096;
  data.read.small_ops = 200;
  data.read.small_time_ns = 60 * kMs;
  data.read.time_ns = 60 * kMs;
  data.ops[static_cast<int>(OpGroup::Read)] = 200;
  data.time_ns[static_cast<int>(OpGroup::Read)] = 60 * kMs;
  IoStats& code = s.files["/usr/lib/python3/dist-packages/torch/__init__.py"];
  code.ops[static_cast<int>(OpGroup::Open)] = 5000;
  code.time_ns[static_cast<int>(OpGroup::Open)] = 1500 * kMs;
  return s;
}

std::vector<std::string> Rules(const Verdict& v) {
  std::vector<std::string> rules;
  for (const Finding& f : v.findings) rules.push_back(f.rule);
  return rules;
}

TEST(WaitCausesTest, WorkerStartUpIsTheWaitBeforeTheWorkersFirstFetchOfThePass) {
  // Two passes over a loader whose workers (1, 2, then 3) start anew each.
  Group g(3);
  g.Iter(1000, 1100, kFirstPass);  // iter(loader): forking the workers
  // Batch 1: worker 1's first fetch begins 800 into the wait.
  g.Wait(1200, 3000);
  g.Fetch(1, 2000, 2800);
  g.Read(1, 2100, 2300);
  g.Flow(1, 2799, 2900, 1);
  // Batch 2: worker 2 had begun (2500) before the loop asked (3010).
  g.Fetch(2, 2500, 3500);
  g.Flow(2, 3499, 3550, 2);
  g.Wait(3010, 3600);
  // The request that finds the pass over: no batch.
  g.Wait(3700, 3800);
  g.PassEnd(3750);
  g.Iter(4000, 4100, kSecondPass);
  g.Wait(4150, 5000);
  g.Fetch(3, 4600, 4900);
  g.Flow(3, 4899, 4950, 3);
  const RankFigures f = g.Measure();
  ASSERT_EQ(f.steps.size(), 6u);
  EXPECT_EQ(StepSplit(f, 0), (Split{0, 0, 0, 100}));
  EXPECT_EQ(StepSplit(f, 1), (Split{200, 600, 200, 800}));
  EXPECT_EQ(StepSplit(f, 2), (Split{0, 490, 100, 0}));
  EXPECT_EQ(StepSplit(f, 3), (Split{0, 0, 100, 0}));
  EXPECT_EQ(StepSplit(f, 4), (Split{0, 0, 0, 100}));
  EXPECT_EQ(StepSplit(f, 5), (Split{0, 300, 100, 450}));
  const StepRequest kinds[] = {StepRequest::kIter, StepRequest::kBatch, StepRequest::kBatch,
                               StepRequest::kEnd, StepRequest::kIter, StepRequest::kBatch};
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(f.steps[i].request, kinds[i]) << i;
  EXPECT_EQ(f.batches(), 3u);
  EXPECT_EQ(f.worker_startup_ns, 1450u);
  EXPECT_EQ(f.pass_worker_startup_ns, (std::vector<uint64_t>{0, 900, 550}));
  // The second pass's start-up is what persistent workers would save, and
  // the first pass's end, where torch shut its workers down.
  EXPECT_EQ(f.startup_after_first_pass_ns, 550u);
  EXPECT_EQ(f.pass_end_shutdown_ns, 100u);
  EXPECT_EQ(f.loop_start_ns, 1000u);  // the first request for data: iter(loader)
  EXPECT_EQ(f.reading_ns + f.preprocessing_ns + f.handover_ns + f.worker_startup_ns,
            f.batch_wait_ns);
}

TEST(WaitCausesTest, WithoutWorkersIterIsTheLoadersOwnWork) {
  Group g(0);
  g.Iter(100, 200, kFirstPass);
  g.Read(0, 120, 150);  // an iterable dataset opening its shard in iter()
  g.Wait(300, 400);
  g.Read(0, 310, 390);
  const RankFigures f = g.Measure();
  ASSERT_EQ(f.steps.size(), 2u);
  EXPECT_EQ(StepSplit(f, 0), (Split{30, 70, 0, 0}));
  EXPECT_EQ(StepSplit(f, 1), (Split{80, 20, 0, 0}));
  EXPECT_EQ(f.worker_startup_ns, 0u);
}

TEST(WaitCausesTest, WithoutADataLoaderTheLoopIsTheOptimizerSteps) {
  // nanoGPT's shape: the training thread reads its batches between steps
  // (times in ms).
  constexpr uint64_t kMs = 1000000;
  Group g(0);
  g.Read(0, 50 * kMs, 80 * kMs);             // start-up: before the first window
  g.Read(0, 400 * kMs, 600 * kMs);           // step 1's: from 1100 - (2100 - 1100) = 100
  g.Read(0, 700 * kMs, 800 * kMs, kCode);    // imports: not data
  g.Step(1000 * kMs, 1100 * kMs);
  g.Read(0, 1500 * kMs, 1600 * kMs);         // step 2's, two reads 0.5 ms apart: one
  g.Read(0, 1600 * kMs + kMs / 2, 1700 * kMs);  // stretch of reading (the gap included)
  g.Read(0, 1600 * kMs, 1650 * kMs, kData, 999);  // another thread's: not the loop's
  g.Step(2000 * kMs, 2100 * kMs);
  g.Read(0, 2300 * kMs, 2400 * kMs);         // step 3's, 100 ms apart: two
  g.Write(0, 2450 * kMs, 2480 * kMs);        // a write: not reading
  g.Read(0, 2500 * kMs, 2600 * kMs);
  g.Step(3000 * kMs, 3100 * kMs);
  const RankFigures f = g.Measure();
  EXPECT_TRUE(f.loop);
  EXPECT_TRUE(f.loop_of_steps);
  EXPECT_EQ(f.loop_start_ns, 100 * kMs);
  EXPECT_EQ(f.loop_end_ns, 3100 * kMs);
  EXPECT_EQ(f.optimizer_steps, 3u);
  ASSERT_EQ(f.steps.size(), 3u);
  // Step 2's 0.5 ms between its joined reads is the program's own work,
  // not reading: preprocessing.
  const Split splits[] = {{200 * kMs, 0, 0, 0}, {200 * kMs - kMs / 2, kMs / 2, 0, 0},
                          {200 * kMs, 0, 0, 0}};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(StepSplit(f, i), splits[i]) << i;
    EXPECT_EQ(f.steps[i].step, i + 1);
  }
  EXPECT_EQ(f.steps[1].start_ns, 1100 * kMs);  // from the previous step's end
  EXPECT_EQ(f.batch_wait_ns, 600 * kMs);
  EXPECT_EQ(f.reading_ns, 600 * kMs - kMs / 2);
  EXPECT_EQ(f.preprocessing_ns, kMs / 2);
  // What the wait cannot see: the other thread's 50 ms of reading; step 3's
  // 100 ms between its reads is one step's of three (the median step's
  // spread, once a step, is none).
  EXPECT_EQ(f.steps_unjoined_ns, 0u);
  EXPECT_EQ(f.other_threads_io_ns, 50 * kMs);
  // Start-up: the I/O before the loop (30 ms of data, 100 of code); the
  // first window's read is the loop's.
  EXPECT_EQ(f.startup_io_ns, 130 * kMs);
  EXPECT_EQ(f.startup_io_ops, 2u);
  EXPECT_EQ(f.startup_ns(), 50 * kMs);
}

TEST(WaitCausesTest, TheVerdictNamesTheCauseAndItsFindingsFollow) {
  Verdict v = ComputeVerdict(ReadingBound(2430, 400, 170));
  EXPECT_EQ(v.bound, Bound::kData);
  EXPECT_TRUE(v.split);
  EXPECT_EQ(v.cause, WaitCause::kReading);
  EXPECT_EQ(v.reading_ns + v.preprocessing_ns + v.handover_ns, v.batch_wait_ns);
  ASSERT_FALSE(v.findings.empty());
  EXPECT_NE(v.findings[0].what.find("of that wait, reading 81.0 %"), std::string::npos)
      << v.findings[0].what;
  EXPECT_NE(v.findings[0].advice.find("storage"), std::string::npos);
  // The small reads explain the reading: before the costlier start-up.
  EXPECT_EQ(Rules(v), (std::vector<std::string>{"batch_wait", "small_reads", "startup"}));
  const std::string j = VerdictJson(v);
  EXPECT_NE(j.find("\"reading_ns\":2430000000,\"preprocessing_ns\":400000000,"
                   "\"handover_ns\":170000000,\"worker_startup_ns\":0,\"cause\":\"reading\","
                   "\"worker_startup_passes\":[],\"persistent_workers_save_ns\":0,"
                   "\"pass_end_shutdown_ns\":0,\"pass_end_leftover_ns\":0,\"rebuilt_persistent_ns\":0,"
                   "\"head_of_line_ns\":0,\"handover_parts\":{\"in_worker_ns\":0,"
                   "\"in_transit_ns\":0,\"rebuild_ns\":0},\"handover_cause\":null,"
                   "\"preprocessing_parts\":[],\"loaders\":[],"),
            std::string::npos)
      << j;

  v = ComputeVerdict(ReadingBound(400, 2430, 170));
  EXPECT_EQ(v.cause, WaitCause::kPreprocessing);
  EXPECT_NE(v.findings[0].advice.find("more DataLoader workers"), std::string::npos);
  // Nothing explains preprocessing among the rules: by cost.
  EXPECT_EQ(Rules(v), (std::vector<std::string>{"batch_wait", "startup", "small_reads"}));

  v = ComputeVerdict(ReadingBound(400, 170, 2430));
  EXPECT_EQ(v.cause, WaitCause::kHandover);
  EXPECT_NE(v.findings[0].advice.find("pin_memory"), std::string::npos);
  EXPECT_NE(VerdictJson(v).find("\"cause\":\"handover\""), std::string::npos);
}

// Reading through memory maps (issue 49): a worker's page faults on a
// mapped data file are reading, as its reads are; those while its made
// batch waited to be sent too, and all of that hand-over where they took a
// third of it or more.
TEST(WaitCausesTest, PageFaultsOnMappedDataAreReading) {
  Group g(1);
  g.Wait(1000, 2000);
  g.Fetch(1, 900, 1600);
  g.Fault(1, 950, 1200);          // 200 of it inside the wait
  g.Fault(1, 1300, 1400);         // 100
  g.Fault(1, 1450, 1500, kCode);  // code: preprocessing
  g.Flow(1, 1599, 1990, 1);
  // The batch made at 1600, the worker faults on for its next one.
  g.Fetch(1, 1610, 2500);
  g.Fault(1, 1620, 1720);         // 100 of the 400 of hand-over: under a third
  const RankFigures f = g.Measure();
  ASSERT_EQ(f.steps.size(), 1u);
  // [1000, 1600): 300 in faults, 300 the rest; [1600, 2000): 100 faults.
  EXPECT_EQ(StepSplit(f, 0), (Split{400, 300, 300}));
  EXPECT_EQ(f.reading_faults_ns, 400u);
  EXPECT_EQ(f.handover_faults_ns, 100u);
}

TEST(WaitCausesTest, AHandOverHeldUpByTheWorkersFaultsIsReading) {
  Group g(1);
  // The batch was made before the loop asked; while it waited to be sent
  // the worker faulted 150 of the wait's 300 (half): all of it reading.
  g.Fetch(1, 100, 500);
  g.Fault(1, 120, 480);
  g.Flow(1, 499, 1250, 1);
  g.Fetch(1, 510, 1400);
  g.Fault(1, 1000, 1070);
  g.Fault(1, 1100, 1180);
  g.Wait(1000, 1300);
  const RankFigures f = g.Measure();
  ASSERT_EQ(f.steps.size(), 1u);
  EXPECT_EQ(StepSplit(f, 0), (Split{300, 0, 0}));
  EXPECT_EQ(f.reading_faults_ns, 300u);
  EXPECT_EQ(f.handover_faults_ns, 300u);
}

TEST(WaitCausesTest, WithoutADataLoaderTheStepsFaultsAreTheWait) {
  // nanoGPT's get_batch: the stepping thread's faults on the token file
  // between two steps are the step's batch wait; a fault on code is not.
  Group g(0);
  g.Step(1000, 1100);
  g.Fault(0, 1200, 1500);
  g.Fault(0, 1600, 1700, kCode);
  g.Step(2000, 2100);
  g.Fault(0, 2300, 2400);
  g.Read(0, 2500, 2550);
  g.Step(3000, 3100);
  const RankFigures f = g.Measure();
  EXPECT_TRUE(f.loop_of_steps);
  ASSERT_EQ(f.steps.size(), 3u);
  EXPECT_EQ(StepSplit(f, 1), (Split{300, 0, 0, 0}));
  // (The 100 between the fault and the read is the copy out of the map the
  // fault read: reading, as the fault is.)
  EXPECT_EQ(StepSplit(f, 2), (Split{250, 0, 0, 0}));
  EXPECT_EQ(f.reading_faults_ns, 400u);  // (the first window holds none)
}

TEST(WaitCausesTest, TheVerdictAdvisesForReadingThroughMaps) {
  constexpr uint64_t kMs = 1000000;
  Summary s = ReadingBound(2430, 400, 170);
  s.rank_figures[0].reading_faults_ns = 2000 * kMs;
  s.rank_figures[0].handover_faults_ns = 1500 * kMs;
  // The data set read through its map, at random: 60 % of the faults that
  // follow another went back before it.
  IoStats& mapped = s.files["/data/tokens.bin"];
  mapped.maps.faults = 1000;
  mapped.maps.first = 2;
  mapped.maps.sequential = 400;
  mapped.maps.bytes = 1000 * 4096;
  mapped.maps.time_ns = 2000 * kMs;
  Verdict v = ComputeVerdict(s);
  EXPECT_EQ(v.cause, WaitCause::kReading);
  ASSERT_FALSE(v.findings.empty());
  EXPECT_NE(v.findings[0].what.find("2.00 s of it page faults on mapped data files (1.50 s of "
                                    "those while finished batches waited"),
            std::string::npos)
      << v.findings[0].what;
  EXPECT_NE(v.findings[0].advice.find("madvise(MADV_WILLNEED)"), std::string::npos);
  EXPECT_EQ(Rules(v)[1], "mapped_random");
  EXPECT_NE(v.findings[1].what.find("59.9 % of the 1000 page faults"), std::string::npos)
      << v.findings[1].what;
  EXPECT_NE(VerdictJson(v).find("\"reading_faults_ns\":2000000000,\"handover_faults_ns\":"
                                "1500000000,"),
            std::string::npos);
  // Random under 30 %: a sequential scan, no finding.
  mapped.maps.sequential = 800;
  EXPECT_EQ(Rules(ComputeVerdict(s)), (std::vector<std::string>{"batch_wait", "small_reads",
                                                                "startup"}));
}

}  // namespace
}  // namespace dlprof::analysis
