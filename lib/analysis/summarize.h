// The summary of a set of traces, a group of traces at a time.
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

#include "lib/analysis/summary/summary.h"
#include "lib/analysis/meters/rank_meter.h"
#include "lib/read/clock_domains.h"
#include "lib/read/event_filter.h"
#include "lib/read/job.h"
#include "lib/read/trace_catalog.h"
#include "lib/read/trace_set.h"

namespace dlprof::analysis {
using namespace dlprof::read;

struct SummarizeOptions {
  EventSelection selection;  // base_ns: the job's second 0 (Job::Select)
  const ClockAlignment* clocks = nullptr;  // null: every trace on its own clock
  bool hosts_in_keys = false;  // the traces come from several hosts
  size_t slowest_count = 10;
  // The region (annotation or NVTX) whose instances are a rank's batch waits.
  std::string batch_region = kDefaultBatchRegion;
  RegionPick region_pick = RegionPick::kOutermost;  // --regions
  unsigned threads = DefaultDecodeThreads();  // beside the calling thread
};

struct SummarizeResult {
  Summary summary;
  // Per trace, in the catalog's order, what decoding found (messages,
  // blocks, damage); no events or strings.
  std::vector<ProcessTrace> traces;
  uint64_t events = 0;  // events the selection kept
};

// The options that summarise `job` as it was opened: on its time base,
// `selection`'s window counted from its second 0, and process keys naming
// hosts when it spans several.
SummarizeOptions JobSummarizeOptions(const Job& job, const EventSelection& selection = {});

// Indices into catalog.traces, a group per inner vector, in catalog order.
std::vector<std::vector<size_t>> GroupTraces(const TraceCatalog& catalog);

struct PartialSummary;  // partial_summary.h

// The partial summary of the traces `group` lists, as one time-ordered
// stream; their blocks decode on `decode_threads` threads beside the caller.
// What decoding found goes to `traces` (one per listed trace, in order;
// without strings) and the events kept to `events`.
PartialSummary SummarizeGroup(const TraceCatalog& catalog, const std::vector<size_t>& group,
                              const SummarizeOptions& options, unsigned decode_threads,
                              std::vector<ProcessTrace>* traces, uint64_t* events);

SummarizeResult Summarize(const TraceCatalog& catalog, const SummarizeOptions& options);

// The same before FinishSummary: every group's partial, merged.
PartialSummary SummarizePartial(const TraceCatalog& catalog, const SummarizeOptions& options,
                                std::vector<ProcessTrace>* traces, uint64_t* events);

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_SUMMARIZE_H_
