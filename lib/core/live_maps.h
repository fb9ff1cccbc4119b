// How long a process held a data file's map while its loop of steps ran,
// on the flusher, for a bounded trace's whole run (counters.h, StepRecord::
// map_live_ns): copies out of a map's pages already in memory take no call
// and no page fault, so a loop that reads through one (a np.memmap sliced
// by get_batch) has a wait the trace cannot see while it is live. The full
// events' figure is lib/analysis/meters/step_loop.h's MapLiveNs.
//
// Maps come from every thread of the process, a drained ring at a time: in
// time order per thread, not across them (thread B's map made and torn
// down before thread A's, drained after it). So each map made or torn down
// is kept as a change of the live count, and only when the interval ends
// are the changes put in time order and swept, the time with some map live
// credited within the loop so far (its first step's start to its latest
// step's end), each moment once; the changes past the latest step wait for
// a later one. A change drained after its moment was credited only moves
// the count on. Before any step, the changes are folded into the count at
// each interval's end (a process that never steps keeps none).
#ifndef DLPROF_LIB_CORE_LIVE_MAPS_H_
#define DLPROF_LIB_CORE_LIVE_MAPS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace dlprof::core {

class LiveMaps {
 public:
  // A data file's map made (`made`: at its mmap's end) or torn down (at
  // its munmap's start). A map torn down in parts ends at the first.
  void Map(bool made, uint64_t ns) {
    if (ns <= swept_to_) {  // its moment swept already: the count moves on
      Apply(&live_, made ? 1 : -1);
      return;
    }
    // A loop that maps a batch at a time past any step (an evaluation)
    // keeps changes no step credits: at most so many, the oldest folded.
    if (changes_.size() >= kMaxChanges) Sweep(changes_[changes_.size() / 2].first, false);
    changes_.emplace_back(ns, made ? 1 : -1);
  }
  // An optimizer step of some thread of the process, [start, end).
  void Step(uint64_t start, uint64_t end) {
    if (loop_from_ == 0 || start < loop_from_) loop_from_ = start;
    loop_to_ = std::max(loop_to_, end);
  }
  // The live time within the loop not credited before, up to the latest
  // step's end (before any step: none, the changes folded).
  uint64_t Take() {
    if (loop_from_ == 0) {
      if (!changes_.empty()) Sweep(UINT64_MAX, false);
      return 0;
    }
    return loop_to_ > swept_to_ ? Sweep(loop_to_, true) : 0;
  }

 private:
  static constexpr size_t kMaxChanges = 1 << 16;
  static void Apply(int64_t* live, int change) { *live = std::max<int64_t>(0, *live + change); }
  // Applies the changes up to `to` in time order (those after it kept) and
  // moves swept_to_ there (to the latest change applied, for UINT64_MAX);
  // returns the time in [max(swept_to_, loop_from_), to) with some map
  // live where `credit`.
  uint64_t Sweep(uint64_t to, bool credit) {
    std::sort(changes_.begin(), changes_.end());
    uint64_t live_ns = 0, at = std::max(swept_to_, loop_from_), last = swept_to_;
    size_t k = 0;
    for (; k < changes_.size() && changes_[k].first <= to; ++k) {
      const uint64_t t = changes_[k].first;
      if (credit && live_ > 0 && t > at) live_ns += t - at;
      at = std::max(at, t);
      last = std::max(last, t);
      Apply(&live_, changes_[k].second);
    }
    if (credit && live_ > 0 && to > at) live_ns += to - at;
    changes_.erase(changes_.begin(), changes_.begin() + static_cast<std::ptrdiff_t>(k));
    swept_to_ = to == UINT64_MAX ? last : std::max(swept_to_, to);
    return live_ns;
  }

  int64_t live_ = 0;         // maps live at swept_to_
  uint64_t swept_to_ = 0;    // the changes up to here are in live_
  uint64_t loop_from_ = 0, loop_to_ = 0;
  std::vector<std::pair<uint64_t, int>> changes_;  // after swept_to_, in drain order
};

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_LIVE_MAPS_H_
