// RegionsInFlight (regions_in_flight.h): the regions still open per thread
// and per process, and the lookup of the region holding a call.
#include "lib/read/regions_in_flight.h"

#include <algorithm>
#include <tuple>

namespace dlprof::read {

RegionsInFlight::RegionsInFlight(const std::vector<ProcessTrace>& processes,
                                 const RegionOptions& options)
    : processes_(processes), options_(options), process_(processes.size()) {
  for (uint32_t p = 0; p < processes.size(); ++p) {
    traces_of_pid_[processes[p].info.pid].push_back(p);
  }
}

void RegionsInFlight::Add(uint32_t process, int32_t tid, const Region& r) {
  if (r.end <= r.start) return;
  Insert(&thread_[ThreadKey(process, tid)], r);
  Insert(&process_[process], r);
}

// A list is kept in pick order: earliest start, then longest, then first
// seen. Regions arrive by start, so an insert lands at or near the end;
// those that ended before it are dropped then.
void RegionsInFlight::Insert(List* live, const Region& r) {
  live->erase(std::remove_if(live->begin(), live->end(),
                             [&r](const Region& l) { return l.end <= r.start; }),
              live->end());
  auto key = [](const Region& l) { return std::make_tuple(l.start, ~l.end, l.position); };
  auto at = std::upper_bound(live->begin(), live->end(), r,
                             [&key](const Region& a, const Region& b) { return key(a) < key(b); });
  live->insert(at, r);
}

// The first (outermost) or last (innermost) of those not ended, all of which
// started by `t`.
const RegionsInFlight::Region* RegionsInFlight::Pick(List* live, uint64_t t) const {
  if (options_.pick == RegionPick::kOutermost) {
    while (!live->empty() && live->front().end <= t) live->erase(live->begin());
    return live->empty() ? nullptr : &live->front();
  }
  while (!live->empty() && live->back().end <= t) live->pop_back();
  return live->empty() ? nullptr : &live->back();
}

RegionsInFlight::List* RegionsInFlight::ThreadList(uint32_t process, int32_t tid) {
  const uint64_t key = ThreadKey(process, tid);
  if (last_thread_ == nullptr || last_thread_key_ != key) {
    auto it = thread_.find(key);
    if (it == thread_.end()) return nullptr;
    last_thread_ = &it->second;  // map nodes do not move
    last_thread_key_ = key;
  }
  return last_thread_;
}

// As AssignRegions: picking the outermost, the furthest ancestor holding a
// region comes first; else the thread, the process, the nearest ancestor.
const RegionsInFlight::Region* RegionsInFlight::Find(uint32_t process, int32_t tid, uint64_t t) {
  const bool ancestors_first =
      options_.inherit_from_parent && options_.pick == RegionPick::kOutermost;
  if (ancestors_first) {
    if (const Region* r = InAncestors(process, t)) return r;
  }
  if (List* thread = ThreadList(process, tid)) {
    if (const Region* r = Pick(thread, t)) return r;
  }
  if (const Region* r = Pick(&process_[process], t)) return r;
  if (!options_.inherit_from_parent || ancestors_first) return nullptr;
  return InAncestors(process, t);
}

// The region the nearest ancestor holds at `t` (innermost), or the furthest
// one's (outermost); null if none.
const RegionsInFlight::Region* RegionsInFlight::InAncestors(uint32_t process, uint64_t t) {
  int32_t ppid = processes_[process].info.ppid;
  const Region* furthest = nullptr;
  for (int hops = 0; hops < 64 && ppid > 0; ++hops) {
    auto it = traces_of_pid_.find(ppid);
    if (it == traces_of_pid_.end()) break;
    int32_t next = -1;
    const Region* found = nullptr;
    for (uint32_t q : it->second) {
      found = Pick(&process_[q], t);
      next = processes_[q].info.ppid;
      if (found != nullptr) break;
    }
    if (found != nullptr) {
      if (options_.pick != RegionPick::kOutermost) return found;
      furthest = found;
    }
    if (next == ppid) break;
    ppid = next;
  }
  return furthest;
}

}  // namespace dlprof::read
