// What in_order=False would give (the head_of_line finding's estimate;
// docs/ANALYSIS_LOADER.md, "Inside the loader"): a DataLoader pass replayed twice,
// handing its batches over in order and as each is made, and the wait
// saved between the two.
//
// The replay is torch's loader as it runs: the batches go to their workers
// (the ones that made them) and each worker makes its own in order, as long
// as it took each time; the loader gives out `prefetch` indices a worker at
// the pass's start and one more for each batch the loop takes; a batch is
// ready when made plus the hand-over it had; the loop takes the next one
// (in order) or the first ready (out of order) and spends its own time
// after each take as it did. Replaying both ways, and taking the
// difference, leaves out what the replay cannot tell (the workers' start-up
// against the real start, the scheduler). Everything per pass: memory grows
// with the batches of a pass.
#ifndef DLPROF_LIB_ANALYSIS_OUT_OF_ORDER_H_
#define DLPROF_LIB_ANALYSIS_OUT_OF_ORDER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dlprof::analysis {

// One batch the loop waited for, in the order it asked.
struct BatchTiming {
  uint64_t asked = 0, arrived = 0;      // the batch wait
  uint64_t fetch_start = 0, made = 0;   // its worker's fetch (made 0: unknown)
  uint32_t worker = 0;                  // the process that made it
};

// torch's default prefetch_factor: the indices each worker holds ahead.
constexpr size_t kPrefetchPerWorker = 2;

// The wait in_order=False would have saved in a pass (0 where nothing is
// known of its batches' making).
uint64_t OutOfOrderSaving(const std::vector<BatchTiming>& pass);

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_OUT_OF_ORDER_H_
