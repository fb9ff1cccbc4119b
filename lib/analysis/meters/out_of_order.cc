// OutOfOrderSaving (out_of_order.h): a pass replayed in order and out of
// order.
#include "lib/analysis/meters/out_of_order.h"

#include <algorithm>
#include <unordered_map>

namespace dlprof::analysis {
namespace {

// The pass's wait, its batches handed over `in_order` or as each is ready.
uint64_t Replay(const std::vector<BatchTiming>& pass, bool in_order) {
  const size_t n = pass.size();
  // Each worker's first fetch of the pass starts when it really did; after
  // that it makes its batches one after another, each when given out.
  std::unordered_map<uint32_t, uint64_t> free_at;
  for (const BatchTiming& b : pass) free_at.emplace(b.worker, b.fetch_start);
  const size_t ahead = std::min(n, kPrefetchPerWorker * free_at.size());
  std::vector<uint64_t> given(n, UINT64_MAX), ready(n, UINT64_MAX);
  std::vector<bool> taken(n, false);
  const uint64_t start = pass.front().asked;
  for (size_t k = 0; k < ahead; ++k) given[k] = start;
  size_t next_given = ahead, made_up_to = 0;  // batches [0, made_up_to) have `ready`
  uint64_t t = start, wait = 0;
  for (size_t taken_count = 0; taken_count < n; ++taken_count) {
    // Make what has been given out (a worker's batches in order).
    for (; made_up_to < next_given; ++made_up_to) {
      const BatchTiming& b = pass[made_up_to];
      uint64_t& free = free_at[b.worker];
      const uint64_t begin = std::max(free, given[made_up_to]);
      free = begin + (b.made - b.fetch_start);
      ready[made_up_to] = free + (b.arrived - std::max(b.asked, std::min(b.made, b.arrived)));
    }
    size_t pick = taken_count;  // in order: the next one
    if (!in_order) {
      pick = SIZE_MAX;
      for (size_t k = 0; k < made_up_to; ++k) {
        if (!taken[k] && (pick == SIZE_MAX || ready[k] < ready[pick])) pick = k;
      }
    }
    taken[pick] = true;
    if (ready[pick] > t) wait += ready[pick] - t;
    t = std::max(t, ready[pick]);
    if (next_given < n) given[next_given++] = t;  // one index more for each batch taken
    // The loop's own time after its taken_count-th wait, as it was.
    const BatchTiming& b = pass[taken_count];
    if (taken_count + 1 < n && pass[taken_count + 1].asked > b.arrived) {
      t += pass[taken_count + 1].asked - b.arrived;
    }
  }
  return wait;
}

}  // namespace

uint64_t OutOfOrderSaving(const std::vector<BatchTiming>& pass) {
  if (pass.empty()) return 0;
  for (const BatchTiming& b : pass) {
    if (b.made == 0 || b.made < b.fetch_start) return 0;  // not known: nothing to replay
  }
  const uint64_t in_order = Replay(pass, true), out_of_order = Replay(pass, false);
  return in_order > out_of_order ? in_order - out_of_order : 0;
}

}  // namespace dlprof::analysis
