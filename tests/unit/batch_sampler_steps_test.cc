// A loop without a DataLoader in the whole run's counters (lib/core/
// batch_sampler.h, StretchNsIn): each step's wait split as the full events'
// step loop splits it (lib/analysis/meters/step_loop.cc, AddToGap): the
// time between joined calls the program's own (preprocessing), but next
// to a page fault on mapped data, where it is reading. Both fed the same
// calls by hand. (The split's record, written and read back: counters_test.)
#include <gtest/gtest.h>

#include <cstdint>

#include "lib/analysis/meters/step_loop.h"
#include "lib/core/batch_sampler.h"
#include "tests/helpers/batch_loop.h"

namespace dlprof::core {
namespace {

constexpr uint64_t kUs = 1000;
constexpr int kSteps = 6;
constexpr uint64_t kPeriod = 10 * kMs;
constexpr uint64_t kStart = 100 * kMs;

// One sampler and one full-events step loop fed alike; sums of their waits.
struct Both {
  explicit Both(BatchSampler* s) : counters(s) { counters->SetThread(1); }
  void Call(uint64_t start, uint64_t end) {
    counters->DataRead(start, end, end - start);
    full.AddDataIo(1, start, end, 65536, 0, false);
  }
  void Fault(uint64_t start, uint64_t end) {
    counters->MappedRead(start, end);
    full.AddDataIo(1, start, end, 4096, 0, true);
  }
  // A call on a data file's maps (`live`: BatchSampler::MapCall's), as the
  // interval counters hand it over: a data call, and a map call.
  void MapCall(uint64_t start, uint64_t end, int live) {
    counters->OtherDataCalls(start, end, end - start);
    counters->MapCall(start, end, live);
    using Map = analysis::StepLoop::MapCall;
    full.AddDataIo(1, start, end, 0, 0, false,
                   live > 0 ? Map::kMade : live < 0 ? Map::kTornDown : Map::kOther);
    if (live != 0) full.AddDataMap(0, live > 0 ? end : start, live > 0);
  }
  void Step(uint32_t name, uint64_t start, uint64_t end) {
    counters->Region(name, start, end);
    full.AddStep(1, start, end);
    counters->Settle();
  }
  // The counters' wait and preprocessing, and the full events'.
  void Finish() {
    counters->FinishSteps();
    counters->Settle();
    counters->Take(0);
    bool any = false;
    record = counters->TakeSteps(0, &any);
    wait_ns = record.wait_ns;
    preprocessing_ns = record.preprocessing_ns;
    f = full.Finish(0);
    ASSERT_EQ(f.steps.size(), static_cast<size_t>(kSteps));
    for (const analysis::StepLoop::Step& s : f.steps) {
      full_wait_ns += s.io_ns;
      full_joined_ns += s.joined_ns;
      full_map_ns += s.map_ns;
      full_copy_ns += s.map_copy_ns;
    }
  }
  BatchSampler* counters;
  analysis::StepLoop full;
  format::StepRecord record;      // the counters'
  analysis::StepLoop::Result f;   // the full events'
  uint64_t wait_ns = 0, preprocessing_ns = 0, full_wait_ns = 0, full_joined_ns = 0;
  uint64_t full_map_ns = 0, full_copy_ns = 0;
};

// A decoder's loop: each step's fetch opens a file, reads it in 8 chunks
// of 50 us with 300 us of decoding after each (joined: under 1 ms), and
// closes it. The wait is the whole stretch; of it, the 8 x 300 us between
// the reads (and the 10 us after the open) are preprocessing, the calls'
// 420 us reading. (The counters counted all 2.83 ms reading.)
TEST_F(BatchSamplerTest, ADecodersWorkBetweenJoinedReadsIsPreprocessing) {
  const uint32_t step = Id("optimizer_step");
  BatchSampler sampler(&strings_, 60000 * kMs);
  Both both(&sampler);
  for (int n = 0; n < kSteps; ++n) {
    uint64_t t = kStart + n * kPeriod + 1 * kMs;
    both.Call(t, t + 10 * kUs);  // open
    t += 20 * kUs;
    for (int k = 0; k < 8; ++k, t += 350 * kUs) both.Call(t, t + 50 * kUs);
    both.Call(t, t + 10 * kUs);  // close, right after the last decoding
    both.Step(step, kStart + n * kPeriod + 8 * kMs, kStart + (n + 1) * kPeriod);
  }
  both.Finish();
  const uint64_t stretch = 20 * kUs + 8 * 350 * kUs + 10 * kUs;
  const uint64_t between = 10 * kUs + 8 * 300 * kUs;
  EXPECT_EQ(both.wait_ns, kSteps * stretch);
  EXPECT_EQ(both.full_wait_ns, both.wait_ns);
  EXPECT_EQ(both.preprocessing_ns, kSteps * between);
  EXPECT_EQ(both.full_joined_ns, both.preprocessing_ns);
}

// nanoGPT's get_batch over a map: np.memmap's open, fstat, mmap and close
// (5 us apart: the program's own), then page faults on evicted pages with
// the copy out of the map between them (40 us: reading, next to a fault),
// and a read call after the last fault (its gap too is next to a fault).
// Only the gaps between the calls are preprocessing, as in the full events.
// (Calls less than 1 ms apart around faults are one run of calls to the
// counters, which count its time between calls all reading: they keep no
// call's place in a run.)
TEST_F(BatchSamplerTest, TheCopyOutOfAMapNextToItsFaultsIsReading) {
  const uint32_t step = Id("optimizer_step");
  BatchSampler sampler(&strings_, 60000 * kMs);
  Both both(&sampler);
  for (int n = 0; n < kSteps; ++n) {
    uint64_t t = kStart + n * kPeriod + 1 * kMs;
    for (int k = 0; k < 4; ++k, t += 15 * kUs) both.Call(t, t + 10 * kUs);
    t += 200 * kUs;  // numpy's slicing before the first fault
    for (int k = 0; k < 6; ++k, t += 340 * kUs) both.Fault(t, t + 300 * kUs);
    both.Call(t + 60 * kUs, t + 70 * kUs);
    both.Step(step, kStart + n * kPeriod + 8 * kMs, kStart + (n + 1) * kPeriod);
  }
  both.Finish();
  EXPECT_EQ(both.full_wait_ns, both.wait_ns);
  EXPECT_EQ(both.preprocessing_ns, kSteps * 3 * 5 * kUs);
  EXPECT_EQ(both.full_joined_ns, both.preprocessing_ns);
}

// What a step's wait cannot see, which the verdict weighs to say that it is
// not measured (lib/analysis/findings/verdict.cc, StepUnmeasured): the
// counters' step unseen figures as the full events' (step_loop.h, Result).
//
// A sort after each of a step's three reads (8 ms: further apart than the
// join): 16 ms a step between reads that no wait counts, the open's 2 ms
// before the first read (no read) and the close after the last not
// among them. (The first window's reads, before the thread stepped, are
// the counters' start-up: a step of six, the median the same.)
TEST_F(BatchSamplerTest, WorkBetweenReadsFarApartIsTheFullEventsUnjoinedTime) {
  const uint32_t step = Id("optimizer_step");
  BatchSampler sampler(&strings_, 60000 * kMs);
  Both both(&sampler);
  for (int n = 0; n < kSteps; ++n) {
    uint64_t t = kStart + n * kPeriod * 4;
    sampler.OtherDataCalls(t, t + 10 * kUs, 10 * kUs);  // the open
    both.full.AddDataIo(1, t, t + 10 * kUs, 0, 0);
    t += 2 * kMs;
    for (int k = 0; k < 3; ++k, t += 8 * kMs) both.Call(t, t + 100 * kUs);
    sampler.OtherDataCalls(t, t + 10 * kUs, 10 * kUs);  // the close
    both.full.AddDataIo(1, t, t + 10 * kUs, 0, 0);
    both.Step(step, t + 1 * kMs, kStart + (n + 1) * kPeriod * 4 - 1 * kMs);
  }
  both.Finish();
  EXPECT_EQ(both.f.unjoined_ns, kSteps * 2 * (8 * kMs - 100 * kUs));
  EXPECT_EQ(both.record.unjoined_ns, both.f.unjoined_ns);
  EXPECT_EQ(both.record.other_threads_io_ns, 0u);
  EXPECT_EQ(both.record.map_live_ns, 0u);
}

// A prefetcher: thread 2 reads each batch (4 calls 200 us apart, joined)
// and hands it over through a queue; thread 1 steps and reads nothing.
// Its reading from thread 1's first step on is the other threads' data
// I/O, as the full events count it; the reads before are the start-up's.
TEST_F(BatchSamplerTest, AThreadThatNeverStepsReadsAsAnotherThread) {
  const uint32_t step = Id("optimizer_step");
  BatchSampler sampler(&strings_, 60000 * kMs);
  Both both(&sampler);
  auto batch = [&](uint64_t t) {
    sampler.SetThread(2);
    for (int k = 0; k < 4; ++k, t += 300 * kUs) {
      sampler.DataRead(t, t + 100 * kUs, 100 * kUs);
      both.full.AddDataIo(2, t, t + 100 * kUs, 65536, 0);
    }
    sampler.SetThread(1);
  };
  batch(kStart - kPeriod);  // ahead of the first step
  for (int n = 0; n < kSteps; ++n) {
    const uint64_t t = kStart + n * kPeriod;
    both.Step(step, t, t + 2 * kMs);
    batch(t + 3 * kMs);
  }
  both.Finish();
  EXPECT_EQ(both.record.other_threads_io_ns, kSteps * 1000 * kUs);
  EXPECT_EQ(both.record.other_threads_io_ns, both.f.other_threads_io_ns);
  EXPECT_EQ(both.record.wait_ns, 0u);
}

// nanoGPT's np.memmap, made after the first step and never torn down,
// then a second map made and torn down each later step (nanoGPT's
// get_batch): live from 6 ms before the second step to the loop's end,
// counted once however many maps overlap, as the full events' union (from
// the first step's start: the counters' loop). The map calls' time in the
// steps' waits is no reading: the "mapping" part of the preprocessing, as
// in the full events (the counters counted it reading: a munmap of a
// touched 256 MiB map takes milliseconds).
TEST_F(BatchSamplerTest, DataMapsAreLiveTimeAndTheirCallsNoReading) {
  const uint32_t step = Id("optimizer_step");
  BatchSampler sampler(&strings_, 60000 * kMs);
  Both both(&sampler);
  for (int n = 0; n < kSteps; ++n) {
    const uint64_t t = kStart + n * kPeriod;
    if (n == 1) {
      both.MapCall(t - 6100 * kUs, t - 6 * kMs, 1);
    } else if (n > 1) {
      both.MapCall(t - 5100 * kUs, t - 5 * kMs, 1);
      both.MapCall(t - 4900 * kUs, t - 4 * kMs, -1);  // 900 us: pages to unmap
    }
    both.Call(t - 3 * kMs, t - 2 * kMs);
    both.Step(step, t, t + 2 * kMs);
  }
  both.Finish();
  const uint64_t loop_end = kStart + (kSteps - 1) * kPeriod + 2 * kMs;
  EXPECT_EQ(both.record.map_live_ns, loop_end - (kStart + kPeriod - 6 * kMs));
  EXPECT_EQ(both.record.map_live_ns, both.f.map_live_ns);
  EXPECT_EQ(both.wait_ns, both.full_wait_ns);
  EXPECT_EQ(both.full_map_ns, 100 * kUs + (kSteps - 2) * 1000 * kUs);
  EXPECT_EQ(both.preprocessing_ns, both.full_joined_ns + both.full_map_ns);
}

// nanoGPT's get_batch with its token file's pages in memory: np.memmap's
// open, mmap and close, 3 ms of slicing and copying out of the map (no
// call, no page fault), the map dropped on return (munmap), then the
// step. The map was the batch's: its whole life is the wait, one stretch,
// its time between calls preprocessing, the copies out of the map a part
// of it, on both sides (each wait was the calls' 0.1 ms before: 29 ms of a
// get_batch's 188 ms by its clock). A map kept past the step (the next
// get_batch drops it, as scripts/map_each_step.py does) is no batch's:
// its copies are not seen (the verdict's live-map rule says so).
TEST_F(BatchSamplerTest, AMapMadeAndDroppedForTheBatchIsItsWaitAllItsLife) {
  const uint32_t step = Id("optimizer_step");
  for (const bool kept : {false, true}) {
    BatchSampler sampler(&strings_, 60000 * kMs);
    Both both(&sampler);
    for (int n = 0; n < kSteps; ++n) {
      const uint64_t t = kStart + n * kPeriod + 1 * kMs;
      both.Call(t, t + 10 * kUs);                    // open
      both.MapCall(t + 20 * kUs, t + 30 * kUs, 1);   // mmap
      if (kept && n > 0) both.MapCall(t + 40 * kUs, t + 50 * kUs, -1);  // the last one's
      both.Call(t + 60 * kUs, t + 70 * kUs);         // close; then 3 ms of copies
      if (!kept) both.MapCall(t + 3070 * kUs, t + 3170 * kUs, -1);
      both.Step(step, kStart + n * kPeriod + 8 * kMs, kStart + (n + 1) * kPeriod);
    }
    both.Finish();
    EXPECT_EQ(both.wait_ns, both.full_wait_ns) << kept;
    EXPECT_EQ(both.record.mapping_ns, both.full_map_ns) << kept;
    EXPECT_EQ(both.record.map_copy_ns, both.full_copy_ns) << kept;
    EXPECT_EQ(both.preprocessing_ns, both.full_joined_ns + both.full_map_ns) << kept;
    if (kept) {
      EXPECT_EQ(both.wait_ns, kSteps * 70 * kUs);
      EXPECT_EQ(both.full_copy_ns, (kSteps - 1) * 10 * kUs);  // the mmap to the last one's munmap
      continue;
    }
    EXPECT_EQ(both.wait_ns, kSteps * 3170 * kUs);
    // From the mmap's end to the munmap's start, less the close's 10 us.
    EXPECT_EQ(both.full_copy_ns, kSteps * 3030 * kUs);
    EXPECT_EQ(both.full_map_ns, kSteps * 110 * kUs);
    EXPECT_EQ(both.full_joined_ns, kSteps * (3170 - 110 - 20) * kUs);
  }
}

// The first step's window (from kStart: a period back from the end of the
// 2 ms first step) begins inside a call, or a page fault, begun less than
// a period before: both sides count its time from the window's start. (The
// full events began at the first call after it: a fault stalled 20 ms
// under load cost them 12.4 ms of a 436 ms wait; integration.keep_causes.
// One begun earlier is the start-up's to the full events alone: the
// counters keep spans, not calls: docs/ANALYSIS_RUNS.md.)
TEST_F(BatchSamplerTest, ACallInProgressAtTheFirstWindowsStartIsItsWaitFromThere) {
  const uint32_t step = Id("optimizer_step");
  for (const bool fault : {false, true}) {
    BatchSampler sampler(&strings_, 60000 * kMs);
    Both both(&sampler);
    for (int n = 0; n < kSteps; ++n) {
      const uint64_t t = kStart + n * kPeriod;
      if (n == 0 && fault) {
        both.Fault(t - 8 * kMs, t + 3 * kMs);
      } else if (n == 0) {
        both.Call(t - 6 * kMs, t + 3 * kMs);
      }
      both.Call(t + 3500 * kUs, t + 4 * kMs);
      both.Step(step, t + 8 * kMs, t + kPeriod);
    }
    both.Finish();
    EXPECT_EQ(both.wait_ns, 4 * kMs + (kSteps - 1) * 500 * kUs) << fault;
    EXPECT_EQ(both.full_wait_ns, both.wait_ns) << fault;
  }
}

// Page faults the kernel gave no time (their wait taken off the CPU by a
// loaded machine's host: lib/core/map_faults.h) are points the thread read
// at: both sides join the stretch across them. (The full events dropped
// them: a window's reading cut in two, 1.3 ms of a 4.0 ms wait lost.)
TEST_F(BatchSamplerTest, FaultsOfNoLengthJoinTheReadingAroundThem) {
  const uint32_t step = Id("optimizer_step");
  BatchSampler sampler(&strings_, 60000 * kMs);
  Both both(&sampler);
  for (int n = 0; n < kSteps; ++n) {
    const uint64_t t = kStart + n * kPeriod;
    both.Call(t + 1 * kMs, t + 1100 * kUs);
    for (uint64_t at = 1600; at <= 3600; at += 500) both.Fault(t + at * kUs, t + at * kUs);
    both.Call(t + 4 * kMs, t + 4100 * kUs);
    both.Step(step, t + 8 * kMs, t + kPeriod);
  }
  both.Finish();
  EXPECT_EQ(both.wait_ns, kSteps * 3100 * kUs);
  EXPECT_EQ(both.full_wait_ns, both.wait_ns);
}

// A loop of steps that saves a checkpoint after every other step and
// loads it back at once to verify it: the save's close and the load's
// reads are no step's reading (the full events' IsCheckpointCall: a
// review's step loop read 69.3 ms where the kept events had 18.4); a load
// after a later step, of what an earlier one saved, is (a cache's
// samples). The same loop's reading without them, in a sampler of its own.
TEST_F(BatchSamplerTest, ACheckpointsCallsAreNoStepsReading) {
  const uint32_t step = Id("optimizer_step"), save = Id("save_checkpoint");
  const uint32_t load = Id("load_checkpoint");
  BatchSampler with(&strings_, 60000 * kMs), without(&strings_, 60000 * kMs);
  with.SetThread(1);
  without.SetThread(1);
  for (int n = 0; n < kSteps; ++n) {
    const uint64_t t = kStart + n * kPeriod;
    if (n % 2 == 1) {
      with.OtherDataCalls(t + 2300 * kUs, t + 2400 * kUs, 100 * kUs);  // torch.save's close
      with.Region(save, t + 500 * kUs, t + 2500 * kUs);
    }
    if (n > 0) {
      // Loaded back: a verification after a save, data after a later step.
      with.DataRead(t + 2700 * kUs, t + 4500 * kUs, 1800 * kUs);
      with.Region(load, t + 2600 * kUs, t + 4600 * kUs);
      if (n % 2 == 0) without.DataRead(t + 2700 * kUs, t + 4500 * kUs, 1800 * kUs);
    }
    for (BatchSampler* s : {&with, &without}) {
      s->DataRead(t + 6 * kMs, t + 7 * kMs, 1 * kMs);  // the batch
      s->Region(step, t + 8 * kMs, t + kPeriod);
      s->Settle();
    }
  }
  uint64_t wait[2] = {};
  for (int k = 0; k < 2; ++k) {
    BatchSampler& s = k == 0 ? with : without;
    s.FinishSteps();
    s.Settle();
    s.Take(0);
    bool any = false;
    wait[k] = s.TakeSteps(0, &any).wait_ns;
  }
  EXPECT_EQ(wait[0], wait[1]);
  EXPECT_GT(wait[1], static_cast<uint64_t>(kSteps) * kMs);  // the batches and two data loads
}

}  // namespace
}  // namespace dlprof::core
