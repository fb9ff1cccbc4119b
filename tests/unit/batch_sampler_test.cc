// The whole run's batch wait split by cause from counters: the flusher's
// samples (lib/core/batch_sampler.h), their record written and read back
// (lib/format/counters.h), and the reader's join and split
// (lib/analysis/whole_run_causes.h), against splits worked out by hand
// (within a reader's budget: whole_run_budget_test.cc).
#include "lib/core/batch_sampler.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "lib/analysis/meters/step_loop.h"
#include "lib/analysis/whole_run_causes.h"
#include "lib/core/interval_counters.h"
#include "lib/core/string_table.h"
#include "lib/format/trace_file.h"
#include "tests/helpers/batch_loop.h"

namespace dlprof::core {
namespace {

using analysis::ProcessBatches;
using analysis::SplitWholeRunWait;
using analysis::WholeRunCauses;

// A worker's first two batches and the loop's waits for them, and a wait
// of the loop without a worker's batch, each split by hand.
TEST_F(BatchSamplerTest, SplitsJoinedWaitsAndOwnWaitsAsTheFullEventsWould) {
  BatchSampler loop(&strings_, 5000 * kMs), worker(&strings_, 5000 * kMs);
  worker.SetThread(7);
  // Batch 0, the worker's first: fetched 10-50 ms, reading 12-20 and 30-34.
  worker.DataRead(12 * kMs, 20 * kMs, 8 * kMs);
  worker.DataRead(30 * kMs, 34 * kMs, 4 * kMs);
  worker.Flow(false, flow_, kTag | 0, 49 * kMs);
  worker.Region(fetch_, 10 * kMs, 50 * kMs);
  // Batch 1: fetched 50-90 ms, reading 55-65: all before the loop asked.
  worker.DataRead(55 * kMs, 65 * kMs, 10 * kMs);
  worker.Flow(false, flow_, kTag | 1, 89 * kMs);
  worker.Region(fetch_, 50 * kMs, 90 * kMs);

  loop.SetThread(1);
  loop.Flow(true, flow_, kTag | 0, 59 * kMs);
  loop.Region(wait_, 0, 60 * kMs);
  loop.Flow(true, flow_, kTag | 1, 94 * kMs);
  loop.Region(wait_, 70 * kMs, 95 * kMs);
  // A wait with no worker's batch: it read 105-115 and pinned 120-125.
  loop.DataRead(105 * kMs, 115 * kMs, 10 * kMs);
  loop.Region(pin_, 120 * kMs, 125 * kMs);
  loop.Region(wait_, 100 * kMs, 130 * kMs);

  const format::BatchRecord w = worker.Take(0), l = loop.Take(0);
  ASSERT_EQ(w.fetches.size(), 2u);
  EXPECT_TRUE(w.fetches[0].first);
  EXPECT_FALSE(w.fetches[1].first);
  EXPECT_EQ(l.flow_waits, 2u);
  EXPECT_EQ(l.flow_wait_ns, 85 * kMs);
  ASSERT_EQ(l.waits.size(), 2u);
  EXPECT_EQ(l.read.count, 1u);
  EXPECT_EQ(l.read.ns, 30 * kMs);
  EXPECT_EQ(l.read.reading_ns, 10 * kMs);
  EXPECT_EQ(l.read.pin_ns, 5 * kMs);
  EXPECT_TRUE(l.idle.empty());

  const WholeRunCauses c = SplitWholeRunWait({ProcessBatches{"m", {l}}, ProcessBatches{"m", {w}}});
  EXPECT_EQ(c.sampled, 2u);
  EXPECT_EQ(c.unsplit_ns, 0u);
  // Batch 0: start-up 0-10, reading 12 ms, preprocessing 28, hand-over 50-60.
  // Batch 1: preprocessing 70-90 (its reads were done), hand-over 90-95.
  // The own wait: reading 10, hand-over 5, preprocessing 15.
  EXPECT_EQ(c.worker_startup_ns, 10 * kMs);
  EXPECT_EQ(c.reading_ns, 22 * kMs);
  EXPECT_EQ(c.handover_ns, 20 * kMs);
  EXPECT_EQ(c.preprocessing_ns, 63 * kMs);
  EXPECT_EQ(c.total_ns(), 115 * kMs);
  // Another machine's fetch of the same id is not this batch's.
  const WholeRunCauses apart =
      SplitWholeRunWait({ProcessBatches{"m", {l}}, ProcessBatches{"other", {w}}});
  EXPECT_EQ(apart.sampled, 0u);
  EXPECT_EQ(apart.unsplit_ns, 85 * kMs);
}

// iter(loader) and the call that ends a pass: beside workers, the workers
// starting and the loader's machinery; without, the loop's own work.
TEST_F(BatchSamplerTest, WaitsWithoutABatchAreSplitAsTheFullEventsSplitThem) {
  BatchSampler loop(&strings_, 5000 * kMs), worker(&strings_, 5000 * kMs);
  const uint32_t iter = Id("loader_iter");
  loop.SetThread(1);
  loop.DataRead(1 * kMs, 3 * kMs, 2 * kMs);  // an iterable dataset's shard list
  loop.Region(iter, 0, 40 * kMs);
  loop.Region(wait_, 50 * kMs, 60 * kMs);  // the pass is over: no batch, no reads
  const format::BatchRecord alone = loop.Take(0);
  EXPECT_EQ(alone.iter.count, 1u);
  EXPECT_EQ(alone.iter.reading_ns, 2 * kMs);
  EXPECT_EQ(alone.idle.ns, 10 * kMs);
  const WholeRunCauses without = SplitWholeRunWait({ProcessBatches{"m", {alone}}});
  EXPECT_EQ(without.reading_ns, 2 * kMs);
  EXPECT_EQ(without.preprocessing_ns, 48 * kMs);
  EXPECT_EQ(without.own_waits, 2u);
  // The same beside a worker that fetched a batch.
  worker.SetThread(7);
  worker.Flow(false, flow_, kTag | 0, 44 * kMs);
  worker.Region(fetch_, 42 * kMs, 45 * kMs);
  const WholeRunCauses beside = SplitWholeRunWait(
      {ProcessBatches{"m", {alone}}, ProcessBatches{"m", {worker.Take(0)}}});
  EXPECT_EQ(beside.reading_ns, 2 * kMs);
  EXPECT_EQ(beside.worker_startup_ns, 38 * kMs);
  EXPECT_EQ(beside.handover_ns, 10 * kMs);
  EXPECT_EQ(beside.preprocessing_ns, 0u);
}

// Many batches an interval: the samples stay within the budget, both
// sides' levels differ, and the split of the joined ones, weighted, is the
// split of all of them.
TEST_F(BatchSamplerTest, SamplesStayBoundedAndTheirWeightedSplitIsTheWhole) {
  BatchSampler loop(&strings_, 1000 * kMs);
  BatchSampler workers[2] = {BatchSampler(&strings_, 1000 * kMs),
                             BatchSampler(&strings_, 1000 * kMs)};
  // 50 intervals of 200 batches (HalfReadingBatch).
  std::vector<ProcessBatches> job = {{"m", {}}, {"m", {}}, {"m", {}}};
  constexpr int kIntervals = 50, kPerInterval = 200;
  for (int i = 0; i < kIntervals; ++i) {
    for (int k = 0; k < kPerInterval; ++k) HalfReadingBatch(i * kPerInterval + k, &loop, workers);
    const format::BatchRecord l = loop.Take(0);
    EXPECT_EQ(l.flow_waits, static_cast<uint64_t>(kPerInterval));
    // 6 hashed samples a second, 2 longest waits (ties: the first).
    EXPECT_LE(l.waits.size(), i == 0 ? 6 + format::kAlwaysSampled : 6);
    EXPECT_EQ(l.longest.size(), 2u);
    for (const auto& s : l.waits) EXPECT_TRUE(format::BatchSampled(s.id, l.level));
    job[0].records.push_back(l);
    for (int k = 0; k < 2; ++k) {
      job[1 + k].records.push_back(workers[k].Take(0));
      EXPECT_LE(job[1 + k].records.back().fetches.size(),
                i == 0 ? 8 + format::kAlwaysSampled : 8);  // and 2 latest
    }
  }
  EXPECT_GE(job[0].records.back().level, 4);  // 200 batches a second, 8 samples
  const WholeRunCauses c = SplitWholeRunWait(job);
  ASSERT_GT(c.sampled, 100u);
  constexpr uint64_t kBatches = kIntervals * kPerInterval;
  EXPECT_EQ(c.total_ns(), 2 * kMs * kBatches);
  EXPECT_EQ(c.worker_startup_ns, 0u);
  // Every wait has 1 ms of hand-over: exact whatever the sample.
  EXPECT_EQ(c.handover_ns, 1 * kMs * kBatches);
  // Half the waits read for 1 ms of their 2: 25 %, within the sample's error.
  const double share = static_cast<double>(c.reading_ns) / static_cast<double>(c.total_ns());
  EXPECT_NEAR(share, 0.25, 0.05) << c.sampled << " sampled";
  // Its standard error, as sampling theory has it for a part that is 0 or
  // 1 ms a wait, half and half: 1 ms * N * 0.5 / sqrt(weighted samples).
  // Hand-over, the same in every wait, has none.
  const uint64_t weighted = c.sampled - format::kAlwaysSampled;
  const double theory = 0.5 * kMs * (kBatches - format::kAlwaysSampled) / std::sqrt(weighted);
  EXPECT_NEAR(static_cast<double>(c.reading_error_ns), theory, theory / 3) << weighted;
  EXPECT_EQ(c.preprocessing_error_ns, c.reading_error_ns);  // what reading leaves
  // Hand-over, alike in every wait, and start-up, in none: the floor of the waits no
  // sample saw (batch_sampler_error_test.cc), each off by its share's farther end.
  EXPECT_GT(c.handover_error_ns, 0u);
  EXPECT_LT(c.handover_error_ns, c.reading_error_ns / 2);
  EXPECT_NEAR(c.worker_startup_error_ns, 2 * c.handover_error_ns, 2);
  EXPECT_LE(std::abs(static_cast<double>(c.reading_ns) - 0.25 * c.total_ns()),
            4.0 * c.reading_error_ns);
  // The level falls back when the batches slow down.
  const uint8_t busy = job[0].records.back().level;
  for (int i = 0; i < 3; ++i) {
    loop.SetThread(1);
    loop.Flow(true, flow_, kTag | (20000 + i), 1);
    loop.Region(wait_, 0, 2);
    loop.Take(0);
  }
  EXPECT_LT(loop.level(), busy);
}

// A pass's first batches, sampled always, are split exactly; the samples
// of the rest split the rest. Here the first waits hold the workers'
// start-up and the others are all hand-over: a sample of the others that
// stands for more or less than they are scales neither.
TEST_F(BatchSamplerTest, TheBatchesSampledAlwaysAreSplitExactly) {
  format::BatchRecord wait, fetch;
  wait.level = fetch.level = 2;
  auto add = [&](uint64_t n, uint64_t start, uint64_t end, uint64_t made, bool first) {
    ++wait.flow_waits;
    wait.flow_wait_ns += end - start;
    if (!format::BatchSampled(kTag | n, 2)) return;
    wait.waits.push_back({kTag | n, start, end});
    format::FetchSample f;
    f.id = kTag | n;
    f.start_ns = first ? start + 6 * kMs : start - 20 * kMs;
    f.end_ns = made;
    f.first = first;
    fetch.fetches.push_back(f);
  };
  uint64_t t = 0;
  // Batches 0-15: 10 ms waits, the first two starting their worker for
  // 6 ms; the batch made at the wait's end (no hand-over).
  for (uint64_t n = 0; n < format::kAlwaysSampled; ++n, t += 100 * kMs) {
    add(n, t, t + 10 * kMs, t + 10 * kMs, n < 2);
  }
  // Batches 16-215: 2 ms waits, each batch made before it (hand-over).
  for (uint64_t n = format::kAlwaysSampled; n < 216; ++n, t += 100 * kMs) {
    add(n, t, t + 2 * kMs, t - 1 * kMs, false);
  }
  ASSERT_GT(wait.waits.size(), format::kAlwaysSampled);
  ASSERT_LT(wait.waits.size(), 216u);
  const WholeRunCauses c =
      SplitWholeRunWait({ProcessBatches{"m", {wait}}, ProcessBatches{"m", {fetch}}});
  EXPECT_EQ(c.worker_startup_ns, 12 * kMs);
  EXPECT_EQ(c.preprocessing_ns, 148 * kMs);
  EXPECT_EQ(c.handover_ns, 400 * kMs);
  EXPECT_EQ(c.reading_ns, 0u);
  EXPECT_EQ(c.sampled, wait.waits.size());
  // Every weighted sample all hand-over: the floor, 400 ms less the n sampled, over n.
  const uint64_t n = c.sampled - format::kAlwaysSampled;
  EXPECT_NEAR(c.handover_error_ns, (400 * kMs - n * 2 * kMs) / n, 1);
}

// A few batches made late -- a worker held up, its batch waited for -- among
// many handed over ready: a hashed sample of one in 32 would most likely
// miss them, and take their preprocessing for hand-over. The interval's
// longest waits and latest fetches are kept whatever their hash, and
// split exactly.
TEST_F(BatchSamplerTest, LateBatchesAreKeptAndSplitExactly) {
  BatchSampler loop(&strings_, 1000 * kMs);
  BatchSampler workers[2] = {BatchSampler(&strings_, 1000 * kMs),
                             BatchSampler(&strings_, 1000 * kMs)};
  std::vector<ProcessBatches> job = {{"m", {}}, {"m", {}}, {"m", {}}};
  // 10 intervals of 100 batches, one each 10 ms, batch n by worker n % 2:
  // fetched [t-6, t-2) ms, the loop's wait [t, t+1) all hand-over. Five
  // late ones: fetched [t-6, t+8), waited for [t, t+9): 8 ms preprocessing.
  const std::vector<int> late = {150, 333, 334, 702, 981};
  std::vector<uint64_t> late_ids;
  uint64_t wait_ns = 0;
  for (int i = 0; i < 10; ++i) {
    for (int k = 0; k < 100; ++k) {
      const int n = i * 100 + k;
      const uint64_t t = 10 * kMs * (n + 1), id = kTag | n;
      const bool is_late = std::count(late.begin(), late.end(), n) > 0;
      const uint64_t made = is_late ? t + 8 * kMs : t - 2 * kMs;
      const uint64_t waited = is_late ? t + 9 * kMs : t + 1 * kMs;
      if (is_late) late_ids.push_back(id);
      BatchSampler& w = workers[n % 2];
      w.SetThread(100 + n % 2);
      w.Flow(false, flow_, id, made - 1);
      w.Region(fetch_, t - 6 * kMs, made);
      loop.SetThread(1);
      loop.Flow(true, flow_, id, waited - 1);
      loop.Region(wait_, t, waited);
      wait_ns += waited - t;
    }
    job[0].records.push_back(loop.Take(0));
    for (int k = 0; k < 2; ++k) job[1 + k].records.push_back(workers[k].Take(0));
  }
  // Each late batch: a longest wait, a latest fetch.
  for (uint64_t id : late_ids) {
    int waits = 0, fetches = 0;
    for (const auto& p : job) {
      for (const auto& r : p.records) {
        for (const auto& w : r.longest) waits += w.id == id;
        for (const auto& f : r.fetches) fetches += f.id == id;
      }
    }
    EXPECT_EQ(waits, 1) << (id & 0xffffff);
    EXPECT_EQ(fetches, 1) << (id & 0xffffff);
  }
  EXPECT_GE(job[0].records.back().level, 3);
  const WholeRunCauses c = SplitWholeRunWait(job);
  EXPECT_EQ(c.total_ns(), wait_ns);
  EXPECT_EQ(c.preprocessing_ns, 5 * 8 * kMs);
  EXPECT_EQ(c.handover_ns, wait_ns - 5 * 8 * kMs);
  EXPECT_GT(c.preprocessing_error_ns, 0u);  // every other wait alike: the floor of the unseen
  EXPECT_LT(c.preprocessing_error_ns, wait_ns / 20);
}

// A worker ahead of its loop waits for its next index before each fetch;
// when the loop pauses between batches (its step, the process descheduled),
// the worker's next fetch starts that much after its previous one ended.
// That pause is the loop's own, not the worker's lateness: the fetches kept
// for their lateness are those that took long once started (a worker's
// preprocessing), whose batches the loop waited for longest.
TEST_F(BatchSamplerTest, AWorkerIdleBeforeAFetchIsNotLate) {
  BatchSampler loop(&strings_, 1000 * kMs), worker(&strings_, 1000 * kMs);
  std::vector<ProcessBatches> job = {{"m", {}}, {"m", {}}};
  // 5 intervals of 50 batches, 10 ms apart but for three pauses of the
  // loop of 60 ms an interval; fetched [t-6, t-2), waited for [t, t+1).
  // Two late ones an interval (as many as the latest it keeps): fetched
  // [t-6, t+8), waited for [t, t+9).
  uint64_t t = 100 * kMs, wait_ns = 0;
  int late = 0;
  for (int i = 0; i < 5; ++i) {
    for (int k = 0; k < 50; ++k) {
      const int n = i * 50 + k;
      const uint64_t id = kTag | n;
      t += (k == 10 || k == 25 || k == 40) ? 60 * kMs : 10 * kMs;
      const bool is_late = k == 17 || k == 33;
      late += is_late;
      const uint64_t made = is_late ? t + 8 * kMs : t - 2 * kMs;
      const uint64_t waited = is_late ? t + 9 * kMs : t + 1 * kMs;
      worker.SetThread(100);
      worker.Flow(false, flow_, id, made - 1);
      worker.Region(fetch_, t - 6 * kMs, made);
      loop.SetThread(1);
      loop.Flow(true, flow_, id, waited - 1);
      loop.Region(wait_, t, waited);
      wait_ns += waited - t;
    }
    job[0].records.push_back(loop.Take(0));
    job[1].records.push_back(worker.Take(0));
  }
  const WholeRunCauses c = SplitWholeRunWait(job);
  EXPECT_EQ(c.total_ns(), wait_ns);
  EXPECT_EQ(c.preprocessing_ns, late * 8 * kMs);
  EXPECT_EQ(c.handover_ns, wait_ns - late * 8 * kMs);
}

// A fetch kept for its lateness alone, whose batch the loop's process
// sampled at its own lower level: no sample of the higher level's weight,
// which the join takes only where both sides hashed the batch.
TEST_F(BatchSamplerTest, AFetchKeptForItsLatenessAloneIsNoHashedSample) {
  format::BatchRecord wait, fetch;
  wait.level = 0;  // every wait kept
  fetch.level = 2;
  uint64_t t = 100 * kMs, hashed = 0;
  bool kept_late = false;
  for (uint64_t n = format::kAlwaysSampled; n < 80; ++n, t += 10 * kMs) {
    const uint64_t id = kTag | n;
    ++wait.flow_waits;
    wait.flow_wait_ns += 2 * kMs;
    wait.waits.push_back({id, t, t + 2 * kMs});
    format::FetchSample f;
    f.id = id;
    f.start_ns = t - 5 * kMs;
    f.end_ns = t - 1 * kMs;
    if (format::BatchSampled(id, 2)) {
      ++hashed;
      fetch.fetches.push_back(f);
    } else if (!kept_late) {  // late: made as the wait ends
      kept_late = true;
      f.end_ns = t + 2 * kMs;
      fetch.fetches.push_back(f);
    }
  }
  ASSERT_TRUE(kept_late);
  const WholeRunCauses c =
      SplitWholeRunWait({ProcessBatches{"m", {wait}}, ProcessBatches{"m", {fetch}}});
  EXPECT_EQ(c.sampled, hashed);
  EXPECT_EQ(c.handover_ns, wait.flow_wait_ns);  // the hashed ones' share: all hand-over
}

// A get_batch loop reading through a memory map: a wait's page faults
// reach the flusher after the wait itself (a pass drains the rings, then
// the faults: TraceSink::PassLocked) and count as its reading once the
// pass is settled. Faults close together are one span.
TEST_F(BatchSamplerTest, PageFaultsDrainedAfterTheirWaitAreItsReading) {
  constexpr uint64_t kUs = 1000;
  BatchSampler loop(&strings_, 1000 * kMs);
  loop.SetThread(1);
  loop.Region(wait_, 10 * kMs, 20 * kMs);  // from the ring
  loop.Region(wait_, 30 * kMs, 40 * kMs);
  loop.SetThread(1);  // the faults, later in the pass
  loop.MappedRead(11 * kMs, 11 * kMs + 50 * kUs);
  loop.MappedRead(11 * kMs + 60 * kUs, 11 * kMs + 100 * kUs);
  loop.MappedRead(11 * kMs + 150 * kUs, 11 * kMs + 200 * kUs);
  loop.MappedRead(15 * kMs, 16 * kMs);
  loop.Settle();
  const format::BatchRecord r = loop.Take(0);
  EXPECT_EQ(r.read.count, 1u);
  EXPECT_EQ(r.read.ns, 10 * kMs);
  EXPECT_EQ(r.read.reading_ns, 140 * kUs + 1 * kMs);
  EXPECT_EQ(r.idle.count, 1u);
  EXPECT_EQ(r.idle.ns, 10 * kMs);
  EXPECT_EQ(r.idle.reading_ns, 0u);
}

// A loop without a DataLoader (nanoGPT's get_batch): the reading between
// two optimizer steps is the later one's wait, in stretches (reads less
// than 1 ms apart: one, the time between included), faults drained after
// the step counted. The first step's window is as long as the first steps'
// period (format::FirstStepPeriod), taken at the fifth step or the run's
// end; the loop starts there.
TEST_F(BatchSamplerTest, StepWaitsAreTheReadingBetweenSteps) {
  constexpr uint64_t kUs = 1000;
  const uint32_t step = Id("optimizer_step");
  BatchSampler loop(&strings_, 1000 * kMs);
  loop.SetThread(1);
  loop.DataRead(12 * kMs, 13 * kMs, 1 * kMs);
  loop.DataRead(13 * kMs + 500 * kUs, 14 * kMs, 500 * kUs);  // 0.5 ms after: one stretch
  loop.Region(step, 20 * kMs, 30 * kMs);
  loop.DataRead(32 * kMs, 33 * kMs, 1 * kMs);
  loop.OtherDataCalls(36 * kMs, 37 * kMs, 1 * kMs);  // 3 ms after (an open): a stretch of its own
  loop.Region(step, 40 * kMs, 50 * kMs);
  loop.MappedRead(39 * kMs, 39 * kMs + 500 * kUs);  // a fault, drained after the step
  loop.Settle();
  loop.Take(0);
  bool any = false;
  format::StepRecord r = loop.TakeSteps(0, &any);
  EXPECT_TRUE(any);
  EXPECT_EQ(r.waits, 1u);  // the second step's; the first's waits for more steps
  EXPECT_EQ(r.loop_start_ns, 0u);
  EXPECT_EQ(r.wait_ns, 1 * kMs + 1 * kMs + 500 * kUs);
  // The run ends after two steps: the first's window is the second's
  // period long (30 - (50 - 30)), its reading the stretch at 12-14 ms.
  loop.FinishSteps();
  loop.Take(0);
  r = loop.TakeSteps(0, &any);
  EXPECT_TRUE(any);
  EXPECT_EQ(r.waits, 1u);
  EXPECT_EQ(r.loop_start_ns, 10 * kMs);
  EXPECT_EQ(r.wait_ns, 2 * kMs);
}

// A loop that opens, reads and closes a file a sample, 1,000 samples a
// step: more calls a step than a thread's spans hold. Its steps' waits are
// still their whole reading (the calls joined as the step loop joins them),
// and a gap of 1 ms or more still parts two stretches.
TEST_F(BatchSamplerTest, AStepOfMoreCallsThanSpansHeldIsAllRead) {
  constexpr uint64_t kUs = 1000;
  const uint32_t step = Id("optimizer_step");
  BatchSampler loop(&strings_, 1000 * kMs);
  loop.SetThread(1);
  uint64_t t = 0, expected = 0;
  for (int n = 0; n < 3; ++n) {
    const uint64_t from = t;
    for (int k = 0; k < 1000; ++k, t += 30 * kUs) {
      if (k == 500) t += 2 * kMs;  // a gap of 2 ms inside the step's reading
      loop.OtherDataCalls(t, t + 5 * kUs, 5 * kUs);        // open
      loop.DataRead(t + 10 * kUs, t + 20 * kUs, 10 * kUs);  // pread
      loop.OtherDataCalls(t + 25 * kUs, t + 27 * kUs, 2 * kUs);  // close
    }
    // Two stretches of 500 samples each, from the first open to the last
    // close: each 3 us short of its samples' 30 us slots.
    if (n > 0) expected += t - from - 2 * kMs - 2 * 3 * kUs;
    loop.Region(step, t + 1 * kMs, t + 5 * kMs);
    t += 5 * kMs;
    loop.Settle();
  }
  loop.Take(0);
  bool any = false;
  const format::StepRecord r = loop.TakeSteps(0, &any);
  EXPECT_EQ(r.waits, 2u);  // the first step's waits for more steps
  EXPECT_EQ(r.wait_ns, expected);
}

// Five steps whose second was slow (a compilation): the first window is the
// median period of the second to fifth, not the second's, so that the
// start-up's reading before it is not the first step's wait.
TEST_F(BatchSamplerTest, TheFirstStepsWindowIsTheMedianPeriodWhereShorter) {
  const uint32_t step = Id("optimizer_step");
  BatchSampler loop(&strings_, 1000 * kMs);
  loop.SetThread(1);
  loop.DataRead(5 * kMs, 6 * kMs, 1 * kMs);    // start-up: outside the window
  loop.DataRead(22 * kMs, 23 * kMs, 1 * kMs);  // the first step's batch
  loop.Region(step, 25 * kMs, 30 * kMs);
  for (uint64_t end : {80, 90, 100, 110}) loop.Region(step, (end - 5) * kMs, end * kMs);
  loop.Settle();
  loop.Take(0);
  bool any = false;
  const format::StepRecord r = loop.TakeSteps(0, &any);
  EXPECT_EQ(r.loop_start_ns, 20 * kMs);  // 30 - min(50, median(50, 10, 10, 10) = 10)
  EXPECT_EQ(r.waits, 5u);
  EXPECT_EQ(r.wait_ns, 1 * kMs);
}

// The first window begins inside a run of calls less than 1 ms apart. The
// flusher keeps a thread's calls before its first step as runs (its cost
// is a span a run, not a call, for every thread that reads: most never
// step), so it counts the reading from the window's start; the full
// events' step loop from the first call that starts after it. They differ
// by less than one call and the join gap (a 24-step test on a busy machine
// saw 1.1 to 2.8 ms of about 100: test_keep_causes allows for it).
TEST_F(BatchSamplerTest, AFirstWindowStartingInARunOfCallsIsCountedFromItsStart) {
  const uint32_t step = Id("optimizer_step");
  BatchSampler loop(&strings_, 1000 * kMs);
  analysis::StepLoop full;
  constexpr uint64_t kUs = 1000;
  loop.SetThread(1);
  // Reads 0.2 ms long every 0.7 ms from 19 ms; the window starts at 20.
  for (uint64_t start : {19000, 19700, 20400, 21100}) {
    loop.DataRead(start * kUs, (start + 200) * kUs, 200 * kUs);
    full.AddDataIo(1, start * kUs, (start + 200) * kUs, 4096, 0, false);
  }
  loop.Region(step, 25 * kMs, 30 * kMs);
  full.AddStep(1, 25 * kMs, 30 * kMs);
  for (uint64_t end : {80, 90, 100, 110}) {
    loop.Region(step, (end - 5) * kMs, end * kMs);
    full.AddStep(1, (end - 5) * kMs, end * kMs);
  }
  loop.Settle();
  loop.Take(0);
  bool any = false;
  const format::StepRecord r = loop.TakeSteps(0, &any);
  const analysis::StepLoop::Result f = full.Finish(0);
  ASSERT_EQ(f.steps.size(), 5u);
  EXPECT_EQ(r.loop_start_ns, 20 * kMs);
  EXPECT_EQ(f.loop_start, 20 * kMs);
  EXPECT_EQ(f.steps[0].io_ns, 900 * kUs);  // 20.4 to 21.3 ms
  EXPECT_EQ(r.wait_ns, 1300 * kUs);         // 20 to 21.3 ms
  EXPECT_LT(r.wait_ns - f.steps[0].io_ns, format::kStepReadingJoinNs + 200 * kUs);
}

// A first step longer than the period (an allreduce waiting for a slower
// rank): both sides measure its window from its start (format::
// FirstWindowStart), a period back from the end of a step as short as the
// shortest; measured from its own end, both had none.
TEST_F(BatchSamplerTest, AFirstStepLongerThanThePeriodKeepsItsWindowOnBothSides) {
  const uint32_t step = Id("optimizer_step");
  BatchSampler loop(&strings_, 1000 * kMs);
  analysis::StepLoop full;
  loop.SetThread(1);
  loop.DataRead(21 * kMs, 23 * kMs, 2 * kMs);  // the first batch's read
  full.AddDataIo(1, 21 * kMs, 23 * kMs, 4096, 0, false);
  loop.Region(step, 25 * kMs, 45 * kMs);  // 20 ms, in a period of 10
  full.AddStep(1, 25 * kMs, 45 * kMs);
  for (uint64_t end : {55, 65, 75, 85}) {
    loop.Region(step, (end - 5) * kMs, end * kMs);
    full.AddStep(1, (end - 5) * kMs, end * kMs);
  }
  loop.Settle();
  loop.Take(0);
  bool any = false;
  const format::StepRecord r = loop.TakeSteps(0, &any);
  const analysis::StepLoop::Result f = full.Finish(0);
  ASSERT_EQ(f.steps.size(), 5u);
  EXPECT_EQ(r.loop_start_ns, 20 * kMs);  // 25 + 5 - 10
  EXPECT_EQ(f.loop_start, 20 * kMs);
  EXPECT_EQ(f.steps[0].io_ns, 2 * kMs);
  EXPECT_EQ(r.wait_ns, 2 * kMs);
}

// The flusher's side as it runs: events of two threads through
// IntervalCounters, the record in the counters file, read back.
TEST_F(BatchSamplerTest, IntervalCountersWriteTheBatchRecordBesideTheInterval) {
  char dir[] = "/tmp/batch_samplerXXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/p.dlcount";
  const uint32_t data = Id("/data/shard0");
  format::ProcessInfo info;
  info.pid = 1;
  info.host = "h";
  info.flags = kHeaderFlagSegment;
  IntervalCounters counters(&strings_, 1000 * kMs);
  std::string error;
  ASSERT_TRUE(counters.Open(path, format::EncodeFileHeader(info), 0, &error)) << error;
  auto ev = [](EventKind kind, uint64_t start, uint64_t dur, uint32_t file, uint64_t aux,
               int64_t ret = 0) {
    Event e{};
    e.kind = static_cast<uint16_t>(kind);
    e.start_ns = start;
    e.dur_ns = dur;
    e.file = file;
    e.aux = aux;
    e.ret = ret;
    e.fd = 3;
    return e;
  };
  // The loop's thread: a wait without workers, reading 4 KiB twice inside it.
  const Event loop[] = {ev(EventKind::Pread, 2 * kMs, 3 * kMs, data, 0, 4096),
                        ev(EventKind::Pread, 6 * kMs, 1 * kMs, data, 0, 4096),
                        ev(EventKind::AppRegion, 1 * kMs, 9 * kMs, wait_, 0)};
  counters.Add(11, loop, 3, format::TickScale{});
  // A worker-like thread: a flowed fetch with a read.
  const Event fetch[] = {ev(EventKind::Pread, 21 * kMs, 2 * kMs, data, 0, 4096),
                         ev(EventKind::AppFlowStart, 29 * kMs, 0, flow_, kTag | 3),
                         ev(EventKind::AppRegion, 20 * kMs, 10 * kMs, fetch_, 0)};
  counters.Add(12, fetch, 3, format::TickScale{});
  ASSERT_TRUE(counters.MaybeEmit(1000 * kMs, -1, true));

  format::CountersFile c;
  ASSERT_TRUE(format::ReadCountersFile(path, &c, &error)) << error;
  EXPECT_EQ(c.damaged, 0u);
  ASSERT_EQ(c.intervals.size(), 1u);
  ASSERT_EQ(c.batches.size(), 1u);
  const format::BatchRecord& b = c.batches[0];
  EXPECT_EQ(b.start_ns, c.intervals[0].start_ns);
  EXPECT_EQ(b.read.count, 1u);
  EXPECT_EQ(b.read.ns, 9 * kMs);
  EXPECT_EQ(b.read.reading_ns, 4 * kMs);
  ASSERT_EQ(b.fetches.size(), 1u);
  EXPECT_EQ(b.fetches[0].id, kTag | 3);
  EXPECT_EQ(b.fetches[0].start_ns, 20 * kMs);
  EXPECT_EQ(b.fetches[0].end_ns, 30 * kMs);
  EXPECT_TRUE(b.fetches[0].first);
  // 2 ms of reading at 21-23 ms: in the fetch's first eighth (20-21.25) a
  // quarter of a ms, in the second (21.25-22.5) 1.25, in the third half a ms.
  uint64_t read_us = 0;
  for (uint32_t us : b.fetches[0].read_us) read_us += us;
  EXPECT_NEAR(static_cast<double>(read_us), 2000, 2);
  EXPECT_EQ(b.fetches[0].read_us[0], 250u);
  EXPECT_EQ(b.fetches[0].read_us[1], 1250u);
  EXPECT_EQ(b.fetches[0].read_us[2], 500u);
  unlink(path.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace dlprof::core
