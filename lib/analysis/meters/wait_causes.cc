// WaitCauses (wait_causes.h): the batch wait split into reading,
// preprocessing and hand-over, in one pass.
#include "lib/analysis/meters/wait_causes.h"

#include <algorithm>

#include "dlprof/catalogue.h"

namespace dlprof::analysis {
namespace {

// The batch flows' name (python/dlprof: the bootstrap's and annotate_loader's).
constexpr const char* kBatchFlow = "batch";

// A wait's four parts, nothing else measured.
WaitSplit Parts(uint64_t reading, uint64_t preprocessing, uint64_t handover, uint64_t startup) {
  WaitSplit s;
  s.reading_ns = reading;
  s.preprocessing_ns = preprocessing;
  s.handover_ns = handover;
  s.worker_startup_ns = startup;
  return s;
}

// A hand-over whose producer was in page faults on mapped data files this
// part of it (one in kHeldByFaults) or more was held up by them.
constexpr uint64_t kHeldByFaults = 3;

// A late batch is held up by a part of its fetch (collate, a transform, its
// reading), or by its slowest sample, only where the part or the sample took
// this share of its head-of-line time or more (one in kHeldByShare).
constexpr uint64_t kHeldByShare = 4;

// How far back a wait without a flow looks for the fetch that made its batch.
constexpr size_t kFallbackScan = 64;

}  // namespace

uint64_t WaitCauses::Busy::Before(uint64_t t) const {
  if (!open || t <= start) return closed_ns;
  return closed_ns + std::min(t, end) - start;
}

namespace {

// The CPUs the group's processes may use (their headers' affinity counts;
// 0 where none says).
uint64_t GroupCpus(const std::vector<ProcessTrace>& processes) {
  uint64_t cpus = 0;
  for (const ProcessTrace& p : processes) {
    cpus = std::max<uint64_t>(cpus, std::strtoull(p.info.cpus.c_str(), nullptr, 10));
  }
  return cpus;
}

}  // namespace

WaitCauses::WaitCauses(const std::vector<ProcessTrace>& processes, FetchParts* fetches)
    : processes_(processes),
      fetch_parts_(fetches),
      handovers_(processes, GroupCpus(processes)),
      paths_(processes),
      busy_(processes.size()),
      pinned_(processes.size()),
      faults_(processes.size()),
      last_fetch_(processes.size(), UINT64_MAX),
      fetch_pass_(processes.size(), UINT64_MAX),
      pass_first_(processes.size(), 0),
      by_flow_(processes.size(), false) {}

WaitCauses::Fetch* WaitCauses::FetchAt(uint64_t seq) {
  if (seq < first_seq_ || seq - first_seq_ >= fetches_.size()) return nullptr;
  return &fetches_[seq - first_seq_];
}

bool WaitCauses::IsBatchFlow(const StreamEvent& e) {
  auto [it, added] = batch_flows_.try_emplace(ProcessStringKey(e.process, e.event->file), false);
  if (added) {
    const auto& strings = processes_[e.process].strings;
    auto s = strings.find(e.event->file);
    it->second = s != strings.end() && s->second == kBatchFlow;
  }
  return it->second;
}

bool WaitCauses::AddIo(const StreamEvent& e, bool write, bool map) {
  // Code and system files by path; what is left is read (the data set) or
  // only opened and looked up (its metadata). Writes are the job's outputs.
  if (write || e.process >= busy_.size() || !paths_.IsJobFile(e)) return false;
  if (map) return true;
  busy_[e.process].Add(e.event->start_ns, e.event->start_ns + e.event->dur_ns);
  group_.Add(e.event->start_ns, e.event->start_ns + e.event->dur_ns);
  return true;
}

bool WaitCauses::AddFault(const StreamEvent& e) {
  if (e.process >= busy_.size() || !paths_.IsJobFile(e)) return false;
  const uint64_t start = e.event->start_ns, end = start + e.event->dur_ns;
  busy_[e.process].Add(start, end);
  group_.Add(start, end);
  faults_[e.process].Add(start, end);
  return true;
}

void WaitCauses::AddFetch(uint32_t process, uint64_t start, uint64_t end) {
  if (process >= busy_.size()) return;
  if (last_fetch_[process] == UINT64_MAX &&
      std::find(fetchers_.begin(), fetchers_.end(), process) == fetchers_.end()) {
    fetchers_.push_back(process);
  }
  Fetch f;
  f.process = process;
  f.start = start;
  f.end = end;
  f.io_start = busy_[process].Before(start);
  f.faults_start = faults_[process].Before(start);
  if (fetch_pass_[process] != pass_) {
    fetch_pass_[process] = pass_;
    pass_first_[process] = start;
  }
  f.pass_first = pass_first_[process];
  const uint64_t seq = first_seq_ + fetches_.size();
  fetches_.push_back(f);
  last_fetch_[process] = seq;
  ends_pending_.push_back(seq);
  // Leftovers (batches fetched and never waited for) go first.
  while (fetches_.size() > kKeptFetches) {
    const Fetch& old = fetches_.front();
    if (old.has_flow) {
      auto it = flows_.find(old.flow);
      if (it != flows_.end() && it->second == first_seq_) flows_.erase(it);
    }
    fetches_.pop_front();
    ++first_seq_;
  }
}

void WaitCauses::AddPin(uint32_t process, uint64_t start, uint64_t end) {
  if (process < pinned_.size()) pinned_[process].Add(start, end);
}

void WaitCauses::AddFlow(const StreamEvent& e, bool finish) {
  if (e.process >= busy_.size() || !IsBatchFlow(e)) return;
  const uint64_t at = e.event->start_ns, id = e.event->aux;
  if (!finish) {
    // It ends the worker's fetch: the latest fetch of its process holds it.
    Fetch* f = FetchAt(last_fetch_[e.process]);
    if (f == nullptr || at < f->start || at > f->end) return;
    f->has_flow = true;
    f->flow = id;
    flows_[id] = last_fetch_[e.process];
    return;
  }
  // Its batches come by flow: a wait of it without one received no batch
  // (SettleWait), the flow's fetch kept or not.
  by_flow_[e.process] = true;
  auto it = flows_.find(id);
  if (it == flows_.end()) return;
  // The wait of that process that holds the finish (the latest one).
  for (auto w = waits_.rbegin(); w != waits_.rend(); ++w) {
    if (w->process == e.process && w->start <= at && at <= w->end) {
      w->fetch = it->second;
      flows_.erase(it);
      return;
    }
  }
}

void WaitCauses::AddWait(uint32_t process, int32_t tid, size_t step, uint64_t start, uint64_t end,
                         bool iter) {
  if (process >= busy_.size()) return;
  Wait w;
  w.process = process;
  w.tid = tid;
  w.step = step;
  w.start = start;
  w.end = end;
  w.iter = iter;
  w.io_at_start.emplace_back(process, busy_[process].Before(start));
  w.faults_at_start.push_back(faults_[process].Before(start));
  w.group_io_at_start = group_.Before(start);
  w.pinned_at_start = pinned_[process].Before(start);
  for (uint32_t p : fetchers_) {
    if (p != process) {
      w.io_at_start.emplace_back(p, busy_[p].Before(start));
      w.faults_at_start.push_back(faults_[p].Before(start));
    }
  }
  waits_.push_back(std::move(w));
}

void WaitCauses::ExtendWait(size_t step, uint64_t end) {
  for (Wait& w : waits_) {
    if (w.step == step) w.end = std::max(w.end, end);
  }
}

void WaitCauses::Settle(uint64_t now) {
  // Every event that starts before `now` is in: the data I/O before a point
  // passed is final.
  for (size_t i = 0; i < ends_pending_.size();) {
    Fetch* f = FetchAt(ends_pending_[i]);
    if (f != nullptr && f->end >= now) {
      ++i;
      continue;
    }
    if (f != nullptr) {
      f->io_end = busy_[f->process].Before(f->end);
      f->faults_end = faults_[f->process].Before(f->end);
      f->end_known = true;
    }
    ends_pending_[i] = ends_pending_.back();
    ends_pending_.pop_back();
  }
  for (size_t i = 0; i < waits_.size();) {
    if (waits_[i].end >= now) {
      ++i;
      continue;
    }
    SettleWait(waits_[i]);
    waits_[i] = std::move(waits_.back());
    waits_.pop_back();
  }
  // Fetches matched and settled at the front are done with.
  while (!fetches_.empty() && fetches_.front().used && fetches_.front().end_known) {
    fetches_.pop_front();
    ++first_seq_;
  }
}

WaitCauses::Fetch* WaitCauses::OwnFetch(const Wait& w) {
  const size_t from = fetches_.size() > kFallbackScan ? fetches_.size() - kFallbackScan : 0;
  for (size_t i = fetches_.size(); i-- > from;) {
    Fetch& f = fetches_[i];
    if (f.process == w.process && f.start >= w.start && f.start < w.end) return &f;
  }
  return nullptr;
}

WaitCauses::Fetch* WaitCauses::OtherFetch(const Wait& w) {
  Fetch* other = nullptr;
  const size_t from = fetches_.size() > kFallbackScan ? fetches_.size() - kFallbackScan : 0;
  for (size_t i = fetches_.size(); i-- > from;) {
    Fetch& f = fetches_[i];
    if (f.process != w.process && !f.used && f.end <= w.end &&
        (other == nullptr || f.end > other->end)) {
      other = &f;
    }
  }
  return other;
}

uint64_t WaitCauses::LeftoverFetching(const Wait& w) const {
  uint64_t until = w.start;
  for (const Fetch& f : fetches_) {
    if (f.process != w.process && f.start < w.start) until = std::max(until, f.end);
  }
  return std::min(until, w.end) - w.start;
}

void WaitCauses::SettleWait(const Wait& w) {
  if (splits_.size() <= w.step) splits_.resize(w.step + 1);
  WaitSplit& out = splits_[w.step];
  const uint64_t wait = w.end - w.start;
  // w.end has passed: the waiting process's data I/O in the wait is final.
  const Busy& own = busy_[w.process];
  const uint64_t own_io = own.Before(w.end) - std::min(own.Before(w.end), w.io_at_start[0].second);
  if (w.iter) {
    // iter(loader): its own reading (an iterable dataset opening its
    // shards), the workers still finishing the batches of a pass left
    // early (persistent ones: torch waits for them before it resumes
    // them; they were "start-up", and the advice lighter imports), the
    // rest the workers' start-up, or, where the loader turns out to have
    // none (Finish), preprocessing.
    const uint64_t io = std::min(wait, own_io);
    const uint64_t leftover = std::min(wait - io, LeftoverFetching(w));
    out = Parts(io, leftover, 0, wait - io - leftover);
    out.leftover_ns = leftover;
    iter_steps_.push_back(w.step);
    return;
  }
  // The fetch that made the batch: by flow, else one of the waiting process
  // inside the wait; else the waiting process's own reads make it its own
  // work (num_workers=0), else the latest unmatched fetch of a worker --
  // but for a process whose batches come by flow: its wait without one
  // received none (the pass's end, its workers shut down; a next() that
  // raised), and a batch prefetched and never taken was no batch of its
  // (its slow sample, 300 ms in the shut-down after a break, was named
  // as a late batch's, 868 ms of head-of-line time where next() took 100).
  Fetch* f = FetchAt(w.fetch);
  if (f == nullptr) f = OwnFetch(w);
  if (f == nullptr && own_io == 0 && !by_flow_[w.process]) f = OtherFetch(w);
  if (f == nullptr) {
    const bool workers = std::any_of(fetchers_.begin(), fetchers_.end(),
                                     [&](uint32_t p) { return p != w.process; });
    if (workers && own_io == 0) {
      out = Parts(0, 0, wait, 0);  // workers make the batches, and none made this one
      out.leftover_ns = LeftoverFetching(w);
      return;
    }
    // Its own work (beside workers), or a loader that records no fetches:
    // the group's data I/O in the wait, then its pinning of the batch.
    const uint64_t io = std::min(
        wait, workers ? own_io
                      : group_.Before(w.end) - std::min(group_.Before(w.end), w.group_io_at_start));
    const Busy& pins = pinned_[w.process];
    const uint64_t pinned =
        std::min(wait - io, pins.Before(w.end) - std::min(pins.Before(w.end), w.pinned_at_start));
    out = Parts(io, wait - io - pinned, pinned, 0);
    const Busy& faults = faults_[w.process];
    out.reading_faults_ns =
        std::min(io, faults.Before(w.end) - std::min(faults.Before(w.end), w.faults_at_start[0]));
    return;
  }
  f->used = true;
  if (f->process != w.process) {
    out.made_ns = f->end;
    out.fetch_start_ns = f->start;
    out.maker = f->process;
    Received(w, *f, &out);
  }
  // Until the batch is made, the wait is the producer's: reading where it
  // was in data I/O for the batch (from the fetch's start), worker start-up
  // before another process's first fetch of the pass began, the rest
  // preprocessing (the worker busy with earlier batches, or the batch's
  // index on its way).
  const uint64_t lo = std::max(w.start, f->start), hi = std::min(w.end, f->end);
  if (hi <= w.start) {
    out.handover_ns = wait;  // made before it was asked for (Received split it)
    HeldByFaults(w, *f, &out);
    return;
  }
  const uint64_t startup = f->process != w.process && f->pass_first > w.start
                               ? std::min(f->pass_first, hi) - w.start
                               : 0;
  out.worker_startup_ns = startup;
  out.handover_ns = wait - (hi - w.start);
  if (hi <= lo) {
    out.preprocessing_ns = hi - w.start - startup;
    HeldByFaults(w, *f, &out);
    return;
  }
  const Busy& busy = busy_[f->process];
  // The producer's data I/O before lo: the fetch's start, or the wait's
  // (taken when it began); before hi: the fetch's end (settled before the
  // wait's), or the wait's end.
  uint64_t io_lo = busy.Before(lo);
  if (f->start >= w.start) {
    io_lo = f->io_start;
  } else {
    for (const auto& [p, at] : w.io_at_start) {
      if (p == f->process) io_lo = at;
    }
  }
  const uint64_t io_hi = f->end <= w.end && f->end_known ? f->io_end : busy.Before(hi);
  const uint64_t reading = std::min(io_hi - std::min(io_hi, io_lo), hi - lo);
  out.reading_ns = reading;
  out.preprocessing_ns = hi - w.start - reading - startup;
  // Of it, the producer's faults on mapped data files (measured as its I/O).
  const Busy& faults = faults_[f->process];
  const uint64_t at_wait = FaultsAtStart(w, f->process);
  const uint64_t faults_lo = f->start >= w.start ? f->faults_start : at_wait;
  const uint64_t faults_hi = f->end <= w.end && f->end_known ? f->faults_end : faults.Before(hi);
  out.reading_faults_ns = std::min(reading, faults_hi - std::min(faults_hi, faults_lo));
  HeldByFaults(w, *f, &out);
}

void WaitCauses::HeldByFaults(const Wait& w, const Fetch& f, WaitSplit* out) const {
  // The batch made, its worker's faults while it waited to be sent are
  // reading (wait_causes.h): from the later of the batch's end and the
  // wait's start to the wait's end.
  if (f.process == w.process || f.end >= w.end || out->handover_ns == 0 || !f.end_known) return;
  const uint64_t from = f.end >= w.start ? f.faults_end : FaultsAtStart(w, f.process);
  const uint64_t to = faults_[f.process].Before(w.end);
  uint64_t held = std::min(out->handover_ns, to - std::min(to, from));
  // Faults a third of the hand-over or more: the worker was reading through
  // its map while the batch waited, its main thread holding the lock through
  // the faults and the work between them: all of the hand-over.
  if (held * kHeldByFaults >= out->handover_ns) held = out->handover_ns;
  out->handover_ns -= held;
  // Out of the hand-over's parts (handover.h): the batch waited in its worker.
  uint64_t left = held;
  for (uint64_t* part : {&out->handover.in_worker_ns, &out->handover.in_transit_ns,
                         &out->handover.rebuild_ns}) {
    const uint64_t cut = std::min(*part, left);
    *part -= cut;
    left -= cut;
  }
  out->reading_ns += held;
  out->reading_faults_ns += held;
  out->handover_faults_ns = held;
}

uint64_t WaitCauses::FaultsAtStart(const Wait& w, uint32_t process) const {
  for (size_t i = 0; i < w.io_at_start.size(); ++i) {
    if (w.io_at_start[i].first == process) return w.faults_at_start[i];
  }
  return faults_[process].Before(w.start);
}

void WaitCauses::Received(const Wait& w, const Fetch& f, WaitSplit* out) {
  const uint64_t made = std::min(w.end, f.end);
  if (f.has_flow) {
    // A batch's flow id is its iterator's tag (upper 40 bits) and its send
    // index (the low 24): python/dlprof/_torch.py.
    constexpr uint64_t kIndexBits = 0xFFFFFF;
    uint64_t later_made = UINT64_MAX;
    for (const Fetch& g : fetches_) {
      if (g.has_flow && (g.flow & ~kIndexBits) == (f.flow & ~kIndexBits) &&
          (g.flow & kIndexBits) > (f.flow & kIndexBits) && g.end < made) {
        later_made = std::min(later_made, g.end);
      }
    }
    const uint64_t from = std::max(w.start, later_made);
    if (later_made != UINT64_MAX && made > from) out->head_of_line_ns = made - from;
  }
  FetchRecord r;
  const bool recorded = fetch_parts_ != nullptr && fetch_parts_->Take(f.process, f.start, &r);
  // The hand-over: from the batch made (or the wait's start) to the wait's end.
  const uint64_t from = std::max(w.start, f.end);
  if (from < w.end) {
    std::vector<Handovers::Fetching> fetching;
    for (const Fetch& g : fetches_) {
      if (g.process != w.process && g.start < w.end && g.end > from) {
        fetching.push_back({g.process, g.start, g.end});
      }
    }
    out->handover = handovers_.Split(from, w.end, f.process, f.has_flow, f.flow, w.process, w.tid,
                                     recorded ? r.batch_bytes : 0, fetching);
  }
  if (!recorded) return;
  for (const auto& [part, ns] : r.parts) {
    if (part >= part_ns_.size()) part_ns_.resize(part + 1);
    part_ns_[part] += ns;
  }
  if (out->head_of_line_ns == 0) return;
  LateBatch late;
  late.head_of_line_ns = out->head_of_line_ns;
  late.slowest = {r.slowest.index, r.slowest.ns, r.slowest.pass, r.slowest.pid, r.slowest.files, 0};
  HeldBy(r, &late);
  // A slowest sample under the share a part must explain did not hold the
  // batch up either: its worker did, off its CPU or on another batch (a
  // collate batch's 1.2 ms sample was named for 47.7 ms of head-of-line
  // time, its worker off its CPU for 41.7 ms after the collate).
  if (late.held_by.empty() && late.slowest.ns * kHeldByShare < late.head_of_line_ns) {
    late.slowest = {};
  }
  auto least = [](const LateBatch& a, const LateBatch& b) {
    return a.head_of_line_ns > b.head_of_line_ns;
  };
  late_.push_back(std::move(late));
  std::push_heap(late_.begin(), late_.end(), least);
  if (late_.size() > kKeptLateBatches) {
    std::pop_heap(late_.begin(), late_.end(), least);
    late_.pop_back();
  }
}

void WaitCauses::HeldBy(const FetchRecord& r, LateBatch* late) const {
  const uint64_t fetch_ns = r.end > r.start ? r.end - r.start : 0;
  if (2 * r.slowest.ns >= fetch_ns) return;  // one sample was most of it
  // The fetch's largest part, its reading one of them: taken out of the
  // samples' code, the reads of an I/O-bound batch leave the dataset's part
  // about 0, and a 3 ms collate_fn was named for batches 700 ms late.
  const std::vector<std::string>& names = fetch_parts_->part_names();
  std::string largest = "reading";
  uint64_t largest_ns = r.reading_ns;
  for (const auto& [part, ns] : r.parts) {
    if (ns <= largest_ns) continue;
    largest_ns = ns;
    // The samples' own code: the samples together held it up, and the
    // slowest of them stays the batch's name.
    largest = part == FetchParts::kDatasetPart || part >= names.size() ? "" : names[part];
  }
  // A part named must explain a good share of the time the batch held the
  // loop up; a smaller one did not hold it (the slowest sample names it).
  if (largest.empty() || largest_ns * kHeldByShare < late->head_of_line_ns) return;
  late->held_by = largest;
  late->held_by_ns = largest_ns;
}

std::vector<LateBatch> WaitCauses::late_batches() const {
  std::vector<LateBatch> out = late_;
  std::sort(out.begin(), out.end(), [](const LateBatch& a, const LateBatch& b) {
    return a.head_of_line_ns > b.head_of_line_ns;
  });
  return out;
}

std::vector<WaitSplit> WaitCauses::Finish() {
  Settle(UINT64_MAX);
  if (fetchers_.empty()) {
    for (size_t step : iter_steps_) {
      WaitSplit& s = splits_[step];
      s.preprocessing_ns += s.worker_startup_ns;
      s.worker_startup_ns = 0;
    }
  }
  return std::move(splits_);
}

}  // namespace dlprof::analysis
