// The whole run of a bounded trace over time (DLPROF_KEEP): its counters'
// interval records, every process's, on one grid -- the HTML report's plot
// of the run, and the moment the loop waited most, with its causes
// (docs/ANALYSIS_RUNS.md, "Bounded traces").
//
// Each process writes a record every interval from its own start, so the
// processes' records do not line up. A point is a span of the grid that
// starts at the run's first record: as long as an interval, or a whole
// number of them where the run is longer than kMaxPoints intervals (a
// month at 5 s a record is 518,400 intervals: 720 points of an hour), and
// each record counts in the point its middle falls in -- once, whole, so
// that the points add up to the run exactly. A point of one interval gets
// at most one full record of each process.
//
// A point's batch wait share is its batch wait over `waiting_ns`, the time
// its records of processes that waited for batches cover: for one loop,
// the share of the point it waited; for several ranks, their mean.
#ifndef DLPROF_LIB_ANALYSIS_WHOLE_RUN_POINTS_H_
#define DLPROF_LIB_ANALYSIS_WHOLE_RUN_POINTS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lib/analysis/whole_run_causes.h"

namespace dlprof::analysis {

struct WholeRunPoint {
  uint64_t start_ns = 0, end_ns = 0;
  uint64_t io_calls = 0, read_bytes = 0, io_ns = 0;
  uint64_t batches = 0, batch_wait_ns = 0, steps = 0;
  uint64_t gpu_busy_ns = 0;  // summed over the processes (and devices' union in each)
  uint64_t waiting_ns = 0;  // the base of its batch wait's share (above)
  WholeRunCauses causes;    // its batch wait, split
};

// One interval record, as a point counts it.
struct PointSource {
  uint64_t start_ns = 0, end_ns = 0;
  bool last = false;  // its process's last record (cut short at exit)
  uint64_t io_calls = 0, read_bytes = 0, io_ns = 0;
  uint64_t batches = 0, batch_wait_ns = 0, steps = 0;
  bool waited = false;  // its process waited for batches in it
  uint64_t step_reading_ns = 0;  // of batch_wait_ns, a loop of steps' (all reading)
  uint64_t gpu_busy_ns = 0;  // its GPU record's
};

// A process's batch records with the middle of each one's interval.
struct TimedBatches {
  const ProcessBatches* process;
  std::vector<uint64_t> mid_ns;  // one per record
};

constexpr size_t kMaxPoints = 720;

struct WholeRunPoints {
  uint64_t point_ns = 0;  // a point's length (the last may be shorter)
  std::vector<WholeRunPoint> points;
  int64_t worst = -1;     // the point whose batch wait share is largest (below)
};

// The points of the records `sources` and the batch waits `batches` (whose
// fetches `fetches` indexes); `workers`: the run's loop had loader workers.
// The worst point is chosen among those whose waiting_ns is at least half
// the median of the points that waited, so that a process's last short
// record, waiting at exit, is not taken for the run's worst moment.
WholeRunPoints MakeWholeRunPoints(const std::vector<PointSource>& sources,
                                  const std::vector<TimedBatches>& batches,
                                  const FetchIndex& fetches, bool workers);

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_WHOLE_RUN_POINTS_H_
