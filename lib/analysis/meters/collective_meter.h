// The collective MPI-IO calls of a group of traces, recorded for the
// summary to tell the time each rank waited in them for the others
// (lib/analysis/summary/collective_waits.h).
#ifndef DLPROF_LIB_ANALYSIS_METERS_COLLECTIVE_METER_H_
#define DLPROF_LIB_ANALYSIS_METERS_COLLECTIVE_METER_H_

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "lib/analysis/summary/collective_waits.h"
#include "lib/read/event_source.h"

namespace dlprof::analysis {
using namespace dlprof::read;

class CollectiveMeter : public EventObserver {
 public:
  // `processes` must outlive the meter (a source's processes()); each keeps
  // at most `per_process` calls (CollectiveCallsPerProcess).
  CollectiveMeter(const std::vector<ProcessTrace>& processes, uint64_t per_process);

  // Every event, kept by the selection (`counted`) or not: the k-th call of
  // a process on a file is the k-th whatever the selection kept.
  void Add(const StreamEvent& e, bool counted) override;

  // The calls, `keys[i]` naming processes()[i] (its summary row's key).
  CollectiveCalls Finish(const std::vector<std::string>& keys);

 private:
  const std::vector<ProcessTrace>& processes_;
  uint64_t per_process_;
  CollectiveCalls calls_;  // `process` the stream's index until Finish
  std::unordered_map<std::string, uint32_t> files_;
  // Per (process, file index): its collective calls so far (the next k).
  // Per (process, file, communicator size): a sub-communicator's calls on
  // the path (ranks 0 and 1 alone, before all four) are no part of the
  // count the whole communicator's are matched by.
  std::map<std::tuple<uint32_t, uint32_t, int32_t>, uint32_t> next_k_;
  std::vector<uint64_t> kept_;  // per process: its calls kept
};

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_METERS_COLLECTIVE_METER_H_
