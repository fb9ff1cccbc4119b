// ProcessLoops (process_loops.h): a job's loops without ranks, by process.
#include "lib/analysis/meters/process_loops.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace dlprof::analysis {

ProcessLoops::ProcessLoops(const std::vector<read::ProcessTrace>& processes)
    : image_(processes.size()), parent_(processes.size(), -1), loops_(processes.size()) {
  std::multimap<std::pair<std::string, int32_t>, size_t> by_pid;
  for (size_t i = 0; i < processes.size(); ++i) {
    const format::ProcessInfo& p = processes[i].info;
    image_[i] = static_cast<uint32_t>(i);
    // A later segment of a bounded trace: the first one's image.
    auto range = by_pid.equal_range({p.host, p.pid});
    for (auto it = range.first; it != range.second; ++it) {
      const format::ProcessInfo& q = processes[it->second].info;
      if ((p.flags & q.flags & kHeaderFlagSegment) && q.process_start_ns == p.process_start_ns) {
        image_[i] = image_[it->second];
        break;
      }
    }
    by_pid.emplace(std::make_pair(p.host, p.pid), i);
  }
  for (size_t i = 0; i < processes.size(); ++i) {
    const format::ProcessInfo& p = processes[i].info;
    if (p.ppid <= 0) continue;
    // pids are reused: the latest process of the pid started by then (of
    // its images, the last: the one it ran when it forked, more likely).
    if (image_[i] != i) continue;  // a later segment: its image has its parent
    auto range = by_pid.equal_range({p.host, p.ppid});
    for (auto it = range.first; it != range.second; ++it) {
      const format::ProcessInfo& q = processes[it->second].info;
      if (image_[it->second] == i || q.process_start_ns > p.process_start_ns) continue;
      const int64_t best = parent_[i];
      if (best < 0 ||
          q.process_start_ns > processes[static_cast<size_t>(best)].info.process_start_ns) {
        parent_[i] = static_cast<int64_t>(image_[it->second]);
      }
    }
  }
}

ProcessLoops::Loop* ProcessLoops::LoopOf(uint32_t process) {
  return process < image_.size() ? &loops_[image_[process]] : nullptr;
}

void ProcessLoops::SeeEvent(uint32_t process, uint64_t start) {
  Loop* l = LoopOf(process);
  if (l != nullptr) l->first_ns = std::min(l->first_ns, start);
}

void ProcessLoops::AddWait(uint32_t process, uint64_t start, uint64_t end) {
  if (LoopOf(process) == nullptr) return;
  Loop& l = *LoopOf(process);
  if (!l.begun) {
    l.begun = true;
    l.start = start;
  }
  l.end = std::max(l.end, end);
  ++l.waits;
}

void ProcessLoops::AddStep(uint32_t process, uint64_t end, bool optimizer) {
  Loop* found = LoopOf(process);
  if (found == nullptr || !found->begun) return;  // a step of start-up
  Loop& l = *found;
  l.end = std::max(l.end, end);
  if (optimizer) ++l.optimizer_steps;
}

void ProcessLoops::AddStepWindow(uint32_t process, uint64_t start, uint64_t end) {
  Loop* found = LoopOf(process);
  if (found == nullptr || end < start) return;
  Loop& l = *found;
  l.start = l.begun ? std::min(l.start, start) : start;
  l.end = std::max(l.end, end);
  l.begun = true;
  ++l.optimizer_steps;
}

int64_t ProcessLoops::NearestLooping(uint32_t p) const {
  int64_t at = p;
  // Bounded: a forged header may make a cycle.
  for (size_t depth = 0; at >= 0 && depth <= loops_.size(); ++depth) {
    if (loops_[static_cast<size_t>(at)].begun) return at;
    at = parent_[static_cast<size_t>(at)];
  }
  return -1;
}

void ProcessLoops::AddIo(uint32_t process, uint64_t ns, uint64_t read_bytes, bool map) {
  if (LoopOf(process) == nullptr) return;
  // Events come by start: the loops begun so far are those begun before it.
  const int64_t looping = NearestLooping(image_[process]);
  std::vector<std::pair<int64_t, StartupIo>>& io = LoopOf(process)->io;
  if (io.empty() || io.back().first != looping) io.emplace_back(looping, StartupIo());
  StartupIo& s = io.back().second;
  s.io_ns += ns;
  s.read_bytes += read_bytes;
  if (map) {
    s.map_ns += ns;
    s.map_bytes += read_bytes;
  } else {
    ++s.io_ops;
  }
}

size_t ProcessLoops::loops() const {
  return static_cast<size_t>(
      std::count_if(loops_.begin(), loops_.end(), [](const Loop& l) { return l.begun; }));
}

ProcessLoops::Result ProcessLoops::Finish(const Span& extend_end, const Span& kept) const {
  Result r;
  r.start_ns = UINT64_MAX;
  std::vector<std::pair<uint64_t, uint64_t>> windows;  // bounded by the processes
  for (uint32_t p = 0; p < loops_.size(); ++p) {
    const Loop& l = loops_[p];
    // Its I/O before its loop's start: its loop's start-up (the loop of
    // the nearest process of its line that looped, which had not begun when
    // the call came unless it was the process the call was kept by).
    const int64_t owner = NearestLooping(p);
    if (owner >= 0) {
      StartupIo& s = r.startup_io;
      for (const auto& [looping, io] : l.io) {
        if (looping == owner) continue;
        s.io_ns += io.io_ns, s.io_ops += io.io_ops, s.read_bytes += io.read_bytes;
        s.map_ns += io.map_ns, s.map_bytes += io.map_bytes;
      }
    }
    if (!l.begun) continue;
    ++r.loops;
    const uint64_t steps = l.optimizer_steps > 0 ? l.optimizer_steps : l.waits;
    const uint64_t end = extend_end(p, l.end, (l.end - l.start) / std::max<uint64_t>(steps, 1));
    const uint64_t on_disk = kept ? std::min(kept(p, l.start, end), end - l.start) : end - l.start;
    r.loop_ns += on_disk;
    r.unkept_ns += end - l.start - on_disk;
    if (l.first_ns < l.start) r.startup_ns += l.start - l.first_ns;
    r.start_ns = std::min(r.start_ns, l.start);
    r.end_ns = std::max(r.end_ns, end);
    r.optimizer_steps += l.optimizer_steps;
    windows.emplace_back(l.start, end);
  }
  if (r.loops == 0) r.start_ns = 0;
  r.overlapping = AnyOverlap(std::move(windows));
  return r;
}

bool AnyOverlap(std::vector<std::pair<uint64_t, uint64_t>> windows) {
  std::sort(windows.begin(), windows.end());
  for (size_t i = 1; i < windows.size(); ++i) {
    if (windows[i].first < windows[i - 1].second) return true;
    windows[i].second = std::max(windows[i].second, windows[i - 1].second);
  }
  return false;
}

}  // namespace dlprof::analysis
