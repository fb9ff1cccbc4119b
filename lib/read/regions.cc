// Application regions: which region each traced call happened in, from the
// region events of a trace set held in memory (see regions.h).
#include "lib/read/regions.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "dlprof/catalogue.h"

namespace dlprof::read {
namespace {

// Disjoint time segments, each labelled with the region that a call starting
// in it belongs to.
class SegmentIndex {
 public:
  // `members`: indices into `regions`; `pick` chooses among those holding a
  // point in time.
  void Build(const std::vector<RegionInstance>& regions, const std::vector<int32_t>& members,
             RegionPick pick) {
    struct Boundary {
      uint64_t t;
      bool start;
      int32_t region;
    };
    std::vector<Boundary> bounds;
    bounds.reserve(members.size() * 2);
    for (int32_t m : members) {
      const RegionInstance& r = regions[static_cast<size_t>(m)];
      if (r.end_ns <= r.start_ns) continue;
      bounds.push_back({r.start_ns, true, m});
      bounds.push_back({r.end_ns, false, m});
    }
    std::sort(bounds.begin(), bounds.end(), [](const Boundary& a, const Boundary& b) {
      return a.t < b.t || (a.t == b.t && a.start < b.start);  // ends first
    });
    // Active regions ordered outermost first: earlier start, then longer.
    auto key = [&regions](int32_t i) {
      const RegionInstance& r = regions[static_cast<size_t>(i)];
      return std::make_tuple(r.start_ns, ~r.end_ns, i);
    };
    std::set<std::tuple<uint64_t, uint64_t, int32_t>> active;
    for (size_t i = 0; i < bounds.size();) {
      const uint64_t t = bounds[i].t;
      for (; i < bounds.size() && bounds[i].t == t; ++i) {
        if (bounds[i].start) {
          active.insert(key(bounds[i].region));
        } else {
          active.erase(key(bounds[i].region));
        }
      }
      if (active.empty() || i == bounds.size()) continue;
      const int32_t label = pick == RegionPick::kOutermost ? std::get<2>(*active.begin())
                                                           : std::get<2>(*active.rbegin());
      const uint64_t next = bounds[i].t;
      if (!segments_.empty() && segments_.back().end == t && segments_.back().region == label) {
        segments_.back().end = next;
      } else {
        segments_.push_back({t, next, label});
      }
    }
  }

  int32_t Find(uint64_t t) const {
    auto it = std::upper_bound(segments_.begin(), segments_.end(), t,
                               [](uint64_t v, const Segment& s) { return v < s.start; });
    if (it == segments_.begin()) return -1;
    --it;
    return t < it->end ? it->region : -1;
  }
  bool empty() const { return segments_.empty(); }

