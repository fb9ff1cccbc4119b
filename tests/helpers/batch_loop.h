// The flusher's batch samplers of a loop and its two loader workers, fed
// by hand (lib/core/batch_sampler.h): the fixture of the tests of the
// samples they keep (batch_sampler_test.cc) and of the reader's split of
// them within a budget (whole_run_budget_test.cc).
#ifndef DLPROF_TESTS_HELPERS_BATCH_LOOP_H_
#define DLPROF_TESTS_HELPERS_BATCH_LOOP_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "lib/core/batch_sampler.h"
#include "lib/core/string_table.h"

namespace dlprof::core {

constexpr uint64_t kMs = 1000000;
constexpr uint64_t kTag = 1234ull << 42;  // the loop's pid, pass 0

class BatchSamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(strings_.Init());
    wait_ = Id("load_batch");
    fetch_ = Id("fetch_batch");
    pin_ = Id("pin_batch");
    flow_ = Id("batch");
  }
  uint32_t Id(const char* s) { return strings_.Intern(s, strlen(s)); }
  // Batch n of a loop and two workers, as their samplers see it: fetched
  // by worker n % 2 over [t, t+4 ms), t = 10 ms * n, reading its first ms
  // (worker 0) or its last two (worker 1); the loop waits [t+3, t+5): 1 ms
  // before the batch is made (worker 1's all reading, worker 0's
  // preprocessing) and 1 ms of hand-over.
  // `id`: the batch's flow id, where not batch n of pass 0.
  void HalfReadingBatch(uint64_t n, BatchSampler* loop, BatchSampler* workers,
                        uint64_t id = 0) {
    const uint64_t t = 10 * kMs * n;
    if (id == 0) id = kTag | n;
    BatchSampler& w = workers[n % 2];
    w.SetThread(100 + n % 2);
    if (n % 2 == 0) {
      w.DataRead(t, t + 1 * kMs, 1 * kMs);
    } else {
      w.DataRead(t + 2 * kMs, t + 4 * kMs, 2 * kMs);
    }
    w.Flow(false, flow_, id, t + 4 * kMs - 1);
    w.Region(fetch_, t, t + 4 * kMs);
    loop->SetThread(1);
    loop->Flow(true, flow_, id, t + 5 * kMs - 1);
    loop->Region(wait_, t + 3 * kMs, t + 5 * kMs);
  }

  StringTable strings_;
  uint32_t wait_ = 0, fetch_ = 0, pin_ = 0, flow_ = 0;
};

}  // namespace dlprof::core

#endif  // DLPROF_TESTS_HELPERS_BATCH_LOOP_H_
