// A summary of some of a run's traces that merges with the summary of others.
//
// The summary of a directory is computed a group of traces at a time (see
// summarize.h): each group gives a PartialSummary, partials merge into one,
// and FinishSummary ranks and cuts its lists. Merging is addition, taking
// the minimum or maximum of each figure, so the result does not depend on
// how the traces were grouped or in which order partials merged, with two
// documented exceptions (docs/ANALYSIS.md):
//   - the common-size and stride tables are bounded (kMaxDistinctSizes keys
//     a level): past the bound, which keys stay depends on the merge order,
//     as the roll-up of streams does within one group;
//   - figures that are unions over time (GPU busy, data stall, a region's
//     busy time) add up per group: exact when groups share no device and no
//     region, which is how summarize.h forms them.
//
//   PartialSummary a = AnalyzePartial(...), b = AnalyzePartial(...);
//   MergeInto(&a, std::move(b));
//   Summary s = FinishSummary(std::move(a));
#ifndef DLPROF_LIB_ANALYSIS_PARTIAL_SUMMARY_H_
#define DLPROF_LIB_ANALYSIS_PARTIAL_SUMMARY_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "lib/analysis/summary/collective_waits.h"
#include "lib/analysis/summary/summary.h"

namespace dlprof::analysis {

struct PartialSummary {
  // Every figure of the summary so far. `slowest` holds up to
  // slowest_count candidates in SlowerThan order; `stall_by_file`,
  // `stall_by_process` and the call-site lists are empty: their full tables
  // are below, ranked by FinishSummary.
  Summary s;
  // How many slowest calls the partial kept (at most; the merge of two keeps
  // the smaller count). An empty partial, the merge's identity, has no bound.
  size_t slowest_count = SIZE_MAX;
  std::unordered_map<std::string, uint64_t> stall_by_file, stall_by_process;
  bool has_sites = false;  // the traces had call stacks
  std::unordered_map<std::string, CallSiteStats> sites_by_function, sites_by_module;
  // The collective MPI-IO calls, matched across ranks by FinishSummary
  // (collective_waits.h).
  CollectiveCalls collective;
};

// The order of the slowest-calls list: longest first, then earliest start,
// then pid, tid, call name and path, so that it is the same however the
// calls were grouped.
bool SlowerThan(const SlowOp& a, const SlowOp& b);

// Adds `from` to `into`.
void MergeInto(PartialSummary* into, PartialSummary&& from);

// The summary: lists ranked and cut (the slowest calls, the top stall shares
// and call sites).
Summary FinishSummary(PartialSummary&& p);

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_PARTIAL_SUMMARY_H_
