// The regions holding a moment, for readers that see events in order of
// start (RegionMeter for the summary, EventLabels for the exporters).
//
// Regions are added as the stream reaches their start; a lookup at time t
// (never earlier than the last region added) finds the region that
// AssignRegions would give a call starting at t: on its thread, else on its
// process, else in its parent, grandparent, ... (picking the outermost:
// the furthest ancestor's first). Each thread and process
// keeps only its regions still in flight, in pick order (outermost first),
// so memory grows with the nesting depth, not with the trace.
#ifndef DLPROF_LIB_READ_REGIONS_IN_FLIGHT_H_
#define DLPROF_LIB_READ_REGIONS_IN_FLIGHT_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "lib/read/regions.h"
#include "lib/read/trace_set.h"

namespace dlprof::read {

// Region names by small id (RegionsInFlight::Region::name): each distinct
// name stored once, at an address that never changes.
class NameTable {
 public:
  uint32_t Id(const std::string& name) {
    auto [it, added] = ids_.try_emplace(name, static_cast<uint32_t>(names_.size()));
    if (added) names_.push_back(&it->first);  // map keys do not move
    return it->second;
  }
  const std::string& Name(uint32_t id) const { return *names_[id]; }

 private:
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<const std::string*> names_;
};

// Regions that start in the same nanosecond enter longest first, then in
// stream order (AssignRegions' order for the outermost region). `T` is a
// held event with an `event` member.
template <typename T>
void SortLongestFirst(std::vector<const T*>* regions) {
  std::stable_sort(regions->begin(), regions->end(),
                   [](const T* a, const T* b) { return a->event.dur_ns > b->event.dur_ns; });
}

class RegionsInFlight {
 public:
  struct Region {
    uint64_t start, end;
    uint64_t position;  // in the stream: the last tie-break of the pick
    uint32_t name;      // the caller's id for its name
  };

  // `processes` must outlive this (a source's processes()).
  RegionsInFlight(const std::vector<ProcessTrace>& processes, const RegionOptions& options);

  // A region of `process`/`tid`; one holding no instant (end <= start) is
  // ignored, as AssignRegions ignores it.
  void Add(uint32_t process, int32_t tid, const Region& r);
  // The region holding a call of `process`/`tid` that starts at `t`, or null.
  const Region* Find(uint32_t process, int32_t tid, uint64_t t);

 private:
  using List = std::vector<Region>;
  static void Insert(List* live, const Region& r);
  const Region* Pick(List* live, uint64_t t) const;
  List* ThreadList(uint32_t process, int32_t tid);
  const Region* InAncestors(uint32_t process, uint64_t t);

  const std::vector<ProcessTrace>& processes_;
  const RegionOptions options_;
  std::unordered_map<uint64_t, List> thread_;  // (process, tid)
  List* last_thread_ = nullptr;                // calls come in runs of one thread
  uint64_t last_thread_key_ = 0;
  std::vector<List> process_;
  std::unordered_map<int32_t, std::vector<uint32_t>> traces_of_pid_;
};

}  // namespace dlprof::read

#endif  // DLPROF_LIB_READ_REGIONS_IN_FLIGHT_H_
