// A loader worker's other calls on its data files (opens, stats, closes)
// in the whole run's split from counters (lib/core/batch_sampler.h): the
// full events' split counts them as reading (lib/analysis/meters/
// wait_causes.cc, WaitCauses::AddIo), and so must the counters, or a
// sample's open descheduled under load is taken for preprocessing
// (tests/integration/test_keep_causes.py: a 96 ms open, 3.6 % of the wait).
#include <gtest/gtest.h>

#include <cstdint>

#include "lib/analysis/whole_run_causes.h"
#include "lib/core/batch_sampler.h"
#include "tests/helpers/batch_loop.h"

namespace dlprof::core {
namespace {

using analysis::ProcessBatches;
using analysis::SplitWholeRunWait;
using analysis::WholeRunCauses;

constexpr uint64_t kUs = 1000;

// Batch 0 fetched over [0, 40 ms): a sample's file opened 5-35 ms (the
// worker descheduled in the call), read 35.01-35.05, closed 35.06-35.07;
// the loop waits [20, 45 ms). As the full events split it: reading the
// open's 20-35 ms and the read and close (50 us), preprocessing the rest
// of the fetch in the wait, hand-over 40-45.
TEST_F(BatchSamplerTest, AWorkersOpenOfItsSampleIsReading) {
  BatchSampler loop(&strings_, 5000 * kMs), worker(&strings_, 5000 * kMs);
  worker.SetThread(7);
  worker.OtherDataCalls(5 * kMs, 35 * kMs, 30 * kMs);
  worker.DataRead(35 * kMs + 10 * kUs, 35 * kMs + 50 * kUs, 40 * kUs);
  worker.OtherDataCalls(35 * kMs + 60 * kUs, 35 * kMs + 70 * kUs, 10 * kUs);
  worker.Flow(false, flow_, kTag | 0, 39 * kMs);
  worker.Region(fetch_, 0, 40 * kMs);
  loop.SetThread(1);
  loop.Flow(true, flow_, kTag | 0, 44 * kMs);
  loop.Region(wait_, 20 * kMs, 45 * kMs);

  const WholeRunCauses c = SplitWholeRunWait(
      {ProcessBatches{"m", {loop.Take(0)}}, ProcessBatches{"m", {worker.Take(0)}}});
  EXPECT_EQ(c.sampled, 1u);
  EXPECT_EQ(c.total_ns(), 25 * kMs);
  EXPECT_EQ(c.handover_ns, 5 * kMs);
  EXPECT_EQ(c.worker_startup_ns, 0u);
  // The calls' 30.05 ms over their span of 30.07 ms, prorated within the
  // eighths (5 ms each): a few us from the full events' 15.05 ms.
  EXPECT_NEAR(static_cast<double>(c.reading_ns), 15.05 * kMs, 20 * kUs);
  EXPECT_EQ(c.reading_ns + c.preprocessing_ns, 20 * kMs);
}

// A batch of 200 samples, each a file opened, read and closed (600 calls,
// more than a thread's spans hold): the calls of a sample are one span, and
// the fetch keeps all of its reading (3.4 ms), its first samples' too.
TEST_F(BatchSamplerTest, ABatchOfAFileASampleKeepsAllOfItsReading) {
  BatchSampler loop(&strings_, 5000 * kMs), worker(&strings_, 5000 * kMs);
  worker.SetThread(7);
  for (uint64_t i = 0; i < 200; ++i) {
    const uint64_t t = i * 200 * kUs;
    worker.OtherDataCalls(t, t + 5 * kUs, 5 * kUs);              // open
    worker.DataRead(t + 10 * kUs, t + 20 * kUs, 10 * kUs);       // pread
    worker.OtherDataCalls(t + 25 * kUs, t + 27 * kUs, 2 * kUs);  // close
  }
  worker.Flow(false, flow_, kTag | 0, 40 * kMs);
  worker.Region(fetch_, 0, 40 * kMs + 1);
  loop.SetThread(1);
  loop.Flow(true, flow_, kTag | 0, 41 * kMs);
  loop.Region(wait_, 0, 41 * kMs);

  const WholeRunCauses c = SplitWholeRunWait(
      {ProcessBatches{"m", {loop.Take(0)}}, ProcessBatches{"m", {worker.Take(0)}}});
  EXPECT_EQ(c.sampled, 1u);
  EXPECT_NEAR(static_cast<double>(c.reading_ns), 200 * 17 * kUs, 8 * kUs);  // (eighths kept in us)
}

}  // namespace
}  // namespace dlprof::core
