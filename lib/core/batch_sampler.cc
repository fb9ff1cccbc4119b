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
  thread_->calls_ns += s.ns;
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
      SettleStep(r);
    } else {
      SettleOwnWait(r);
    }
  }
  ended_.clear();
  // The checkpoint I/O and batch maps before a thread's last step's end
  // are in no window still to come (but its first window's, taken at its
  // fifth step).
  for (auto& [tid, t] : threads_) {
    if (t->first_step_open) continue;
    for (std::vector<Span>* spans : {&t->checkpoint_io, &t->map_lives}) {
      spans->erase(std::remove_if(spans->begin(), spans->end(),
                                  [&](const Span& x) { return x.end <= t->step_end; }),
                   spans->end());
    }
  }
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
