// StepLoop (step_loop.h): the batch waits of a loop without a DataLoader.
#include "lib/analysis/meters/step_loop.h"

#include <algorithm>

namespace dlprof::analysis {
namespace {

void AddToGap(StepLoop::Step* gap, uint64_t start, uint64_t end, uint64_t bytes,
              uint64_t gpu_idle_ns, bool fault, StepLoop::MapCall map) {
  using MapCall = StepLoop::MapCall;
  if (bytes > 0 || fault) {
    // Work between two reads further apart than the join (Result::
    // unjoined_ns). Reads only: a save's other calls on its file (its
    // fstat, its lseek) before the batch's reads span the save's writes.
    if (gap->read_last != 0 && start > gap->read_last &&
        start - gap->read_last >= StepLoop::kJoinGapNs) {
      gap->unjoined_ns += start - gap->read_last;
    }
    gap->read_last = std::max(gap->read_last, end);
  }
  // A map made in this window torn down: the batch's map, its life one
  // stretch (step_loop.h, AddDataIo).
  const bool batch_map_ends = map == MapCall::kTornDown && gap->maps_made > 0;
  if (gap->io_ns == 0 && gap->io_first == 0) {
    gap->io_first = start;
  } else if (start > gap->io_last) {
    // The program's own code between two calls (a get_batch's slicing, a
    // decoder's work between a file's reads): in the wait, not in a call.
    // It is the program's (joined_ns: decoding, parsing, an open's Python),
    // not storage's, but next to a page fault: there it is the copy out of
    // the mapped file (of the pages the fault read ahead), reading as the
    // fault is.
    const uint64_t between = start - gap->io_last;
    const uint64_t own = !fault && !gap->last_fault ? between : 0;
    if (between < StepLoop::kJoinGapNs || batch_map_ends) {
      gap->io_ns += between;
      gap->joined_ns += own;
      if (gap->maps_made > 0) gap->held_copy_ns += own;
    } else if (gap->maps_made > 0) {
      gap->held_ns += between;
      gap->held_between_ns += own;
    }
  }
  if (batch_map_ends) {
    gap->io_ns += gap->held_ns;
    gap->joined_ns += gap->held_between_ns;
    gap->map_copy_ns += gap->held_copy_ns + gap->held_between_ns;
    gap->held_ns = gap->held_between_ns = gap->held_copy_ns = 0;
    --gap->maps_made;
  } else if (map == MapCall::kMade && gap->maps_made++ == 0) {
    gap->held_ns = gap->held_between_ns = gap->held_copy_ns = 0;
  }
  if (end <= gap->io_last) return;
  gap->last_fault = fault;
  const uint64_t added = end - std::max(start, gap->io_last);
  gap->io_ns += added;
  if (fault) gap->fault_ns += added;
  if (map != MapCall::kNone) gap->map_ns += added;
  gap->io_last = end;
  gap->gpu_idle_ns += gpu_idle_ns;
}

}  // namespace

void StepLoop::AddDataIo(uint64_t thread, uint64_t start, uint64_t end, uint64_t bytes,
                         uint64_t gpu_idle_ns, bool fault, MapCall map) {
  if (end < start) return;
  Thread& t = threads_[thread];
  if (!t.stepped) {
    // Once some thread steps, a thread that has not is another's helper (a
    // prefetcher feeding a queue) until it steps itself: its reading during
    // the loop is counted, joined as a step's is (its calls come in order,
    // so `other_last` keeps the sum a union).
    const bool late = any_step_;
    if (late && end > t.other_last) {
      if (t.other_last > 0 && start > t.other_last && start - t.other_last < kJoinGapNs) {
        t.other_io_ns += start - t.other_last;
      }
      t.other_io_ns += end - std::max(start, t.other_last);
      t.other_last = end;
    }
    t.early.push_back({start, end, bytes, gpu_idle_ns, fault, map, late});
    if (t.early.size() > kKeptEarlyCalls) t.early.pop_front();
    return;
  }
  // A call inside the thread's latest step (rare: the optimizer's own
  // I/O) belongs to no window.
  if (start < t.resume_at) return;
  AddToGap(&t.gap, start, end, bytes, gpu_idle_ns, fault, map);
}

void StepLoop::AddDataMap(uint32_t process, uint64_t ns, bool made) {
  DataMaps& m = maps_[process];
  if (made) {
    if (m.live++ == 0) m.since = ns;
  } else if (m.live > 0 && --m.live == 0) {  // (a map torn down in parts: the first)
    m.spans.emplace_back(m.since, ns);
  }
}

uint64_t StepLoop::MapLiveNs(uint64_t from, uint64_t to) const {
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const auto& [process, m] : maps_) {
    bool steps = false;
    for (const auto& [key, t] : threads_) steps |= !t.steps.empty() && key >> 32 == process;
    if (!steps) continue;
    for (const auto& [start, end] : m.spans) spans.emplace_back(start, end);
    if (m.live > 0) spans.emplace_back(m.since, to);
  }
  std::sort(spans.begin(), spans.end());
  uint64_t live = 0, covered = from;  // the union, clipped to [from, to)
  for (const auto& [start, end] : spans) {
    const uint64_t a = std::max(start, covered), b = std::min(end, to);
    if (b > a) live += b - a;
    covered = std::max(covered, b);
  }
  return live;
}

