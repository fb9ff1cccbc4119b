// The rules of a loop without a DataLoader (docs/ANALYSIS.md, "Loops
// without a DataLoader") -- its reading's stretches, its first step's
// window -- in one place for both sides that take them:
// the full events' step loop (lib/analysis/meters/step_loop.h) and the
// bounded trace's counters (lib/core/batch_sampler.h).
#ifndef DLPROF_LIB_FORMAT_STEP_RULES_H_
#define DLPROF_LIB_FORMAT_STEP_RULES_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace dlprof::format {

// A step loop's reading: data calls (and page faults) less than this apart
// are one stretch, the time between them included (a get_batch's Python
// between its reads).
inline constexpr uint64_t kStepReadingJoinNs = 1000000;

// How many of the first steps the rule looks at.
inline constexpr size_t kFirstPeriodMarks = 5;

// The first step's period from `marks`, a figure at the end of each of the
// first `n` steps in order (their ends; the GPU's busy time by then): the
// second's increment, or the median of the second to fifth's (the lower of
// the middle two of four) where there are three or more and it is smaller.
// 0 with fewer than two marks.
inline uint64_t FirstStepPeriod(const uint64_t* marks, size_t n) {
  if (n < 2) return 0;
  uint64_t periods[kFirstPeriodMarks - 1];
  size_t count = 0;
  for (size_t i = 1; i < n && i < kFirstPeriodMarks; ++i) {
    periods[count++] = marks[i] - marks[i - 1];
  }
  const uint64_t second = periods[0];
  if (count < 3) return second;
  std::sort(periods, periods + count);
  return std::min(second, periods[(count - 1) / 2]);
}

// The first step's window's start, given step 1's start, the shortest of
// the first kFirstPeriodMarks steps (their regions' lengths) and the period
// (FirstStepPeriod): a period back from the end of a step as short as that,
// begun where step 1 begins. Where step 1 is the shortest, that is its end
// less the period; a first step that runs long (an allreduce waiting for a
// slower rank, a first step's allocations) does not eat into its window, as
// measuring back from its own end did (a step of 13.8 ms in a period of
// 7.7: no window, its 1.8 ms of reading lost). 0 where it would lie before 0.
// (A first batch whose reading runs longer than the others' by more than
// the window's slack is still cut: a cold first read.)
inline uint64_t FirstWindowStart(uint64_t first_start, uint64_t shortest_ns, uint64_t period) {
  const uint64_t end = first_start + shortest_ns;
  return std::min(end > period ? end - period : 0, first_start);
}

}  // namespace dlprof::format

#endif  // DLPROF_LIB_FORMAT_STEP_RULES_H_
