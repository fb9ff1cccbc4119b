// How long a process held a data file's map while its loop of steps ran,
// on the flusher, for a bounded trace's whole run (counters.h, StepRecord::
// map_live_ns): copies out of a map's pages already in memory take no call
// and no page fault, so a loop that reads through one (a np.memmap sliced
// by get_batch) has a wait the trace cannot see while it is live. The full
// events' figure is lib/analysis/meters/step_loop.h's MapLiveNs.
//
// Maps come from every thread of the process, a drained ring at a time: in
// time order per thread, not across them. So the spans in which some map
// was live are kept until the interval ends, and only then credited within
// the loop so far (its first step's start to its latest step's end), each
// moment once: what lies past the latest step waits for a later one.
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
    if (made) {
      if (live_++ == 0) since_ = ns;
    } else if (live_ > 0 && --live_ == 0) {
      // Before any step the span is the start-up's: not kept.
      if (loop_from_ != 0 && ns > since_) Keep(since_, ns);
    }
  }
  // An optimizer step of some thread of the process, [start, end).
  void Step(uint64_t start, uint64_t end) {
    if (loop_from_ == 0 || start < loop_from_) loop_from_ = start;
    loop_to_ = std::max(loop_to_, end);
  }
  // The live time within the loop not credited before, up to the latest
  // step's end; what lies beyond it is kept for later.
  uint64_t Take() {
    if (loop_from_ == 0) return 0;
    std::vector<std::pair<uint64_t, uint64_t>> spans = spans_;
    if (live_ > 0) spans.emplace_back(since_, loop_to_);
    std::sort(spans.begin(), spans.end());
    const uint64_t from = std::max(loop_from_, credited_to_);
    uint64_t live = 0, covered = from;  // the union, clipped to [from, loop_to_)
    for (const auto& [start, end] : spans) {
      const uint64_t a = std::max(start, covered), b = std::min(end, loop_to_);
      if (b > a) live += b - a;
      covered = std::max(covered, b);
    }
    credited_to_ = std::max(credited_to_, loop_to_);
    spans_.erase(std::remove_if(spans_.begin(), spans_.end(),
                                [&](const auto& s) { return s.second <= credited_to_; }),
                 spans_.end());
    return live;
  }

 private:
  // A process that maps and unmaps after its last step (an evaluation)
  // keeps spans no step credits: at most so many, the oldest let go.
  static constexpr size_t kMaxSpans = 1 << 16;
  void Keep(uint64_t from, uint64_t to) {
    if (!spans_.empty() && from <= spans_.back().second && from >= spans_.back().first) {
      spans_.back().second = std::max(spans_.back().second, to);
      return;
    }
    if (spans_.size() >= kMaxSpans) spans_.erase(spans_.begin(), spans_.begin() + kMaxSpans / 2);
    spans_.emplace_back(from, to);
  }

  uint64_t live_ = 0, since_ = 0;
  uint64_t loop_from_ = 0, loop_to_ = 0, credited_to_ = 0;
  std::vector<std::pair<uint64_t, uint64_t>> spans_;  // closed, not yet credited
};

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_LIVE_MAPS_H_