 private:
  struct Segment {
    uint64_t start, end;
    int32_t region;
  };
  std::vector<Segment> segments_;
};

RegionSource ResolveSource(const TraceSet& set, RegionSource source) {
  if (source != RegionSource::kAuto) return source;
  AutoRegionChoice choice;
  for (const EventRef& r : set.merged) {
    const Event& e = set.event(r);
    if (!IsRegionKind(e.kind, RegionSource::kAll)) continue;
    choice.See(e, RegionName(e, set.processes[r.process]));
    if (choice.settled()) break;
  }
  return choice.choice();
}

// The regions, in time order.
std::vector<RegionInstance> CollectRegions(const TraceSet& set, RegionSource source) {
  std::vector<RegionInstance> regions;
  for (const EventRef& r : set.merged) {
    const ProcessTrace& p = set.processes[r.process];
    const Event& e = p.events[r.index];
    if (!IsRegionKind(e.kind, source)) continue;
    RegionInstance ri;
    ri.ref = r;
    ri.pid = p.info.pid;
    ri.tid = p.tids[r.index];
    ri.start_ns = e.start_ns;
    ri.end_ns = e.start_ns + e.dur_ns;
    ri.depth = static_cast<uint32_t>(e.aux);
    ri.nvtx = e.kind == static_cast<uint16_t>(EventKind::NvtxRange);
    ri.name = RegionName(e, p);
    if (IsFetchDetailRegion(ri.name)) continue;
    regions.push_back(std::move(ri));
  }
  return regions;
}

// The regions (indices into RegionAssignment::regions) by thread and by process.
struct RegionGroups {
  std::unordered_map<uint64_t, std::vector<int32_t>> by_thread;  // ThreadKey ->
  std::vector<std::vector<int32_t>> by_process;
};

RegionGroups GroupRegions(const TraceSet& set, const std::vector<RegionInstance>& regions) {
  RegionGroups g;
  g.by_process.resize(set.processes.size());
  for (size_t i = 0; i < regions.size(); ++i) {
    const RegionInstance& r = regions[i];
    g.by_thread[ThreadKey(r.ref.process, r.tid)].push_back(static_cast<int32_t>(i));
    g.by_process[r.ref.process].push_back(static_cast<int32_t>(i));
  }
  return g;
}

// Outermost on its thread: no region of the same kind there holds it.
void MarkOutermost(const std::unordered_map<uint64_t, std::vector<int32_t>>& by_thread,
                   std::vector<RegionInstance>* regions) {
  auto& all = *regions;
  for (auto& [key, members] : by_thread) {
    for (int nvtx = 0; nvtx < 2; ++nvtx) {
      std::vector<int32_t> m;
      for (int32_t i : members) {
        if (all[static_cast<size_t>(i)].nvtx == (nvtx == 1)) m.push_back(i);
      }
      std::sort(m.begin(), m.end(), [&all](int32_t x, int32_t y) {
        const RegionInstance &p = all[static_cast<size_t>(x)], &q = all[static_cast<size_t>(y)];
        return p.start_ns < q.start_ns || (p.start_ns == q.start_ns && p.end_ns > q.end_ns) ||
               (p.start_ns == q.start_ns && p.end_ns == q.end_ns && x < y);
      });
      uint64_t reach = 0;
      bool any = false;
      for (int32_t i : m) {
        RegionInstance& r = all[static_cast<size_t>(i)];
        r.outermost = !any || r.end_ns > reach;
        if (!any || r.end_ns > reach) reach = r.end_ns;
        any = true;
      }
    }
  }
}

// Which region each event of a process starts in: its thread's, else its
// process's, else (optionally) an ancestor process's. Picking the outermost,
// an ancestor's region comes first (the furthest ancestor holding one): a
// child works for its parent, so a DataLoader worker's reads inside its own
// fetch_batch belong to the loop's epoch while the loop is in one.
class RegionLocator {
 public:
  RegionLocator(const TraceSet& set, const std::vector<RegionInstance>& regions,
                const RegionGroups& groups, RegionPick pick)
      : set_(set), pick_(pick), process_index_(set.processes.size()) {
    for (auto& [key, members] : groups.by_thread) thread_index_[key].Build(regions, members, pick);
    for (size_t p = 0; p < set.processes.size(); ++p) {
      process_index_[p].Build(regions, groups.by_process[p], pick);
    }
    for (size_t p = 0; p < set.processes.size(); ++p) {
      traces_of_pid_[set.processes[p].info.pid].push_back(static_cast<uint32_t>(p));
    }
  }

  // Sets `out` to the region (or -1) of every event of process `pi`.
  void Assign(uint32_t pi, bool inherit_from_parent, std::vector<int32_t>* out) const {
    const ProcessTrace& p = set_.processes[pi];
    out->assign(p.events.size(), -1);
    const bool process_has = !process_index_[pi].empty();
    // Cache the last thread's index: events come in runs of one thread.
    int32_t last_tid = 0;
    const SegmentIndex* thread = nullptr;
    bool have_last = false;
    const bool ancestors_first = inherit_from_parent && pick_ == RegionPick::kOutermost;
    for (size_t i = 0; i < p.events.size(); ++i) {
      const uint64_t t = p.events[i].start_ns;
      int32_t found = ancestors_first ? InAncestors(p, t) : -1;
      if (found < 0 && process_has) {
        if (!have_last || p.tids[i] != last_tid) {
          auto it = thread_index_.find(ThreadKey(pi, p.tids[i]));
          thread = it == thread_index_.end() ? nullptr : &it->second;
          last_tid = p.tids[i];
          have_last = true;
        }
        if (thread) found = thread->Find(t);
        if (found < 0) found = process_index_[pi].Find(t);
      }
      if (found < 0 && inherit_from_parent && !ancestors_first) found = InAncestors(p, t);
      (*out)[i] = found;
    }
  }

 private:
  // The region the nearest ancestor holds at `t` (innermost), or the
  // furthest one's (outermost); -1 if none.
  int32_t InAncestors(const ProcessTrace& p, uint64_t t) const {
    int32_t ppid = p.info.ppid;
    int32_t furthest = -1;
    for (int hops = 0; hops < 64 && ppid > 0; ++hops) {
      auto it = traces_of_pid_.find(ppid);
      if (it == traces_of_pid_.end()) break;
      int32_t next = -1, found = -1;
      for (uint32_t q : it->second) {
        found = process_index_[q].Find(t);
        next = set_.processes[q].info.ppid;
        if (found >= 0) break;
      }
      if (found >= 0) {
        if (pick_ != RegionPick::kOutermost) return found;
        furthest = found;
      }
      if (next == ppid) break;
      ppid = next;
    }
    return furthest;
  }

