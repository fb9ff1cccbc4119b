// A loop without a DataLoader (lib/analysis/meters/step_loop.h): the first
// step's window, as long as the second step or the median of the next ones
// where that is shorter, so that a slow second step does not stretch the
// loop back into the start-up and count the start-up's reads as a wait;
// measured from step 1's start, so that a long first step keeps it. And
// what a wait is made of: time in data calls, time between joined calls
// (the program's own work), work between reads further apart, and other
// threads' reading (a prefetcher's), which no step's wait holds; and the
// loop's time with a data map live in a stepping process, which it cannot
// see read through.
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

TEST(StepLoopTest, ACallInProgressAtTheFirstWindowsStartCountsFromThereIfBegunWithinAPeriod) {
  // Steps every 10 ms from 1000 ms, the first 998-1000: the first window
  // begins at 990. A read of 8 MiB from 985 to 995 ms (a fault stalled
  // under load, a batch's read begun early) is the first wait from 990:
  // 5 ms, half its bytes. One from 600 to 995 ms (the data set read into
  // memory at start-up, then sliced: 385 ms of reading "79 ms of the first
  // batch's" in a review's run) began more than a period before: start-up.
  for (const uint64_t begun : {985, 600}) {
    StepLoop loop;
    const uint64_t t = 1;
    loop.AddDataIo(t, begun * kMs, 995 * kMs, 8 << 20, 0);
    loop.AddStep(t, 998 * kMs, 1000 * kMs);
    for (uint64_t end : {1010, 1020, 1030, 1040}) loop.AddStep(t, (end - 2) * kMs, end * kMs);
    const StepLoop::Result r = loop.Finish(0);
    ASSERT_EQ(r.steps.size(), 5u);
    EXPECT_EQ(r.steps[0].window_start, 990 * kMs);
    const bool within = begun == 985;
    EXPECT_EQ(r.steps[0].io_ns, within ? 5 * kMs : 0) << begun;
    EXPECT_EQ(r.first_window_io_ns, within ? 5 * kMs : 0) << begun;
    EXPECT_EQ(r.first_window_read_bytes, within ? 4u << 20 : 0) << begun;
  }
}

TEST(StepLoopTest, AFirstStepLongerThanThePeriodKeepsItsWindow) {
  // One rank of two (an mpi4py loop, its optimizer_step region around the
  // compute and an allreduce): its get_batch reads at 7-9 ms, then a first
  // step of 20 ms (its allreduce waits for the other rank), then steps of
  // 6 ms every 10 ms, each after 2 ms of reading. Measured back from step
  // 1's end (30 - 10 = 20 ms, after its start) its window was empty: a wait
  // of 0 where the program's clock had 2 ms (1.8 ms in a review's run).
  StepLoop loop;
  const uint64_t t = 1;
  loop.AddDataIo(t, 7 * kMs, 9 * kMs, 4096, 0);
  loop.AddStep(t, 10 * kMs, 30 * kMs);
  for (uint64_t end : {40, 50, 60, 70}) {
    loop.AddDataIo(t, (end - 9) * kMs, (end - 7) * kMs, 4096, 0);
    loop.AddStep(t, (end - 6) * kMs, end * kMs);
  }
  const StepLoop::Result r = loop.Finish(0);
  ASSERT_EQ(r.steps.size(), 5u);
  // A period back from the end of a 6 ms step begun at 10 ms: 6 ms.
  EXPECT_EQ(r.loop_start, 6 * kMs);
  EXPECT_EQ(r.steps[0].window_start, 6 * kMs);
  EXPECT_EQ(r.steps[0].io_ns, 2 * kMs);
  EXPECT_EQ(r.first_window_io_ns, 2 * kMs);
  for (size_t i = 1; i < r.steps.size(); ++i) EXPECT_EQ(r.steps[i].io_ns, 2 * kMs) << i;
}

