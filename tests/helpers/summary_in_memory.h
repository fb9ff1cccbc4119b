// The summary from a whole trace held in memory, for the tests: the figures
// of one stream (AnalyzePartial, finished), and the region and call-site
// sections worked out over the trace in memory: the references that the
// streaming meters (RegionMeter, CallSiteMeter) are checked against.
// dlprof-dump, the C ABI and every binding make a summary through
// lib/analysis/summarize.h alone.
#ifndef DLPROF_TESTS_HELPERS_SUMMARY_IN_MEMORY_H_
#define DLPROF_TESTS_HELPERS_SUMMARY_IN_MEMORY_H_

#include <cstddef>
#include <vector>

#include "lib/analysis/summary/call_sites.h"
#include "lib/analysis/summary/summary.h"
#include "lib/read/event_source.h"
#include "lib/read/regions.h"
#include "lib/read/stacks.h"
#include "lib/read/trace_set.h"
#include "tests/helpers/region_breakdown.h"

namespace dlprof::analysis {
using namespace dlprof::read;

// The figures of one stream, finished (FinishSummary).
Summary Analyze(EventSource& source, size_t slowest_count = 10);

// The same, with the region and call-site sections of `set` in memory;
// `stacks` and `regions` may be null.
Summary Analyze(const TraceSet& set, const StackIndex* stacks = nullptr,
                const RegionAssignment* regions = nullptr, size_t slowest_count = 10);

// The region and call-site sections from the whole trace in memory.
void AddContextSections(const TraceSet& set, const StackIndex* stacks,
                        const RegionAssignment* regions, Summary* s);

// The region rows (RegionBreakdown's, or a RegionMeter's) into `s`; none
// when no call was in a region (as FinishSummary leaves them).
void SetRegionRows(std::vector<RegionStats> rows, Summary* s);

// Read and write calls (not nested in another traced call) with a stack,
// grouped by call site, largest first by `by_bytes` ? bytes : time; at most
// `limit` rows (0: all).
std::vector<CallSiteStats> TopCallSites(const TraceSet& set, const StackIndex& stacks,
                                        CallSiteKey key, bool by_bytes, size_t limit);

}  // namespace dlprof::analysis

#endif  // DLPROF_TESTS_HELPERS_SUMMARY_IN_MEMORY_H_
