// The one entry point that makes a summary: dlprof-dump's, the C ABI's (a
// job's, or one group's to merge with others': dlprof.dask.summary), the
// tests'. The summary of a set of traces is made a group of traces at a time.
//
// Traces whose events interact are read together, as one time-ordered
// stream; the others each on their own. Each group gives a partial summary
// (partial_summary.h), and the partials merge in group order, so the result
// is the same with any number of threads. Memory holds the merged partial and
// the groups being decoded, never a decoder for every trace at once.
//
// Which traces interact: data stall (I/O against GPU busy time) and regions
// (a worker's reads counted in its parent's "step") are unions over time
// across processes, so a run with GPU work or regions is one group. Any other
// run is a group per trace. When any process has a rank, a run with GPU
// work or regions is a group per rank (rank_groups.h: a rank's processes on
// its host and the devices they used), and each rank group also gives the
// rank's figures (rank_meter.h).
#ifndef DLPROF_LIB_ANALYSIS_SUMMARIZE_H_
#define DLPROF_LIB_ANALYSIS_SUMMARIZE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/analysis/summary/partial_summary.h"
#include "lib/analysis/summary/summary.h"
#include "lib/analysis/meters/rank_meter.h"
#include "lib/read/clock_domains.h"
#include "lib/read/event_filter.h"
#include "lib/read/job.h"
#include "lib/read/trace_catalog.h"
#include "lib/read/trace_set.h"

namespace dlprof::analysis {
using namespace dlprof::read;

// What each group's summary needs to know of the job's other traces,
// worked out once for all the groups: each costs a pass over every trace,
// and at 10,240 traces working them out per group took most of the
// summary's time.
struct JobTraceFacts {
  std::vector<int32_t> ranks;        // TraceRanks
  std::vector<ProcessImage> images;  // ProcessImages
  // Per trace, its process's rank (ProcessRanks of `ranks`): what --rank
  // keeps a process by.
  std::vector<int32_t> process_ranks;
};
JobTraceFacts TraceFactsOf(const TraceCatalog& catalog);

struct SummarizeOptions {
  EventSelection selection;  // base_ns: the job's second 0 (Job::Select)
  const ClockAlignment* clocks = nullptr;  // null: every trace on its own clock
  bool hosts_in_keys = false;  // the traces come from several hosts
  size_t slowest_count = 10;
  // The region (annotation or NVTX) whose instances are a rank's batch waits.
  std::string batch_region = kDefaultBatchRegion;
  RegionPick region_pick = RegionPick::kOutermost;  // --regions
  unsigned threads = DefaultDecodeThreads();  // beside the calling thread
  // One group of GroupTraces(catalog) alone, decoded on `threads` threads
  // (the C ABI's summary of a group, merged with the others' elsewhere);
  // null: every trace.
  const std::vector<size_t>* group = nullptr;
  // Stop before FinishSummary: the result's `partial`, which merges with
  // others' (MergeInto), instead of its `summary`.
  bool partial = false;
  // The catalog's TraceFactsOf, for a caller that summarises its groups one
  // call at a time (the C ABI); null: worked out here.
  const JobTraceFacts* facts = nullptr;
};

struct SummarizeResult {
  Summary summary;          // unless options.partial
  PartialSummary partial;   // with options.partial
  // Per trace, in the catalog's order (with options.group, the group's
  // traces in its order), what decoding found (messages, blocks, damage);
  // no events or strings.
  std::vector<ProcessTrace> traces;
  uint64_t events = 0;  // events the selection kept
};

// The options that summarise `job` as it was opened: on its time base,
// `selection`'s window counted from its second 0, and process keys naming
// hosts when it spans several.
SummarizeOptions JobSummarizeOptions(const Job& job, const EventSelection& selection = {});

// Indices into catalog.traces, a group per inner vector, in catalog order.
std::vector<std::vector<size_t>> GroupTraces(const TraceCatalog& catalog);

SummarizeResult Summarize(const TraceCatalog& catalog, const SummarizeOptions& options);

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_SUMMARIZE_H_
