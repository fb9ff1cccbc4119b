// The rank meters (rank_meter.h) of a whole job read as one stream, as the
// event exporters read it: one meter per rank group (rank_groups.h), each
// fed its group's events, for the per-rank figures a timeline draws beside
// the events (the data-stall pieces). The summary measures the same groups
// a group at a time (summarize.cc), with meters MakeRankMeter makes for
// both; the figures are the same.
#ifndef DLPROF_LIB_ANALYSIS_JOB_RANK_METERS_H_
#define DLPROF_LIB_ANALYSIS_JOB_RANK_METERS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lib/analysis/meters/rank_meter.h"
#include "lib/read/trace_catalog.h"

namespace dlprof::analysis {
using namespace dlprof::read;

// The rank meter of a group of traces (`group`: indices into `catalog`,
// whose ranks TraceRanks gives as `ranks`) read as one stream whose
// processes are `processes`: for a group whose traces share one rank and
// host, or for the one group of a job in which no process has a rank and
// whose traces are read together (rank -1: its figures are the job's loop,
// Summary::unranked_group); null for any other group. Its timelines start
// at `second_zero_ns`.
std::unique_ptr<RankMeter> MakeRankMeter(const TraceCatalog& catalog,
                                         const std::vector<int32_t>& ranks,
                                         const std::vector<size_t>& group,
                                         const std::vector<ProcessTrace>& processes,
                                         const std::string& batch_region,
                                         uint64_t second_zero_ns);

class JobRankMeters : public EventObserver {
 public:
  // `processes`: the stream's, one per trace of `catalog`, in its order.
  // Meters are made only where there is a data stall to measure: traces
  // with ranks and GPU work. Their timelines start at `second_zero_ns`.
  JobRankMeters(const TraceCatalog& catalog, const std::vector<ProcessTrace>& processes,
                uint64_t second_zero_ns, const std::string& batch_region = kDefaultBatchRegion);

  bool empty() const { return meters_.empty(); }
  void Add(const StreamEvent& e, bool counted) override;

  struct RankStall {
    int32_t rank;
    std::string host;
    size_t main_process;  // the rank's main process (MainProcesses), lowest pid
    IntervalList pieces;  // by start; their lengths add up to its data_stall_ns
  };
  // Once the stream has ended: the ranks with any event counted.
  std::vector<RankStall> Finish();

 private:
  std::vector<std::unique_ptr<RankMeter>> meters_;
  std::vector<size_t> main_of_;    // per meter: its main process
  std::vector<int32_t> meter_of_;  // per process: index into meters_, -1 if none
};

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_JOB_RANK_METERS_H_
