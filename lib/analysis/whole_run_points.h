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
  uint64_t data_stall_ns = 0;  // its data stall records', summed (AddStall)
  uint64_t waiting_ns = 0;  // the base of its batch wait's share (above)
  WholeRunCauses causes;    // its batch wait, split
};

// One interval record, as a point counts it.
struct PointSource {
  uint64_t start_ns = 0, end_ns = 0;
  uint64_t io_calls = 0, read_bytes = 0, io_ns = 0;
  uint64_t batches = 0, batch_wait_ns = 0, steps = 0;
  bool waited = false;  // its process waited for batches in it
  uint64_t step_reading_ns = 0;  // of batch_wait_ns, a loop of steps' wait ...
  uint64_t step_preprocessing_ns = 0;  // ... and of that, its preprocessing (StepRecord)
  uint64_t gpu_busy_ns = 0;  // its GPU record's
};

constexpr size_t kMaxPoints = 720;

struct WholeRunPoints {
  uint64_t point_ns = 0;  // a point's length (the last may be shorter)
  std::vector<WholeRunPoint> points;
  int64_t worst = -1;     // the point whose batch wait share is largest (below)
};

// A run's points, made without holding its records (a month of them is
// gigabytes): a first pass gives every interval record's span (AddSpan),
// from which Lay lays the grid; a second folds each record in (Add, and
// its batch records into causes(PointAt(middle))); Finish splits each
// point's wait and finds the worst. The worst point is chosen among those
// whose waiting_ns is at least half the median of the points that waited,
// so that a process's last short record, waiting at exit, is not taken for
// the run's worst moment.
class WholeRunPointsBuilder {
 public:
  // A record of [start_ns, end_ns); `last`: its process's last.
  void AddSpan(uint64_t start_ns, uint64_t end_ns, bool last);
  void Lay();
  // The point of a record whose interval's middle is `mid_ns`.
  uint32_t PointAt(uint64_t mid_ns) const;
  void Add(const PointSource& s);
  // A data stall record of `stall_ns` whose stretch's middle is `mid_ns`:
  // it counts where its stretch is, not with the interval record before it
  // (written an interval after the stretch it measured).
  void AddStall(uint64_t mid_ns, uint64_t stall_ns);
  // The batch waits of a point's records (a sink where no point was laid).
  WaitCauseSums& causes(uint32_t point) { return sums_[point]; }
  // `workers`: the run's loop had loader workers.
  WholeRunPoints Finish(bool workers);

 private:
  uint64_t start_ = UINT64_MAX, end_ = 0;
  std::vector<uint64_t> full_, last_;  // the records' lengths (until Lay)
  WholeRunPoints out_;
  std::vector<WaitCauseSums> sums_;     // per point
  std::vector<uint64_t> step_reading_;  // per point: a loop of steps' waits ...
  std::vector<uint64_t> step_preprocessing_;  // ... and of them, preprocessing
};

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_WHOLE_RUN_POINTS_H_
