// The summary's region rows from a whole trace held in memory: I/O calls,
// bytes and data-stall time per region name (docs/ANALYSIS.md). The
// reference that the streaming RegionMeter (region_meter.h) is checked
// against; which region holds each call is lib/read/regions.h's answer.
#ifndef DLPROF_LIB_ANALYSIS_REGION_BREAKDOWN_H_
#define DLPROF_LIB_ANALYSIS_REGION_BREAKDOWN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "lib/read/regions.h"
#include "lib/read/trace_set.h"

namespace dlprof::analysis {
using namespace dlprof::read;

// Figures of one region name (every instance together: name your regions
// "epoch 3" to get one row per epoch).
struct RegionStats {
  std::string name;
  bool outside = false;  // the row of calls outside every region (name "")
  uint64_t instances = 0;
  uint64_t region_ns = 0;     // summed length of those instances
  uint64_t io_ops = 0;        // read, write, open, meta... calls not nested in another
  uint64_t io_ns = 0;         // their summed duration
  uint64_t read_ops = 0, write_ops = 0;
  uint64_t read_bytes = 0, write_bytes = 0;  // bytes really moved
  uint64_t io_busy_ns = 0;    // length of the union of those calls' intervals
  uint64_t stall_ns = 0;      // of which no GPU was busy (within the GPU window)
};

// One row per region name, in order of first appearance, then the row of
// calls outside every region (outside = true; when there are any). With RegionPick
// kOutermost, instances/region_ns count outermost instances only. stall_ns is
// 0 when the trace holds no GPU activity.
std::vector<RegionStats> RegionBreakdown(const TraceSet& set, const RegionAssignment& a);

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_REGION_BREAKDOWN_H_
