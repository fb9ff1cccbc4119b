// The summary's region rows from a whole trace held in memory: I/O calls,
// bytes and data-stall time per region name (docs/ANALYSIS.md). The
// reference that the streaming RegionMeter (region_meter.h) is checked
// against; which region holds each call is lib/read/regions.h's answer.
#ifndef DLPROF_TESTS_HELPERS_REGION_BREAKDOWN_H_
#define DLPROF_TESTS_HELPERS_REGION_BREAKDOWN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "lib/analysis/summary/summary.h"
#include "lib/read/regions.h"
#include "lib/read/trace_set.h"

namespace dlprof::analysis {
using namespace dlprof::read;

// One row per region name, in order of first appearance, then the row of
// calls outside every region (outside = true; when there are any). With RegionPick
// kOutermost, instances/region_ns count outermost instances only. stall_ns is
// 0 when the trace holds no GPU activity.
std::vector<RegionStats> RegionBreakdown(const TraceSet& set, const RegionAssignment& a);

}  // namespace dlprof::analysis

#endif  // DLPROF_TESTS_HELPERS_REGION_BREAKDOWN_H_
