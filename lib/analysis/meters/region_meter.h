// The summary's region breakdown (RegionBreakdown's rows, docs/ANALYSIS.md)
// in one pass over the merged stream, for traces too large to hold.
//
// Events come by start, so the regions holding a call have all been seen
// when the call comes, except those that start in the same nanosecond:
// events are held until the clock moves on, and then regions go first. Each
// thread and process keeps its regions in flight (few: the nesting depth);
// a call is looked up on its thread, its process, then its ancestors, as
// AssignRegions does.
//
// Each row's calls form a union built as they arrive (StallMeter's method):
// an interval closes once the stream passes its end, and is then measured
// against the GPU busy union, whose intervals are kept back to the earliest
// row interval still open. Memory grows with the regions and calls in flight
// and with the row names, not with the trace.
#ifndef DLPROF_LIB_ANALYSIS_REGION_METER_H_
#define DLPROF_LIB_ANALYSIS_REGION_METER_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "lib/read/event_source.h"
#include "lib/analysis/summary/summary.h"
#include "lib/read/regions.h"

namespace dlprof::analysis {
using namespace dlprof::read;

class RegionMeter : public EventObserver {
 public:
  // `processes` must outlive the meter (a source's processes()).
  explicit RegionMeter(const std::vector<ProcessTrace>& processes,
                       const RegionOptions& options = {});
  ~RegionMeter();

  // Every event, in the stream's order. `counted`: false for a call that a
  // filter leaves out; it still moves the clock, and a region still holds
  // the calls after it.
  void Add(const StreamEvent& e, bool counted = true) override;
  // The rows as RegionBreakdown(set, AssignRegions(set, options)) gives them.
  std::vector<RegionStats> Finish();

  // What the meter does with an event.
  enum class Role : uint8_t { kNone, kAppRegion, kNvtxRange, kGpuWork, kRead, kWrite, kOtherIo };

 private:
  class Tracker;  // one region source's assignment and rows
  struct Held {
    Event event;
    int32_t tid;
    uint32_t process;
    uint64_t position;  // in the stream
    bool counted;
    Role role;
    uint64_t bytes;  // a read's or write's bytes really moved
  };
  struct Gpu;  // the GPU busy union and window, shared by every tracker

  static Role RoleOf(const Event& e);

  void Flush();

  std::vector<std::unique_ptr<Tracker>> trackers_;  // two for kAuto: app, NVTX
  std::unique_ptr<Tracker> retired_;  // kAuto's NVTX tracker once app regions came
  std::unique_ptr<Gpu> gpu_;
  std::vector<Held> held_;  // the events of the current nanosecond
  std::vector<const Held*> regions_;  // Flush's scratch
  uint64_t now_ = 0;
  uint64_t position_ = 0;
};

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_REGION_METER_H_
