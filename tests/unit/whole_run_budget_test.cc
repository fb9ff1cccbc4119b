// The reader's split of a long run's batch waits within a budget of
// samples (lib/analysis/whole_run_causes.h, BatchSampleBudget): thinned as
// read -- the hashed samples by their hash, a pass's first batches by their
// pass's -- what is left still splits the whole run, within its standard
// errors; and the reader's way of holding only samples gives the same split.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "lib/analysis/whole_run_causes.h"
#include "tests/helpers/batch_loop.h"

namespace dlprof::core {
namespace {

using analysis::ProcessBatches;
using analysis::SplitWholeRunWait;
using analysis::WholeRunCauses;

constexpr uint64_t kBatches = 20000;  // HalfReadingBatch's, 100 an interval

class WholeRunBudgetTest : public BatchSamplerTest {
 protected:
  // The records of a loop's and its two workers' processes over kBatches
  // batches; `pass_a_batch`: each batch the first of a pass of its own.
  std::vector<ProcessBatches> Job(bool pass_a_batch) {
    BatchSampler loop(&strings_, 1000 * kMs);
    BatchSampler workers[2] = {BatchSampler(&strings_, 1000 * kMs),
                               BatchSampler(&strings_, 1000 * kMs)};
    std::vector<ProcessBatches> job = {{"m", {}}, {"m", {}}, {"m", {}}};
    for (uint64_t n = 0; n < kBatches; ++n) {
      HalfReadingBatch(n, &loop, workers, pass_a_batch ? kTag | n << format::kBatchIndexBits : 0);
      if (n % 100 == 99) {
        job[0].records.push_back(loop.Take(0));
        for (int k = 0; k < 2; ++k) job[1 + k].records.push_back(workers[k].Take(0));
      }
    }
    return job;
  }
  // `job` read within a budget of `samples`.
  static std::vector<ProcessBatches> Thinned(const std::vector<ProcessBatches>& job,
                                             size_t samples,
                                             analysis::BatchSampleBudget* budget) {
    std::vector<ProcessBatches> thinned;
    for (const ProcessBatches& p : job) budget->Append(p, &thinned);
    size_t held = 0;
    for (const ProcessBatches& p : thinned) {
      for (const auto& r : p.records) held += analysis::BatchSamplesOf(r);
    }
    EXPECT_LE(held, samples);
    return thinned;
  }
};

// A long run read within a budget of samples: thinned as read, what is left
// still splits the whole run -- within its standard errors, which grow --
// and the batches sampled always stay.
TEST_F(WholeRunBudgetTest, SamplesThinnedToABudgetStillSplitTheWhole) {
  const std::vector<ProcessBatches> job = Job(false);
  const WholeRunCauses whole = SplitWholeRunWait(job);
  analysis::BatchSampleBudget budget(400);
  const std::vector<ProcessBatches> thinned = Thinned(job, 400, &budget);
  EXPECT_GE(budget.level(), 2);
  const WholeRunCauses c = SplitWholeRunWait(thinned);
  EXPECT_LT(c.sampled, whole.sampled);
  EXPECT_GE(c.sampled, format::kAlwaysSampled);
  EXPECT_EQ(c.total_ns(), 2 * kMs * kBatches);
  EXPECT_EQ(c.handover_ns, 1 * kMs * kBatches);  // in every wait: exact whatever the sample
  EXPECT_GT(c.reading_error_ns, whole.reading_error_ns);
  EXPECT_LE(std::abs(static_cast<double>(c.reading_ns) - 0.5 * kMs * kBatches),
            4.0 * c.reading_error_ns)
      << c.reading_ns << " " << c.reading_error_ns;

  // The reader's way, holding samples only (lib/analysis/whole_run.cc):
  // each record's counts added before the budget thins it, the records then
  // left without a sample dropped, the samples joined at the end. The same
  // split, from fewer records.
  analysis::BatchSampleBudget reader_budget(400);
  std::vector<ProcessBatches> samples;
  analysis::WaitCauseSums sums;
  for (ProcessBatches p : job) {
    for (const auto& r : p.records) sums.AddCounts(r);
    const uint8_t level = reader_budget.level();
    reader_budget.Append(std::move(p), &samples);
    analysis::DropUnsampled(&samples, reader_budget.level() == level ? samples.size() - 1 : 0);
  }
  size_t records = 0;
  for (const ProcessBatches& p : samples) {
    records += p.records.size();
    for (const auto& r : p.records) EXPECT_GT(analysis::BatchSamplesOf(r), 0u);
  }
  EXPECT_LT(records, 3 * kBatches / 100 / 2);  // of 600
  const analysis::FetchIndex fetches(samples);
  for (const ProcessBatches& p : samples) {
    for (const auto& r : p.records) sums.AddSamples(fetches, p.machine, r);
  }
  const WholeRunCauses read = sums.Split(false);
  EXPECT_EQ(read.reading_ns, c.reading_ns);
  EXPECT_EQ(read.preprocessing_ns, c.preprocessing_ns);
  EXPECT_EQ(read.handover_ns, c.handover_ns);
  EXPECT_EQ(read.worker_startup_ns, c.worker_startup_ns);
  EXPECT_EQ(read.reading_error_ns, c.reading_error_ns);
  EXPECT_EQ(read.preprocessing_error_ns, c.preprocessing_error_ns);
  EXPECT_EQ(read.flow_waits, c.flow_waits);
  EXPECT_EQ(read.sampled, c.sampled);
}

// A loop that starts a pass every step (`next(iter(loader))`): every batch
// is a pass's first, which the flusher keeps whatever its hash. Read within
// a budget, the passes are thinned by their hash: what is left is a sample
// of passes, of known weight, that still splits the whole run.
TEST_F(WholeRunBudgetTest, APassEveryStepIsThinnedByPass) {
  const std::vector<ProcessBatches> job = Job(true);
  const WholeRunCauses whole = SplitWholeRunWait(job);
  EXPECT_EQ(whole.sampled, kBatches);  // all of them, split exactly
  EXPECT_EQ(whole.reading_ns, kMs * kBatches / 2);
  analysis::BatchSampleBudget budget(400);
  const std::vector<ProcessBatches> thinned = Thinned(job, 400, &budget);
  EXPECT_GE(budget.pass_level(), 6);
  const WholeRunCauses c = SplitWholeRunWait(thinned);
  EXPECT_LT(c.sampled, 200u);
  EXPECT_GT(c.sampled, 20u);
  EXPECT_EQ(c.total_ns(), 2 * kMs * kBatches);
  EXPECT_EQ(c.handover_ns, 1 * kMs * kBatches);  // in every wait: exact whatever the sample
  EXPECT_GT(c.reading_error_ns, 0u);
  EXPECT_LE(std::abs(static_cast<double>(c.reading_ns) - 0.5 * kMs * kBatches),
            4.0 * c.reading_error_ns)
      << c.reading_ns << " " << c.reading_error_ns;
}

}  // namespace
}  // namespace dlprof::core
