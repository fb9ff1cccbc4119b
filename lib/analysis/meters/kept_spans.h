// What of a rank group's time its events on disk cover, for a bounded
// trace (DLPROF_KEEP with DLPROF_KEEP_WHEN or `dlprof keep`): a process
// keeps its last DURATION and the windows a rule kept, and deletes the
// segments between them, so its events on disk are stretches with holes
// of seconds between them (lib/read/kept_stretches.h says which, for the
// listing). The kept windows' verdict is about those windows only
// (docs/ANALYSIS_RUNS.md): a loop's window that spans a hole counts the
// hole's time out, or a loop of 11 s kept in two windows reads as 16 s and
// its batch wait as a share of that.
//
// The rank meter (rank_meter.h) shows it every event of its group, counted
// or not (a filter leaves the files as they are), and asks how much of its
// loop's window the loop's processes' stretches cover. A stretch is one
// process image's segments that follow one another (STEM.kN.dlprof, N, N+1,
// ...): from the first event of the first to the last end of the last.
// A trace that is no segment is whole: no hole. Memory grows with the
// traces, never with the events.
#ifndef DLPROF_LIB_ANALYSIS_METERS_KEPT_SPANS_H_
#define DLPROF_LIB_ANALYSIS_METERS_KEPT_SPANS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "lib/read/trace_set.h"

namespace dlprof::analysis {

class KeptSpans {
 public:
  // `processes`: the group's (a stream's processes()), one per trace.
  explicit KeptSpans(const std::vector<read::ProcessTrace>& processes);

  // An event of trace `process` over [start, end).
  void See(uint32_t process, uint64_t start, uint64_t end);

  // Of [from, to), the time inside the stretches of the images of
  // `processes` (trace indices; their other segments' too): to - from where
  // any of them is no segment (or none is given).
  uint64_t Kept(const std::vector<uint32_t>& processes, uint64_t from, uint64_t to) const;

 private:
  struct Trace {
    uint32_t image = 0;  // the index of its image's first trace
    uint32_t number = 0;  // its segment's number (SegmentNumberOf)
    bool segment = false;
    uint64_t first = UINT64_MAX, last = 0;  // its events' first start, last end
  };
  std::vector<Trace> traces_;
};

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_METERS_KEPT_SPANS_H_