void StepLoop::AddStep(uint64_t thread, uint64_t start, uint64_t end) {
  Thread& t = threads_[thread];
  any_step_ = true;
  Step step = t.gap;  // the first step's I/O is worked out in Finish, from `early`
  step.window_start = t.stepped ? t.resume_at : 0;
  step.start = start;
  step.end = end;
  step.thread = thread;
  t.steps.push_back(step);
  t.gap = Step();
  t.stepped = true;
  t.resume_at = end;
}

uint64_t StepLoop::FirstPeriod(const std::vector<uint64_t>& marks) {
  return format::FirstStepPeriod(marks.data(), marks.size());
}

StepLoop::Result StepLoop::Finish(uint64_t first_ns) const {
  Result r;
  r.loop_start = UINT64_MAX;
  for (const auto& [key, t] : threads_) {
    if (t.steps.empty()) continue;
    std::vector<Step> steps = t.steps;
    Step& first = steps.front();
    // The first window: a period (step 1's end to step 2's, or the next
    // steps' median: FirstPeriod) back from the end of the shortest of the
    // first steps begun at step 1's start (format::FirstWindowStart); with
    // one step, the step alone.
    std::vector<uint64_t> ends;
    uint64_t shortest = UINT64_MAX;
    for (size_t i = 0; i < steps.size() && i < kFirstPeriodMarks; ++i) {
      ends.push_back(steps[i].end);
      shortest = std::min(shortest, steps[i].end - steps[i].start);
    }
    const uint64_t period = steps.size() > 1 ? FirstPeriod(ends) : first.end - first.start;
    first.window_start =
        std::max(first_ns, format::FirstWindowStart(first.start, shortest, period));
    // A call in progress at the window's start (a fault stalled 20 ms
    // under load) is the wait's from there on, as the counters take it
    // (lib/core/batch_sampler.h: their first window cuts a span), where it
    // began less than a period before: one begun earlier is the start-up's
    // (the data set read into memory in one call, 385 ms, its last 79 ms
    // "the first batch's reading"). Its call is the window's, its time and
    // bytes (and the GPU's idle time in it) prorated: the rest is start-up.
    for (const Call& c : t.early) {
      if (c.start >= first.start || c.end <= first.window_start) continue;
      if (c.start < first.window_start && first.window_start - c.start > period) continue;
      const uint64_t from = std::max(c.start, first.window_start);
      auto prorated = [&](uint64_t x) {
        return from == c.start ? x
                               : static_cast<uint64_t>(static_cast<unsigned __int128>(x) *
                                                       (c.end - from) / (c.end - c.start));
      };
      const uint64_t bytes = prorated(c.bytes);
      AddToGap(&first, from, std::min(c.end, first.start), bytes, prorated(c.gpu_idle_ns),
               c.fault, c.map);
      r.first_window_io_ns += c.end - from;
      r.first_window_io_ops += c.fault ? 0 : 1;
      r.first_window_read_bytes += bytes;
      if (c.fault) {
        r.first_window_map_ns += c.end - from;
        r.first_window_map_bytes += bytes;
      }
    }
    r.loop_start = std::min(r.loop_start, first.window_start);
    r.loop_end = std::max(r.loop_end, steps.back().end);
    r.steps.insert(r.steps.end(), steps.begin(), steps.end());
  }
  if (r.steps.empty()) return Result();
  // Work between reads kJoinGapNs or more apart, in no figure: the median
  // step's, once a step (step_loop.h). Typical of the steps, not their
  // sum: an evaluation pass every 50 steps, its forward passes between its
  // reads, spreads one window in 50 (473.7 ms of a 2.59 s loop).
  std::vector<uint64_t> unjoined;
  for (const Step& s : r.steps) unjoined.push_back(s.unjoined_ns);
  std::nth_element(unjoined.begin(), unjoined.begin() + unjoined.size() / 2, unjoined.end());
  r.unjoined_ns = unjoined[unjoined.size() / 2] * unjoined.size();
  // The data I/O during the loop of threads that never stepped: after the
  // first step, counted as it came; before it, their kept calls inside the
  // loop's window.
  for (const auto& [key, t] : threads_) {
    if (!t.steps.empty()) continue;
    r.other_threads_io_ns += t.other_io_ns;
    for (const Call& c : t.early) {
      if (c.late || c.end <= r.loop_start) continue;
      r.other_threads_io_ns += c.end - std::max(c.start, r.loop_start);
    }
  }
  r.map_live_ns = MapLiveNs(r.loop_start, r.loop_end);
  std::sort(r.steps.begin(), r.steps.end(),
            [](const Step& a, const Step& b) { return a.start < b.start; });
  return r;
}

}  // namespace dlprof::analysis
