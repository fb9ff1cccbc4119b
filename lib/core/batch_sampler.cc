// The batch waits of the whole run, on the flusher (batch_sampler.h).
#include "lib/core/batch_sampler.h"

#include <algorithm>

#include "lib/core/string_table.h"

namespace dlprof::core {
namespace {

// An interval's samples beyond those of the batches sampled always, a
// second of it: hashed, and then waits kept for their length and fetches
// for their lateness, each (about eight a second in all).
constexpr size_t kHashedPerSecond = 6;
constexpr size_t kLongestPerSecond = 2;
// Page faults this close are one span (BatchSampler::MappedRead).
constexpr uint64_t kFaultRunGapNs = 100000;
// A thread's data calls this close are one span (BatchSampler::DataRead):
// a sample's open, reads and close, a few us apart in a loader's
// __getitem__, take one of a thread's spans, not three, and a fetch's
// eighths take their time prorated over the span (the gaps within it, at
// most this, as the faults' runs).
constexpr uint64_t kCallRunGapNs = kFaultRunGapNs;
constexpr uint8_t kMaxLevel = format::kBatchIndexBits - 1;

// So many a second of an interval of `interval_ns`, and as many at least.
size_t PerInterval(size_t per_second, uint64_t interval_ns) {
  return std::max<size_t>(per_second, per_second * interval_ns / 1000000000ull);
}

uint64_t Overlap(uint64_t s, uint64_t e, uint64_t a, uint64_t b) {
  const uint64_t lo = std::max(s, a), hi = std::min(e, b);
  return hi > lo ? hi - lo : 0;
}

}  // namespace

BatchSampler::BatchSampler(StringTable* strings, uint64_t interval_ns)
    : roles_(strings),
      cap_(PerInterval(kHashedPerSecond, interval_ns)),
      longest_waits_(PerInterval(kLongestPerSecond, interval_ns)),
      latest_fetches_(PerInterval(kLongestPerSecond, interval_ns)) {}

void BatchSampler::SetThread(uint32_t tid) {
  std::unique_ptr<Thread>& t = threads_[tid];
  if (!t) t = std::make_unique<Thread>();
  thread_ = t.get();
  thread_->seen = true;
}

void BatchSampler::DataRead(uint64_t start_ns, uint64_t end_ns, uint64_t ns) {
  const Span s{start_ns, std::max(start_ns, end_ns), ns};
  CallSpan(s);
  Spans& reads = thread_->read_calls;
  if (reads.count > 0 && s.start >= reads.newest().start &&
      s.start <= reads.newest().end + kCallRunGapNs) {
    reads.newest().end = std::max(reads.newest().end, s.end);
  } else {
    reads.Add(s);
  }
}

void BatchSampler::OtherIo(uint64_t start, uint64_t end, bool fault) {
  Thread& t = *thread_;
  if (t.steps > 0) return;
  if (!stepped_) {
    if (t.other_held.size() < kOtherHeld) t.other_held.push_back({start, end, fault ? 1u : 0u});
    return;
  }
  CountOtherIo(t, start, end, fault);
}

void BatchSampler::CountOtherIo(Thread& t, uint64_t start, uint64_t end, bool fault) {
  start = std::max(start, first_step_ns_);  // before it: the loop's start-up
  if (end <= start) return;
  uint64_t& last = fault ? t.other_fault_last : t.other_call_last;
  if (end <= last) return;
  if (last > 0 && start > last && start - last < format::kStepReadingJoinNs) {
    steps_.other_threads_io_ns += start - last;
  }
  steps_.other_threads_io_ns += end - std::max(start, last);
  last = end;
}

void BatchSampler::CallSpan(const Span& s) {
  OtherIo(s.start, s.end, false);
  JoinCall(thread_, s);
  Spans& reads = thread_->reads;
  if (reads.count > 0) {
    Span& last = reads.newest();
    if (s.start >= last.start && s.start <= last.end + kCallRunGapNs) {
      last.end = std::max(last.end, s.end);
      last.ns += s.ns;
      return;
    }
  }
  reads.Add(s);
}

void BatchSampler::MappedRead(uint64_t start_ns, uint64_t end_ns) {
  Spans& faults = thread_->faults;
  const uint64_t end = std::max(start_ns, end_ns);
  OtherIo(start_ns, end, true);
  // Faults close together -- a gather over a mapped array takes hundreds
  // in a row -- are one span, so that a fetch keeps all of its own.
  if (faults.count > 0) {
    Span& last = faults.newest();
    if (start_ns >= last.start && start_ns <= last.end + kFaultRunGapNs) {
      last.end = std::max(last.end, end);
      last.ns += end - start_ns;
      return;
    }
  }
  faults.Add(Span{start_ns, end, end - start_ns});
}

void BatchSampler::AddReadsIn(const Spans& spans, uint64_t a, uint64_t b, int parts,
                              uint64_t* out) {
  if (b <= a) return;
  const uint64_t len = b - a;
  // Newest first: a thread's spans are in time order and never overlap,
  // so the walk stops at the first that ended before `a` (a wait visits
  // its own reads and one more).
  for (size_t k = 1; k <= spans.count; ++k) {
    const Span& s = spans.at[(spans.next + kReadSpans - k) % kReadSpans];
    if (s.end < a) break;
    if (s.start >= b) continue;
    for (int p = 0; p < parts; ++p) {
      const uint64_t lo = a + len * p / parts, hi = a + len * (p + 1) / parts;
      if (s.end == s.start) {
        if (s.start >= lo && s.start < hi) out[p] += s.ns;
      } else {
        out[p] += static_cast<uint64_t>(static_cast<unsigned __int128>(s.ns) *
                                        Overlap(s.start, s.end, lo, hi) / (s.end - s.start));
      }
    }
  }
}

bool BatchSampler::Sampled(uint64_t id) {
  if (!format::BatchSampled(id, level_)) return false;
  if (format::BatchIndexOf(id) < format::kAlwaysSampled) return true;
  while (sampled_ >= cap_ && level_ < kMaxLevel) {
    ++level_;
    auto dropped = [&](const auto& s) { return !format::BatchSampled(s.id, level_); };
    record_.waits.erase(std::remove_if(record_.waits.begin(), record_.waits.end(), dropped),
                        record_.waits.end());
    record_.fetches.erase(
        std::remove_if(record_.fetches.begin(), record_.fetches.end(), dropped),
        record_.fetches.end());
    auto counted = [](const auto& s) {
      return format::BatchIndexOf(s.id) >= format::kAlwaysSampled;
    };
    sampled_ = std::count_if(record_.waits.begin(), record_.waits.end(), counted) +
               std::count_if(record_.fetches.begin(), record_.fetches.end(), counted);
    if (!format::BatchSampled(id, level_)) return false;
  }
  ++sampled_;
  return true;
}

void BatchSampler::OfferWait(const format::WaitSample& w) {
  std::optional<format::WaitSample> out = longest_waits_.Offer(w.end_ns - w.start_ns, w);
  if (out && Sampled(out->id)) record_.waits.push_back(*out);
}

void BatchSampler::OfferFetch(uint64_t late, const format::FetchSample& f) {
  std::optional<format::FetchSample> out = latest_fetches_.Offer(late, f);
  if (out && Sampled(out->id)) record_.fetches.push_back(*out);
}

void BatchSampler::Mark(uint32_t name, uint64_t at_ns) {
  if (roles_.Of(name) != Role::kNoBatchMark) return;
  thread_->no_batch_mark = true;
  thread_->no_batch_at = at_ns;
}

bool BatchSampler::TakeNoBatchMark(uint64_t start_ns, uint64_t end_ns) {
  Thread& t = *thread_;
  if (!t.no_batch_mark || t.no_batch_at < start_ns || t.no_batch_at > end_ns) return false;
  t.no_batch_mark = false;
  return true;
}

void BatchSampler::Region(uint32_t name, uint64_t start_ns, uint64_t end_ns) {
  const Role role = roles_.Of(name);
  if (role == Role::kOther || role == Role::kUnknown || role == Role::kNoBatchMark) return;
  Thread& t = *thread_;
  if (role == Role::kStep) {
    Step(t, start_ns, end_ns);
    return;
  }
  if (role == Role::kPin) {
    t.pins[t.pins_next] = Span{start_ns, end_ns, end_ns - start_ns};
    t.pins_next = (t.pins_next + 1) % kPinSpans;
    return;
  }
  if (role == Role::kSave || (role == Role::kLoad && t.saved_since_step)) {
    t.saved_since_step = t.saved_since_step || role == Role::kSave;
    if (t.checkpoint_io.size() == kCheckpointSpans) t.checkpoint_io.erase(t.checkpoint_io.begin());
    t.checkpoint_io.push_back(Span{start_ns, end_ns, end_ns - start_ns});
    return;
  }
  if (role == Role::kWait || role == Role::kIter) {
    const uint64_t wait = end_ns - start_ns;
    const bool flowed =
        t.flow_finished && t.finished_at >= start_ns && t.finished_at <= end_ns;
    t.flow_finished = false;
    if (role == Role::kWait && flowed) {
      ++record_.flow_waits;
      record_.flow_wait_ns += wait;
      const format::WaitSample w{t.finished_id, start_ns, end_ns};
      if (format::BatchIndexOf(w.id) >= format::kAlwaysSampled) {
        OfferWait(w);
      } else if (Sampled(w.id)) {
        record_.waits.push_back(w);
      }
      return;
    }
    Ended w;
    w.thread = &t;
    w.role = role;
    w.start = start_ns;
    w.end = end_ns;
    AddReadsIn(t.reads, start_ns, end_ns, 1, w.read_ns);
    for (const Span& p : t.pins) w.pin_ns += Overlap(p.start, p.end, start_ns, end_ns);
    ended_.push_back(w);
    return;
  }
  if (role == Role::kFetch) {
    const bool flowed = t.flow_started && t.started_at >= start_ns && t.started_at <= end_ns;
    t.flow_started = false;
    if (!flowed) return;
    // The process's first fetch of a pass: the id's upper bits are the
    // loader's iterator (its pass), which persistent workers see change too.
    const uint64_t pass = t.started_id >> format::kBatchIndexBits;
    const bool first = !fetched_ || pass != pass_;
    fetched_ = true;
    pass_ = pass;
    // How long the fetch took since it, or the thread's previous fetch,
    // ended last: a worker held up (descheduled, a read stalled) is late,
    // and so is its batch. Not the time before it began where the worker
    // was idle, waiting for its index: a worker ahead of its loop waits so
    // before every fetch, and the loop's pauses would outrank its lateness.
    const uint64_t late = end_ns - std::min(end_ns, std::max(t.fetch_end, start_ns));
    t.fetch_end = std::max(t.fetch_end, end_ns);
    // Its reads are taken now, while the thread's spans hold them, where
    // it may be kept; whether it is, once settled.
    if (format::BatchIndexOf(t.started_id) >= format::kAlwaysSampled &&
        !format::BatchSampled(t.started_id, level_) && !latest_fetches_.Admits(late)) {
      return;
    }
    Ended f;
    f.thread = &t;
    f.role = Role::kFetch;
    f.start = start_ns;
    f.end = end_ns;
    f.id = t.started_id;
    f.late = late;
    f.first = first;
    AddReadsIn(t.reads, start_ns, end_ns, format::kFetchParts, f.read_ns);
    ended_.push_back(f);
  }
}

void BatchSampler::Step(Thread& t, uint64_t start_ns, uint64_t end_ns) {
  t.saved_since_step = false;
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
  const uint64_t end = std::max(start_ns, end_ns);
  if (live != 0) maps_.Map(live > 0, live > 0 ? end : start_ns);
  thread_->map_calls.Add(Span{start_ns, end, end - start_ns});
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
  Stretch out;
  uint64_t from = 0, to = 0;
  bool open = false, last_fault = false;
  for (const Part& p : parts) {
    if (open && p.start < to + format::kStepReadingJoinNs) {
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

void BatchSampler::Settle() {
  for (auto& [tid, t] : threads_) {
    if (t->other_held.empty()) continue;
    // (Where none stepped, what it held came before any step: start-up.)
    if (stepped_ && t->steps == 0) {
      for (const Span& s : t->other_held) CountOtherIo(*t, s.start, s.end, s.ns != 0);
    }
    t->other_held.clear();
  }
  for (const Ended& r : ended_) {
    if (r.role == Role::kFetch) {
      SettleFetch(r);
    } else if (r.role == Role::kStep) {
      ++steps_.waits;
      const Stretch w = StretchNsIn(*r.thread, r.start, r.end);
      const uint64_t mapping = std::min(MapNsIn(*r.thread, r.start, r.end), w.ns - w.preprocessing);
      steps_.wait_ns += w.ns;
      steps_.preprocessing_ns += w.preprocessing + mapping;
      const uint64_t unjoined = UnjoinedNsIn(*r.thread, r.start, r.end);
      if (step_unjoined_.size() < kUnjoinedSample) {
        step_unjoined_.push_back(unjoined);
      } else {  // a sample, each step's place taken in turn
        step_unjoined_[unjoined_steps_ % kUnjoinedSample] = unjoined;
      }
      ++unjoined_steps_;
    } else {
      SettleOwnWait(r);
    }
  }
  ended_.clear();
  // The checkpoint I/O before a thread's last step's end is in no window
  // still to come (but its first window's, taken at its fifth step).
  for (auto& [tid, t] : threads_) {
    if (t->first_step_open) continue;
    std::vector<Span>& io = t->checkpoint_io;
    io.erase(std::remove_if(io.begin(), io.end(),
                            [&](const Span& x) { return x.end <= t->step_end; }),
             io.end());
  }
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

void BatchSampler::SettleOwnWait(const Ended& w) {
  const uint64_t wait = w.end - w.start;
  uint64_t read_ns = w.read_ns[0];
  AddReadsIn(w.thread->faults, w.start, w.end, 1, &read_ns);
  const uint64_t reading = std::min(read_ns, wait);
  format::OwnWaits& sum = w.role == Role::kIter ? record_.iter
                          : reading > 0   ? record_.read
                                          : record_.idle;
  ++sum.count;
  sum.ns += wait;
  sum.reading_ns += reading;
  sum.pin_ns += std::min(w.pin_ns, wait - reading);
}

void BatchSampler::SettleFetch(const Ended& f) {
  uint64_t parts[format::kFetchParts];
  std::copy(f.read_ns, f.read_ns + format::kFetchParts, parts);
  AddReadsIn(f.thread->faults, f.start, f.end, format::kFetchParts, parts);
  format::FetchSample s;
  s.id = f.id;
  s.start_ns = f.start;
  s.end_ns = f.end;
  s.first = f.first;
  for (int k = 0; k < format::kFetchParts; ++k) {
    s.read_us[k] = static_cast<uint32_t>(std::min<uint64_t>(parts[k] / 1000, UINT32_MAX));
  }
  if (format::BatchIndexOf(s.id) >= format::kAlwaysSampled) {
    OfferFetch(f.late, s);
  } else {
    record_.fetches.push_back(s);
  }
}

void BatchSampler::Flow(bool finish, uint32_t name, uint64_t id, uint64_t at_ns) {
  if (roles_.Of(name) != Role::kBatchFlow) return;
  Thread& t = *thread_;
  if (finish) {
    t.flow_finished = true;
    t.finished_id = id;
    t.finished_at = at_ns;
  } else {
    t.flow_started = true;
    t.started_id = id;
    t.started_at = at_ns;
  }
}

format::BatchRecord BatchSampler::Take(uint64_t start_ns) {
  Settle();
  longest_waits_.Take(&record_.longest);
  latest_fetches_.Take(&record_.fetches);
  format::BatchRecord r = std::move(record_);
  r.start_ns = start_ns;
  r.level = level_;
  record_ = format::BatchRecord{};
  if (sampled_ < cap_ / 4 && level_ > 0) --level_;
  sampled_ = 0;
  // A thread that drained nothing for two intervals has ended, or waits
  // on something that no longer needs its old reads.
  for (auto it = threads_.begin(); it != threads_.end();) {
    Thread& t = *it->second;
    t.idle = t.seen ? 0 : t.idle + 1;
    t.seen = false;
    if (t.idle >= 2 && &t != thread_) {
      it = threads_.erase(it);
    } else {
      ++it;
    }
  }
  return r;
}

}  // namespace dlprof::core
