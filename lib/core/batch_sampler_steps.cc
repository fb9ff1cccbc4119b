// A loop without a DataLoader in the whole run's counters (batch_sampler.h):
// each thread's optimizer steps, the windows before them, and the reading
// in those windows as the full events' step loop counts it (lib/analysis/
// meters/step_loop.h): stretches of calls and page faults, the time
// between calls the program's own, the calls on data maps "mapping".
#include <algorithm>
#include <utility>
#include <vector>

#include "lib/core/batch_sampler.h"

namespace dlprof::core {

void BatchSampler::Step(Thread& t, uint64_t start_ns, uint64_t end_ns) {
  t.saved_since_step = false;
  t.maps_made = 0;  // a map made before the step, torn down after: no batch's
  if (t.steps < format::kFirstPeriodMarks) {
    t.step_ends[t.steps] = end_ns;
    t.first_steps_shortest = std::min(t.first_steps_shortest, end_ns - std::min(end_ns, start_ns));
  }
  ++t.steps;
  if (!stepped_ || start_ns < first_step_ns_) first_step_ns_ = start_ns;
  stepped_ = true;
  maps_.Step(start_ns, end_ns);
  if (t.steps == 1) {
    t.first_step_start = start_ns;
    t.first_step_open = true;
  } else if (start_ns > t.step_end) {
    StepWindow(t, t.step_end, start_ns);
  }
  t.step_end = std::max(t.step_end, end_ns);
  if (t.first_step_open && t.steps == format::kFirstPeriodMarks) FirstStepWindow(t);
}

void BatchSampler::StepWindow(Thread& t, uint64_t from, uint64_t to) {
  Ended w;
  w.thread = &t;
  w.role = Role::kStep;
  w.start = from;
  w.end = to;
  ended_.push_back(w);
}

void BatchSampler::FirstStepWindow(Thread& t) {
  // As long as the first steps' period says (format::FirstWindowStart);
  // the loop starts there. One step alone: no window.
  t.first_step_open = false;
  const size_t marks = std::min(t.steps, format::kFirstPeriodMarks);
  if (marks < 2) return;
  const uint64_t period = format::FirstStepPeriod(t.step_ends, marks);
  const uint64_t loop_start =
      format::FirstWindowStart(t.first_step_start, t.first_steps_shortest, period);
  if (loop_start == 0) return;
  if (steps_.loop_start_ns == 0 || loop_start < steps_.loop_start_ns) {
    steps_.loop_start_ns = loop_start;
  }
  if (t.first_step_start > loop_start) StepWindow(t, loop_start, t.first_step_start);
}

void BatchSampler::FinishSteps() {
  for (auto& [tid, t] : threads_) {
    if (t->first_step_open) FirstStepWindow(*t);
  }
}

void BatchSampler::OtherDataCalls(uint64_t start_ns, uint64_t end_ns, uint64_t ns) {
  CallSpan(Span{start_ns, std::max(start_ns, end_ns), ns});
}

void BatchSampler::MapCall(uint64_t start_ns, uint64_t end_ns, int live) {
  Thread& t = *thread_;
  const uint64_t end = std::max(start_ns, end_ns);
  if (live != 0) maps_.Map(live > 0, live > 0 ? end : start_ns);
  t.map_calls.Add(Span{start_ns, end, end - start_ns});
  if (live > 0 && t.maps_made++ == 0) {
    t.map_made_at = end;
    t.calls_ns_at_map = t.calls_ns;
  }
  if (live >= 0 || t.maps_made == 0) return;
  // The batch's map torn down: its life, whose calls' stretches are one
  // (StretchNsIn).
  if (t.map_lives.size() == kMapLives) t.map_lives.erase(t.map_lives.begin());
  // (Its calls' time: all of them since its making but this one. A run of
  // calls is handed over whole, before its maps' calls: a run of munmaps
  // ends the first map's life with the later ones' time counted in it.)
  const uint64_t since = t.calls_ns - t.calls_ns_at_map;
  const uint64_t in_calls = since - std::min(since, end - start_ns);
  t.map_lives.push_back(Span{t.map_made_at, start_ns, in_calls});
  if (--t.maps_made > 0) {
    t.map_made_at = start_ns;
    t.calls_ns_at_map = t.calls_ns;
  }
}

uint64_t BatchSampler::MapNsIn(const Thread& t, uint64_t a, uint64_t b) {
  const Spans& maps = t.map_calls;
  uint64_t ns = 0;
  for (size_t k = 1; k <= maps.count; ++k) {
    const Span& s = maps.at[(maps.next + kReadSpans - k) % kReadSpans];
    if (s.end < a) break;
    ns += Overlap(s.start, s.end, a, b);
  }
  return ns;
}

uint64_t BatchSampler::UnjoinedNsIn(const Thread& t, uint64_t a, uint64_t b) {
  std::vector<std::pair<uint64_t, uint64_t>> reads;
  for (const Spans* list : {&t.read_calls, &t.faults}) {
    for (size_t k = 1; k <= list->count; ++k) {
      const Span& s = list->at[(list->next + kReadSpans - k) % kReadSpans];
      if (s.end < a) break;
      if (s.start >= a && s.start < b) reads.emplace_back(s.start, s.end);
    }
  }
  std::sort(reads.begin(), reads.end());
  uint64_t unjoined = 0, last = 0;
  for (const auto& [start, end] : reads) {
    if (last != 0 && start > last && start - last >= format::kStepReadingJoinNs) {
      unjoined += start - last;
    }
    last = std::max(last, end);
  }
  return unjoined;
}

BatchSampler::Stretch BatchSampler::StretchNsIn(const Thread& t, uint64_t a, uint64_t b) {
  // Each span within [a, b): a run of calls (`between`: its time between
  // calls, prorated where the window cuts it) or of faults.
  struct Part {
    uint64_t start, end, between;
    bool fault;
    bool cut_start = false, cut_end = false;  // an end cut by checkpoint I/O
  };
  std::vector<Part> parts;
  for (const Spans* list : {&t.joined, &t.faults}) {
    const bool fault = list == &t.faults;
    for (size_t k = 1; k <= list->count; ++k) {
      const Span& s = list->at[(list->next + kReadSpans - k) % kReadSpans];
      if (s.end < a) break;
      if (s.start >= b || s.end <= a) continue;
      const uint64_t from = std::max(s.start, a), to = std::min(s.end, b);
      const uint64_t len = s.end - s.start, in_calls = std::min(s.ns, len);
      const uint64_t between =
          fault || len == 0
              ? 0
              : static_cast<uint64_t>(static_cast<unsigned __int128>(len - in_calls) *
                                      (to - from) / len);
      parts.push_back(Part{from, to, between, fault});
    }
  }
  // Less the thread's checkpoint I/O: a part cut by it keeps what lies
  // outside, its time between calls by its share of the length; a piece
  // between two cuts (a save's end and its load's start) holds no call.
  for (const Span& x : t.checkpoint_io) {
    if (x.end <= x.start || x.end <= a || x.start >= b) continue;
    std::vector<Part> kept;
    for (const Part& p : parts) {
      if (p.end <= x.start || p.start >= x.end) {
        kept.push_back(p);
        continue;
      }
      const uint64_t len = p.end - p.start;
      auto piece = [&](uint64_t from, uint64_t to, bool cut_start, bool cut_end) {
        if (to <= from || (cut_start && cut_end)) return;
        const uint64_t between = static_cast<uint64_t>(
            static_cast<unsigned __int128>(p.between) * (to - from) / len);
        kept.push_back(Part{from, to, between, p.fault, cut_start, cut_end});
      };
      piece(p.start, std::min(p.end, x.start), p.cut_start, true);
      piece(std::max(p.start, x.end), p.end, true, p.cut_end);
    }
    parts = std::move(kept);
  }
  std::sort(parts.begin(), parts.end(),
            [](const Part& x, const Part& y) { return x.start < y.start; });
  // A run of calls a fault overlaps: its time between calls is the copy
  // out of the map (reading), as the full events count a gap next to a
  // fault.
  for (Part& p : parts) {
    if (p.fault || p.between == 0) continue;
    for (const Part& f : parts) {
      if (f.fault && f.start < p.end && f.end > p.start) p.between = 0;
    }
  }
  // A gap inside a batch's map's life: joined however long (the copies
  // out of the map: step_loop.h, AddDataIo).
  auto in_map_life = [&](uint64_t from, uint64_t to) {
    for (const Span& life : t.map_lives) {
      if (life.start <= from && to <= life.end) return true;
    }
    return false;
  };
  Stretch out;
  uint64_t from = 0, to = 0;
  bool open = false, last_fault = false;
  for (const Part& p : parts) {
    if (open && (p.start < to + format::kStepReadingJoinNs || in_map_life(to, p.start))) {
      // Joined: the gap between two runs of calls is the program's work;
      // next to a fault, reading.
      if (p.start > to && !p.fault && !last_fault) out.preprocessing += p.start - to;
    } else {
      if (open) out.ns += to - from;
      from = p.start;
      to = p.start;
      open = true;
    }
    if (p.end > to) {
      out.preprocessing += p.between;
      to = p.end;
      last_fault = p.fault;
    }
  }
  if (open) out.ns += to - from;
  out.preprocessing = std::min(out.preprocessing, out.ns);
  return out;
}

void BatchSampler::SettleStep(const Ended& r) {
  const Thread& t = *r.thread;
  ++steps_.waits;
  const Stretch w = StretchNsIn(t, r.start, r.end);
  const uint64_t mapping = std::min(MapNsIn(t, r.start, r.end), w.ns - w.preprocessing);
  steps_.wait_ns += w.ns;
  steps_.preprocessing_ns += w.preprocessing + mapping;
  steps_.mapping_ns += mapping;
  // The batches' maps' lives less their calls and faults: the copies out of
  // them (the full events' StepLoop::Step::map_copy_ns), of the program's
  // own work between calls.
  uint64_t copies = 0;
  for (const Span& life : t.map_lives) {
    const uint64_t a = std::max(life.start, r.start), b = std::min(life.end, r.end);
    if (b <= a) continue;
    // Its calls' time, prorated where the window cuts it, and its faults'.
    uint64_t io = static_cast<uint64_t>(static_cast<unsigned __int128>(life.ns) * (b - a) /
                                        std::max<uint64_t>(1, life.end - life.start));
    AddReadsIn(t.faults, a, b, 1, &io);
    copies += b - a - std::min(b - a, io);
  }
  steps_.map_copy_ns += std::min(copies, w.preprocessing);
  const uint64_t unjoined = UnjoinedNsIn(t, r.start, r.end);
  if (step_unjoined_.size() < kUnjoinedSample) {
    step_unjoined_.push_back(unjoined);
  } else {  // a sample, each step's place taken in turn
    step_unjoined_[unjoined_steps_ % kUnjoinedSample] = unjoined;
  }
  ++unjoined_steps_;
}

format::StepRecord BatchSampler::TakeSteps(uint64_t start_ns, bool* any) {
  format::StepRecord r = steps_;
  r.start_ns = start_ns;
  // The steps' work between reads far apart, typical of them: the median
  // step's times the steps, as the full events' (an evaluation pass every
  // 50 steps spreads one window in 50).
  if (!step_unjoined_.empty()) {
    const auto mid = step_unjoined_.begin() + step_unjoined_.size() / 2;
    std::nth_element(step_unjoined_.begin(), mid, step_unjoined_.end());
    r.unjoined_ns = *mid * unjoined_steps_;
    step_unjoined_.clear();
    unjoined_steps_ = 0;
  }
  r.map_live_ns = maps_.Take();
  *any = r.waits > 0 || r.loop_start_ns != 0 || r.any_unseen();
  steps_ = format::StepRecord{};
  return r;
}

}  // namespace dlprof::core