TEST(StepLoopTest, TheTimeBetweenJoinedCallsIsKeptApartFromTheCalls) {
  // A decoder's window: four 0.1 ms reads 0.5 ms apart (the decoding
  // between them, joined), then the step. io_ns: 0.4 + 1.5 ms; of it
  // joined 1.5 ms: not reading, the program's work.
  StepLoop loop;
  const uint64_t t = 1;
  loop.AddStep(t, 0, 1 * kMs);
  for (uint64_t i = 0; i < 4; ++i) {
    const uint64_t at = 10 * kMs + i * 600000;
    loop.AddDataIo(t, at, at + 100000, 4096, 0);
  }
  loop.AddStep(t, 20 * kMs, 21 * kMs);
  const StepLoop::Result r = loop.Finish(0);
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_EQ(r.steps[1].io_ns, 1900000u);
  EXPECT_EQ(r.steps[1].joined_ns, 1500000u);
  EXPECT_EQ(r.unjoined_ns, 0u);
}

TEST(StepLoopTest, TheTimeNextToAPageFaultIsReading) {
  // nanoGPT's get_batch through a memmap: faults 0.1 ms each with the copy
  // out of the map between them (0.2 ms): all reading, none joined apart;
  // then a read call after a fault, and another 0.3 ms after it.
  StepLoop loop;
  const uint64_t t = 1;
  loop.AddStep(t, 0, 1 * kMs);
  for (uint64_t i = 0; i < 3; ++i) {
    const uint64_t at = 10 * kMs + i * 300000;
    loop.AddDataIo(t, at, at + 100000, 4096, 0, /*fault=*/true);
  }
  loop.AddDataIo(t, 11 * kMs, 11 * kMs + 100000, 4096, 0);
  loop.AddDataIo(t, 11 * kMs + 400000, 11 * kMs + 500000, 4096, 0);
  loop.AddStep(t, 20 * kMs, 21 * kMs);
  const StepLoop::Result r = loop.Finish(0);
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_EQ(r.steps[1].io_ns, 1500000u);
  EXPECT_EQ(r.steps[1].fault_ns, 300000u);
  EXPECT_EQ(r.steps[1].joined_ns, 300000u);  // only between the two reads
}

TEST(StepLoopTest, WorkBetweenReadsFurtherApartThanTheJoinIsCountedAsUnjoined) {
  // Each window: a 0.2 ms read, 5 ms of sorting, a 0.2 ms read, 5 ms, a
  // 0.2 ms read: a wait of 0.6 ms, its span 10.6 ms: 10 ms unjoined.
  StepLoop loop;
  const uint64_t t = 1;
  loop.AddStep(t, 0, 1 * kMs);
  for (uint64_t step = 1; step <= 3; ++step) {
    const uint64_t base = step * 100 * kMs;
    for (uint64_t i = 0; i < 3; ++i) {
      const uint64_t at = base + i * 5200000;
      loop.AddDataIo(t, at, at + 200000, 4096, 0);
    }
    loop.AddStep(t, base + 50 * kMs, base + 51 * kMs);
  }
  const StepLoop::Result r = loop.Finish(0);
  ASSERT_EQ(r.steps.size(), 4u);
  EXPECT_EQ(r.steps[2].io_ns, 600000u);
  EXPECT_EQ(r.steps[2].joined_ns, 0u);
  EXPECT_EQ(r.unjoined_ns, 4 * 10 * kMs);  // the median step's, once a step
}

TEST(StepLoopTest, OneSpreadWindowInManyIsNotTheLoopsSpread) {
  // Nine steps whose reads are joined, and an evaluation pass in the tenth
  // window (reads 50 ms apart, forward passes between): the median step's
  // spread is none.
  StepLoop loop;
  const uint64_t t = 1;
  loop.AddStep(t, 0, 1 * kMs);
  for (uint64_t step = 1; step <= 10; ++step) {
    const uint64_t base = step * 1000 * kMs;
    const uint64_t apart = step == 5 ? 50 * kMs : 300000;
    for (uint64_t i = 0; i < 4; ++i) {
      loop.AddDataIo(t, base + i * apart, base + i * apart + 100000, 4096, 0);
    }
    loop.AddStep(t, base + 500 * kMs, base + 501 * kMs);
  }
  const StepLoop::Result r = loop.Finish(0);
  ASSERT_EQ(r.steps.size(), 11u);
  EXPECT_EQ(r.unjoined_ns, 0u);  // 149.7 ms summed
}

