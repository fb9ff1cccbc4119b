// Which stretch of a bounded run (DLPROF_KEEP) its kept events cover: each
// process keeps its last DURATION (and the windows a rule or `dlprof keep`
// kept), and the run's ended processes their counters alone
// (docs/FORMAT_BOUNDED.md), so an event listing or timeline of such a run
// shows a few seconds of it. dlprof-dump says which, once, beside the text,
// jsonl and timeline outputs, and the summary names them with the kept
// windows: one computation for both.
#ifndef DLPROF_LIB_READ_KEPT_STRETCHES_H_
#define DLPROF_LIB_READ_KEPT_STRETCHES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/read/clock_domains.h"
#include "lib/read/trace_catalog.h"

namespace dlprof::read {

// One stretch of a process's events on disk: its segments that follow one
// another with none deleted between them.
struct KeptStretch {
  std::string host;
  int32_t pid = 0;
  uint64_t from_ns = 0, to_ns = 0;  // its first event's start, last one's end (job time base)
};

struct KeptStretches {
  bool bounded = false;  // some trace of the job is a segment of a bounded trace
  // The run: from its first process's start (the headers', which every
  // segment repeats) to the last kept event's end, on the job's time base.
  uint64_t run_start_ns = UINT64_MAX, run_end_ns = 0;
  uint64_t from_ns = UINT64_MAX, to_ns = 0;  // all the stretches' (MAX/0: none)
  std::vector<KeptStretch> stretches;        // by start
  size_t processes = 0;       // process images with segments
  size_t counters_only = 0;   // of them, those with no event left (ended before)
  // Whether the stretches differ: more than one, not all the same span.
  bool several() const;
};

// The number of a bounded trace's segment from its path: STEM.kN.dlprof is
// N, STEM.dlprof (the first) 0. Two segments of a process whose numbers do
// not follow one another had the ones between them deleted.
uint32_t SegmentNumberOf(const std::string& path);

// The stretches of the bounded traces of `catalog` (its first starts mapped
// by MapCatalog, as a Job's are; `clocks` maps the rest).
KeptStretches FindKeptStretches(const TraceCatalog& catalog, const ClockAlignment& clocks);

}  // namespace dlprof::read

#endif  // DLPROF_LIB_READ_KEPT_STRETCHES_H_
