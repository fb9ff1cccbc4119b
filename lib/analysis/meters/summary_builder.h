// The summary's figures of one stream: I/O (for the whole run, per rank,
// per process and per file), GPU busy time and data stall, in one pass over
// its events in time order, with memory that grows with the summary, not
// with the trace. lib/analysis/summarize.h reads a job's traces a group at
// a time through it, with the other meters beside it.
#ifndef DLPROF_LIB_ANALYSIS_METERS_SUMMARY_BUILDER_H_
#define DLPROF_LIB_ANALYSIS_METERS_SUMMARY_BUILDER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lib/analysis/summary/partial_summary.h"
#include "lib/read/event_source.h"
#include "lib/read/trace_catalog.h"

namespace dlprof::analysis {
using namespace dlprof::read;

// Everything but the region and call-site sections, in one pass over
// `source`, as a partial summary that merges with others. Second 0 of the
// per-second timeline starts at `timeline_base_ns`; by default, at the first
// event. Partials that will merge must share one base. With `hosts_in_keys`,
// a process is "host: pid N (exe)" (the run spans several hosts, whose pids
// collide). `images`, per process of `source`, says which traces are later
// images of one process (exec): one process, one row (null: every trace a
// process).
PartialSummary AnalyzePartial(EventSource& source, size_t slowest_count = 10,
                              uint64_t timeline_base_ns = UINT64_MAX,
                              bool hosts_in_keys = false,
                              const std::vector<ProcessImage>* images = nullptr);

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_METERS_SUMMARY_BUILDER_H_