TEST(StepLoopTest, ASavesOtherCallsBeforeTheReadsSpreadNothing) {
  // After a step, a save (its writes are no data I/O) whose fstat and lseek
  // are, 40 ms before the batch's reads, joined: no work between reads.
  StepLoop loop;
  const uint64_t t = 1;
  loop.AddStep(t, 0, 1 * kMs);
  loop.AddDataIo(t, 2 * kMs, 2 * kMs + 10000, 0, 0);  // fstat
  loop.AddDataIo(t, 2 * kMs + 20000, 2 * kMs + 30000, 0, 0);  // lseek
  for (uint64_t i = 0; i < 4; ++i) {
    const uint64_t at = 42 * kMs + i * 300000;
    loop.AddDataIo(t, at, at + 200000, 65536, 0);
  }
  loop.AddStep(t, 60 * kMs, 61 * kMs);
  const StepLoop::Result r = loop.Finish(0);
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_EQ(r.unjoined_ns, 0u);
}

TEST(StepLoopTest, AThreadThatNeverStepsHasItsLoopsReadingCountedAsOthers) {
  // A prefetcher (thread 2) reads 5 ms before each of the stepping thread's
  // (thread 1) steps, 10 ms apart, and once long before the loop; thread
  // 1 reads nothing itself. No step waits, 30 ms are other threads' (the
  // first window's 5 ms, kept before the first step, among them; the read
  // at 0 ms, before the loop, not).
  StepLoop loop;
  loop.AddDataIo(2, 0, 5 * kMs, 4096, 0);
  for (uint64_t step = 0; step < 6; ++step) {
    const uint64_t base = 100 * kMs + step * 10 * kMs;
    loop.AddDataIo(2, base, base + 5 * kMs, 4096, 0);
    loop.AddStep(1, base + 6 * kMs, base + 7 * kMs);
  }
  const StepLoop::Result r = loop.Finish(0);
  ASSERT_EQ(r.steps.size(), 6u);
  for (const StepLoop::Step& s : r.steps) EXPECT_EQ(s.io_ns, 0u);
  EXPECT_EQ(r.loop_start, 97 * kMs);  // a period (10 ms) back from step 1's end
  EXPECT_EQ(r.other_threads_io_ns, 30 * kMs);
}

TEST(StepLoopTest, TheLoopsTimeWithADataMapLiveInASteppingProcess) {
  // Process 1 steps every 10 ms from 100 to 200 ms; it maps a file at 50
  // ms (before the loop) and unmaps it at 130, maps two at 150 and 160
  // and unmaps them at 170 (one left) and 180. Process 2,
  // which never steps, holds a map throughout: not the loop's.
  StepLoop loop;
  const uint64_t stepper = uint64_t{1} << 32 | 7, other = uint64_t{2} << 32 | 9;
  loop.AddDataMap(1, 50 * kMs, true);
  loop.AddDataMap(2, 60 * kMs, true);
  loop.AddDataIo(other, 95 * kMs, 96 * kMs, 4096, 0);
  for (uint64_t t = 100; t <= 200; t += 10) {
    if (t == 130) loop.AddDataMap(1, 130 * kMs, false);
    if (t == 150) loop.AddDataMap(1, 150 * kMs, true);
    if (t == 160) loop.AddDataMap(1, 160 * kMs, true);
    if (t == 170) loop.AddDataMap(1, 170 * kMs, false);
    if (t == 180) loop.AddDataMap(1, 180 * kMs, false);
    loop.AddStep(stepper, t * kMs, t * kMs + kMs);
  }
  const StepLoop::Result r = loop.Finish(0);
  EXPECT_EQ(r.loop_start, 91 * kMs);  // a period back from the first step's end
  EXPECT_EQ(r.loop_end, 201 * kMs);
  // 91-130 and 150-180.
  EXPECT_EQ(r.map_live_ns, 39 * kMs + 30 * kMs);
}

}  // namespace
}  // namespace dlprof::analysis