  const TraceSet& set_;
  const RegionPick pick_;
  std::unordered_map<uint64_t, SegmentIndex> thread_index_;  // ThreadKey ->
  std::vector<SegmentIndex> process_index_;
  // pid -> traces of that pid (an exec'ed image has a trace of its own).
  std::unordered_map<int32_t, std::vector<uint32_t>> traces_of_pid_;
};

}  // namespace

bool IsRegionKind(uint16_t kind, RegionSource source) {
  const bool app = kind == static_cast<uint16_t>(EventKind::AppRegion);
  const bool nvtx = kind == static_cast<uint16_t>(EventKind::NvtxRange);
  switch (source) {
    case RegionSource::kApp: return app;
    case RegionSource::kNvtx: return nvtx;
    case RegionSource::kAll:
    case RegionSource::kAuto: return app || nvtx;
  }
  return false;
}

bool IsRegionNamed(const std::string& name, const std::string& region) {
  const size_t n = region.size();
  return name.compare(0, n, region) == 0 && (name.size() == n || name[n] == ' ');
}

bool IsLoaderRegion(const std::string& name) {
  for (const char* loader :
       {kDefaultBatchRegion, kFetchRegion, kLoaderIterRegion, kOptimizerStepRegion, kPinRegion,
        kSaveCheckpointRegion, kLoadCheckpointRegion, kSampleRegion, kCollateRegion,
        kDecodeRegion, kTransformRegionPrefix}) {
    if (IsRegionNamed(name, loader)) return true;
  }
  return false;
}

bool IsFetchDetailRegion(const std::string& name) {
  return name == kSampleRegion || name == kCollateRegion || name == kDecodeRegion ||
         IsRegionNamed(name, kTransformRegionPrefix);
}

LoopRegion LoopRegionNamed(const std::string& name, const std::string& batch_region) {
  if (IsRegionNamed(name, batch_region)) return LoopRegion::kBatchWait;
  if (IsRegionNamed(name, kOptimizerStepRegion)) return LoopRegion::kOptimizerStep;
  if (name == kLoopStepRegion) return LoopRegion::kLoopStep;
  if (IsRegionNamed(name, kFetchRegion)) return LoopRegion::kFetch;
  if (IsRegionNamed(name, kPinRegion)) return LoopRegion::kPin;
  if (IsRegionNamed(name, kLoaderIterRegion)) return LoopRegion::kLoaderIter;
  if (IsRegionNamed(name, kSaveCheckpointRegion)) return LoopRegion::kSave;
  if (IsRegionNamed(name, kLoadCheckpointRegion)) return LoopRegion::kRestore;
  if (name == kSampleRegion) return LoopRegion::kSample;
  if (IsFetchDetailRegion(name)) return LoopRegion::kPreprocessPart;
  return LoopRegion::kOther;
}

void AutoRegionChoice::See(const Event& e, const std::string& name) {
  if (e.kind == static_cast<uint16_t>(EventKind::NvtxRange)) {
    nvtx_ = true;
  } else if (e.kind == static_cast<uint16_t>(EventKind::AppRegion) && !IsLoaderRegion(name)) {
    own_app_ = true;
  }
}

std::string RegionName(const Event& e, const ProcessTrace& p) {
  auto s = p.strings.find(e.file);
  return s != p.strings.end() ? s->second : "<unknown string " + std::to_string(e.file) + ">";
}

RegionAssignment AssignRegions(const TraceSet& set, const RegionOptions& options) {
  RegionAssignment a;
  a.pick = options.pick;
  a.regions = CollectRegions(set, ResolveSource(set, options.source));
  const RegionGroups groups = GroupRegions(set, a.regions);
  MarkOutermost(groups.by_thread, &a.regions);
  const RegionLocator locator(set, a.regions, groups, options.pick);
  a.region_of.resize(set.processes.size());
  for (size_t pi = 0; pi < set.processes.size(); ++pi) {
    locator.Assign(static_cast<uint32_t>(pi), options.inherit_from_parent, &a.region_of[pi]);
  }
  return a;
}

}  // namespace dlprof::read
