// RankMeter (rank_meter.h): one rank group's figures in one pass.
#include "lib/analysis/meters/rank_meter.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "dlprof/catalogue.h"
#include "lib/analysis/summary/intervals.h"
#include "lib/format/event_rules.h"
#include "lib/read/regions.h"

namespace dlprof::analysis {
using namespace dlprof::read;
namespace {

// Appends [start, end) to a list in order of start, joining a touching or
// overlapping last interval.
void Append(IntervalList* list, uint64_t start, uint64_t end) {
  if (end <= start) return;
  if (!list->empty() && start <= list->back().second) {
    list->back().second = std::max(list->back().second, end);
  } else {
    list->emplace_back(start, end);
  }
}

}  // namespace

bool RankMeter::Union::Add(uint64_t start, uint64_t end, Interval* closed) {
  if (open && start <= current.end) {
    current.end = std::max(current.end, end);
    return false;
  }
  const bool had = open;
  if (had) {
    closed_ns += current.end - current.start;
    *closed = current;
  }
  open = true;
  current = {start, end};
  return had;
}

RankMeter::RankMeter(const std::vector<ProcessTrace>& processes, int32_t rank, std::string host,
                     std::string batch_region)
    : processes_(processes),
      batch_region_(std::move(batch_region)),
      activity_(processes.size()),
      fetching_until_(processes.size(), 0),
      fetch_parts_(processes),
      causes_(processes, &fetch_parts_),
      loader_passes_(processes),
      checkpoints_(processes),
      kept_(processes) {
  figures_.rank = rank;
  figures_.host = std::move(host);
  figures_.processes = processes.size();
  // Each process's loop, in a rank too: a rank restarted (torchrun's
  // elastic restarts) loops in a process each attempt (TakeProcessLoops).
  process_loops_ = std::make_unique<ProcessLoops>(processes);
}

void RankMeter::Add(const StreamEvent& e, bool counted) {
  const Event& ev = *e.event;
  kept_.See(e.process, ev.start_ns, ev.start_ns + ev.dur_ns);  // on disk, counted or not
  if (!counted) return;
  loader_passes_.SeeProcess(e.process, ev.start_ns);
  if (timeline_base_ns_ == UINT64_MAX) timeline_base_ns_ = ev.start_ns;
  if (!any_counted_) figures_.first_ns = ev.start_ns;
  any_counted_ = true;
  if (process_loops_) process_loops_->SeeEvent(e.process, ev.start_ns);
  Advance(ev.start_ns);
  const EventKindInfo* k = LookupKind(ev.kind);
  if (k == nullptr) return;
  if (RulesFor(ev.kind).gpu_work) {
    if (e.process < activity_.size()) ++activity_[e.process].gpu_records;
    AddGpu(e);
  } else if (k->op_class == OpClass::Region) {
    Activity* did = e.process < activity_.size() ? &activity_[e.process] : nullptr;
    switch (LoopRegionOf(e)) {
      case LoopRegion::kBatchWait:
        if (did) ++did->batch_waits;
        loop_threads_.insert(ThreadKey(e.process, e.tid));
        checkpoints_.AddLoopStep(ThreadKey(e.process, e.tid), ev.start_ns);
        AddBatchWait(e, StepRequest::kBatch);
        break;
      case LoopRegion::kOptimizerStep:
        if (did) ++did->optimizer_steps;
        loop_threads_.insert(ThreadKey(e.process, e.tid));
        checkpoints_.AddLoopStep(ThreadKey(e.process, e.tid), ev.start_ns);
        AddOptimizerStep(e);
        break;
      case LoopRegion::kSave:
        checkpoints_.AddSave(e);
        break;
      case LoopRegion::kRestore:
        checkpoints_.AddRestore(e);
        break;
      case LoopRegion::kFetch:
        if (did) ++did->batch_fetches;
        if (e.process < fetching_until_.size()) {
          fetching_until_[e.process] =
              std::max(fetching_until_[e.process], ev.start_ns + ev.dur_ns);
        }
        causes_.AddFetch(e.process, ev.start_ns, ev.start_ns + ev.dur_ns);
        fetch_parts_.AddFetch(e);
        break;
      case LoopRegion::kSample:
      case LoopRegion::kPreprocessPart:
        fetch_parts_.AddRegion(e, LoopRegionOf(e) == LoopRegion::kSample);
        break;
      case LoopRegion::kPin:
        causes_.AddPin(e.process, ev.start_ns, ev.start_ns + ev.dur_ns);
        break;
      case LoopRegion::kLoaderIter:
        // iter(loader): the loop waits while the loader starts (or
        // resumes) its workers, a batch wait of its own.
        ++passes_;
        causes_.AddPass();
        loader_passes_.AddPass(ev.start_ns);
        fetch_parts_.set_pass(passes_);
        AddBatchWait(e, StepRequest::kIter);
        break;
      case LoopRegion::kLoopStep:
        if (figures_.loop) loop_steps_end_ = std::max(loop_steps_end_, ev.start_ns + ev.dur_ns);
        if (process_loops_) process_loops_->AddStep(e.process, ev.start_ns + ev.dur_ns, false);
        break;
      case LoopRegion::kOther: break;
    }
  } else if (CountsAsIo(ev)) {
    // A loader worker's fetch of the first batches may start before the
    // loop asks for one (a DataLoader's prefetch): loading, not start-up.
    const bool fetching =
        e.process < fetching_until_.size() && ev.start_ns < fetching_until_[e.process];
    AddIo(ev, !figures_.loop && !fetching);
    if (process_loops_ && !fetching) {
      process_loops_->AddIo(e.process, ev.dur_ns,
                            k->op_class == OpClass::Read ? BytesMoved(ev) : 0, false);
    }
    // Writes and syncs are the job's outputs (a checkpoint's fsync), not its
    // reading, and so are opens for output (the next save's open truncating
    // the last: 5-7 ms for 24 MiB, counted as a step loop's batch wait) and
    // a checkpoint's other calls (a save's open and close, a load's reads:
    // in a loop without a DataLoader they fell between two steps, and were
    // counted as the batch wait as well as the save); so is a copy into a
    // traced file from an untraced one or a saved checkpoint (copied to
    // model_best.pth.tar: 6 ms a save counted as reading; IsCheckpointCall).
    const bool output = k->op_class == OpClass::Write || k->op_class == OpClass::Sync ||
                        OpensForOutput(ev) || checkpoints_.IsCheckpointCall(e, k->op_class);
    checkpoints_.AddIo(e, k->op_class, BytesMoved(ev));
    // A data file's map made or torn down is no reading: the kernel's work
    // on the process's page tables (nanoGPT's get_batch maps its token file
    // anew each step: 399 munmaps of the previous map, 300.7 ms of "reading"
    // while 96 KiB came from storage). Left in the fetch's part, and the
    // step loop's wait counts it apart (StepLoop::Step::map_ns).
    const bool map = k->op_class == OpClass::Mmap;
    if (causes_.AddIo(e, output, map)) {
      if (!map) fetch_parts_.AddDataIo(e);
      const bool made = ev.kind != static_cast<uint16_t>(EventKind::Munmap);
      const bool moved = ev.kind == static_cast<uint16_t>(EventKind::Mremap);
      if (map && ev.err == 0 && !moved) {
        step_loop_.AddDataMap(e.process, made ? ev.start_ns + ev.dur_ns : ev.start_ns, made);
      }
      using MapCall = StepLoop::MapCall;
      MapCall map_call = MapCall::kNone;
      if (map) {
        map_call = ev.err != 0 || moved ? MapCall::kOther
                   : made               ? MapCall::kMade
                                        : MapCall::kTornDown;
      }
      // Measured against the GPU once the stream has passed it, for a loop
      // without a DataLoader (step_loop.h).
      data_io_pending_.push_back({ThreadKey(e.process, e.tid), ev.start_ns,
                                  ev.start_ns + ev.dur_ns, BytesMoved(ev), false, map_call});
    }
  } else if (RulesFor(ev.kind).map_read) {
    const bool fetching =
        e.process < fetching_until_.size() && ev.start_ns < fetching_until_[e.process];
    AddMapRead(e, !figures_.loop && !fetching);
    if (process_loops_ && !fetching) {
      process_loops_->AddIo(e.process, ev.dur_ns, BytesMoved(ev), true);
    }
  } else if (k->op_class == OpClass::FlowStart || k->op_class == OpClass::FlowFinish) {
    causes_.AddFlow(e, k->op_class == OpClass::FlowFinish);
  } else if (k->op_class == OpClass::Mark) {
    NoteLoaderMark(e);
  } else if (k->op_class == OpClass::Counter) {
    fetch_parts_.AddCounter(e);
    causes_.AddCounter(e);
  }
}

void RankMeter::NoteLoaderMark(const StreamEvent& e) {
  const auto& strings = processes_[e.process].strings;
  auto s = strings.find(e.event->file);
  if (s == strings.end()) return;
  // "loader L site=FILE:LINE" (the bootstrap's, each pass): where the
  // process's loader L was made; the rank's first word on an L stands.
  unsigned site_of = 0;
  int at = 0;
  if (std::sscanf(s->second.c_str(), "loader %u site=%n", &site_of, &at) == 1 && at > 0) {
    loader_sites_.emplace(site_of, s->second.substr(at));
    return;
  }
  if (pending_waits_.empty()) return;
  // "batch loader=L", "end loader=L", "epoch loader=L ...": the loader the
  // latest wait of the process it falls in was for.
  const size_t named = s->second.find(" loader=");
  if (named != std::string::npos) {
    const PendingWait* in = nullptr;
    for (const PendingWait& w : pending_waits_) {
      if (w.process == e.process && batch_waits_[w.step].first <= e.event->start_ns &&
          (in == nullptr || batch_waits_[w.step].first > batch_waits_[in->step].first)) {
        in = &w;
      }
    }
    if (in != nullptr) step_loaders_[in->step] = std::atoll(s->second.c_str() + named + 8);
    if (in != nullptr && IsRegionNamed(s->second, "shutdown")) {
      step_shutdowns_[in->step] = 1;
      return;
    }
  }
  // The request that found a pass over ("end loader=L", the bootstrap's or
  // annotate_loader's) inside its batch region, or that raised ("raised
  // loader=L"): no batch. (A raised one's time stays the wait's; it is no
  // pass's end, whose shut-down it would be.)
  const bool ended = IsRegionNamed(s->second, kPassEndMark);
  if (ended || IsRegionNamed(s->second, kRaisedMark)) {
    for (const PendingWait& w : pending_waits_) {
      if (w.process == e.process && batch_waits_[w.step].first <= e.event->start_ns &&
          figures_.steps[w.step].request == StepRequest::kBatch) {
        figures_.steps[w.step].request = ended ? StepRequest::kEnd : StepRequest::kRaised;
      }
    }
    return;
  }
  // The bootstrap's "epoch loader=L pass=N" inside each loader_iter: N > 0,
  // a loader's later pass, whose start-up persistent workers would save --
  // unless they are persistent already (" persistent=1": the pass resumed
  // the same workers, and no advice can save what it took).
  unsigned loader = 0, pass = 0;
  if (std::sscanf(s->second.c_str(), "epoch loader=%u pass=%u", &loader, &pass) != 2) return;
  const bool persistent = s->second.find(" persistent=1") != std::string::npos;
  loader_passes_.MarkPass(loader, pass);
  if (pass_marks_.size() <= passes_) pass_marks_.resize(passes_ + 1);
  // Made anew: a first pass of an L whose DataLoader before ran that one
  // pass alone (one made anew each epoch); one that ran several (a k-fold's
  // loader a fold) saved its later passes' start-ups, and is no rebuild.
  auto [last, first_seen] =
      last_pass_of_loader_.try_emplace((static_cast<uint64_t>(e.process) << 32) | loader, pass);
  const bool after_one_pass = !first_seen && last->second == 0;
  last->second = pass;
  const bool first_again = pass == 0 && after_one_pass;
  pass_marks_[passes_] = {true, pass > 0, persistent, persistent && first_again,
                          !persistent && first_again, last->first};
  marked_passes_ = true;
}

LoopRegion RankMeter::LoopRegionOf(const StreamEvent& e) {
  auto [it, added] =
      loop_names_.try_emplace(ProcessStringKey(e.process, e.event->file), LoopRegion::kOther);
  if (added) {
    it->second = LoopRegionNamed(RegionName(*e.event, processes_[e.process]), batch_region_);
  }
  return it->second;
}

void RankMeter::AddOptimizerStep(const StreamEvent& e) {
  const Event& ev = *e.event;
  // Where no batch is waited for, the steps are the loop (step_loop.h): the
  // GPU's busy time and the I/O so far at the first steps tell what came
  // before it.
  if (!figures_.loop) {
    if (step_busy_.size() < StepLoop::kFirstPeriodMarks) {
      step_busy_.push_back(BusyBefore(ev.start_ns));
    }
    if (!step_loop_.any_step()) {
      steps_startup_ = {figures_.startup_io_ns, figures_.startup_io_ops,
                        figures_.startup_read_bytes, figures_.startup_map_ns,
                        figures_.startup_map_bytes};
    }
  }
  step_loop_.AddStep(ThreadKey(e.process, e.tid), ev.start_ns, ev.start_ns + ev.dur_ns);
  if (process_loops_) process_loops_->AddStep(e.process, ev.start_ns + ev.dur_ns, true);
  // Events come by start: a step before the first batch wait is start-up's.
  if (!figures_.loop) return;
  ++figures_.optimizer_steps;
  loop_steps_end_ = std::max(loop_steps_end_, ev.start_ns + ev.dur_ns);
}

uint64_t RankMeter::BusyBefore(uint64_t t) const {
  // Every GPU interval that starts before t has come (events come by start).
  return busy_.closed_ns +
         (busy_.open ? std::min(busy_.current.end, t) - std::min(busy_.current.start, t) : 0);
}

bool RankMeter::IsCommunication(const StreamEvent& e) {
  auto [it, added] = comm_names_.try_emplace(ProcessStringKey(e.process, e.event->file), false);
  if (added) {
    const auto& strings = processes_[e.process].strings;
    auto s = strings.find(e.event->file);
    it->second = s != strings.end() && IsCommunicationKernel(s->second);
  }
  return it->second;
}

void RankMeter::AddGpu(const StreamEvent& e) {
  const Event& ev = *e.event;
  const uint64_t start = ev.start_ns, end = ev.start_ns + ev.dur_ns;
  if (!gpu_seen_) {
    gpu_seen_ = true;
    figures_.gpu = true;
    figures_.gpu_first_ns = start;
  }
  figures_.gpu_last_ns = std::max(figures_.gpu_last_ns, end);
  if (std::find(figures_.devices.begin(), figures_.devices.end(), ev.fd) ==
      figures_.devices.end()) {
    figures_.devices.push_back(ev.fd);
  }
  Interval closed;
  if (busy_.Add(start, end, &closed)) {
    SpreadOverSeconds(timeline_base_ns_, closed.start, closed.end, &figures_.gpu_busy_per_second);
    busy_closed_.push_back(closed);
    if (busy_closed_.size() > forget_at_) Forget();
  }
  const OpClass c = LookupKind(ev.kind)->op_class;
  if (c == OpClass::Kernel) {
    compute_or_comm_.Add(start, end, &closed);
    if (IsCommunication(e) && comm_.Add(start, end, &closed)) {
      Append(&figures_.communication, closed.start, closed.end);
    }
  }
}

void RankMeter::AddIo(const Event& e, bool startup) {
  ++figures_.io_ops;
  figures_.io_ns += e.dur_ns;
  const EventKindInfo* k = LookupKind(e.kind);
  if (startup) {
    ++figures_.startup_io_ops;
    figures_.startup_io_ns += e.dur_ns;
    if (k->op_class == OpClass::Read) figures_.startup_read_bytes += BytesMoved(e);
  }
  if (k->op_class == OpClass::Read) {
    figures_.read_bytes += BytesMoved(e);
    AddAtSecond(timeline_base_ns_, e.start_ns, BytesMoved(e), &figures_.read_per_second);
  }
  const uint64_t end = e.start_ns + e.dur_ns;
  if (io_open_) {
    io_.end = std::max(io_.end, end);  // Advance closed it unless it reaches this start
  } else {
    io_open_ = true;
    io_ = {e.start_ns, end};
  }
}

void RankMeter::AddMapRead(const StreamEvent& e, bool startup) {
  const Event& ev = *e.event;
  const uint64_t end = ev.start_ns + ev.dur_ns;
  checkpoints_.AddMapRead(e);
  if (startup) {
    figures_.startup_io_ns += ev.dur_ns;
    figures_.startup_map_ns += ev.dur_ns;
    figures_.startup_read_bytes += BytesMoved(ev);
    figures_.startup_map_bytes += BytesMoved(ev);
  }
  if (io_open_) {
    io_.end = std::max(io_.end, end);  // the data stall's union of I/O (AddIo)
  } else {
    io_open_ = true;
    io_ = {ev.start_ns, end};
  }
  // On a data file: reading, for the batch wait's split, inside a worker's
  // fetch (taken off the part it fell in; the sample's file) as a read
  // call is, and, in a loop without a DataLoader, the stepping thread's
  // batch wait.
  if (causes_.AddFault(e)) {
    fetch_parts_.AddDataIo(e);
    data_io_pending_.push_back(
        {ThreadKey(e.process, e.tid), ev.start_ns, end, BytesMoved(ev), true});
  }
}

void RankMeter::AddBatchWait(const StreamEvent& e, StepRequest request) {
  const uint64_t start = e.event->start_ns, end = start + e.event->dur_ns;
  // A wait inside one of the same process still open (nested regions of the
  // name, or an NVTX range and an annotation around one fetch) is part of it.
  for (PendingWait& w : pending_waits_) {
    if (w.process == e.process && start < w.end) {
      w.end = std::max(w.end, end);
      batch_waits_[w.step].second = w.end;
      if (process_loops_) process_loops_->AddWait(e.process, start, end);
      causes_.ExtendWait(w.step, w.end);
      return;
    }
  }
  if (!figures_.loop) {
    figures_.loop = true;
    figures_.loop_start_ns = start;
    figures_.gpu_busy_before_loop_ns = BusyBefore(start);
  }
  figures_.loop_end_ns = std::max(figures_.loop_end_ns, end);
  if (process_loops_) process_loops_->AddWait(e.process, start, end);
  RankStep step;
  step.step = figures_.steps.size() + 1;
  step.request = request;
  step.start_ns = start;
  step.pass = passes_;
  causes_.AddWait(e.process, e.tid, figures_.steps.size(), start, end,
                  request == StepRequest::kIter);
  pending_waits_.push_back({e.process, figures_.steps.size(), end});
  figures_.steps.push_back(step);
  step_loaders_.push_back(-1);
  step_shutdowns_.push_back(0);
  batch_waits_.emplace_back(start, end);
  step_covered_.push_back(0);
}

void RankMeter::Advance(uint64_t now) {
  if (io_open_ && io_.end <= now) CloseIo();
  fetch_parts_.Advance(now);  // before the waits settle: they take its records
  for (size_t i = 0; i < data_io_pending_.size();) {
    const PendingIo& io = data_io_pending_[i];
    if (io.end > now) {
      ++i;
      continue;
    }
    // The part inside the GPU's window (from its first record) with no
    // device busy.
    const uint64_t in_window =
        gpu_seen_ ? Overlap(io.start, io.end, figures_.gpu_first_ns, UINT64_MAX) : 0;
    const uint64_t covered = gpu_seen_ ? Covered(io.start, io.end, nullptr) : 0;
    step_loop_.AddDataIo(io.thread, io.start, io.end, io.bytes,
                         in_window - std::min(in_window, covered), io.fault, io.map);
    data_io_pending_[i] = data_io_pending_.back();
    data_io_pending_.pop_back();
  }
  causes_.Advance(now);
  for (size_t i = 0; i < pending_waits_.size();) {
    const PendingWait& w = pending_waits_[i];
    if (w.end > now) {
      ++i;
      continue;
    }
    const auto [s, e] = batch_waits_[w.step];
    step_covered_[w.step] = Covered(s, e, nullptr);
    pending_waits_[i] = pending_waits_.back();
    pending_waits_.pop_back();
  }
}

uint64_t RankMeter::Covered(uint64_t start, uint64_t end, IntervalList* idle) const {
  uint64_t covered = 0, at = start;
  auto visit = [&](const Interval& b) {
    if (b.end <= start || b.start >= end) return;
    covered += Overlap(b.start, b.end, start, end);
    if (idle != nullptr && b.start > at) Append(idle, at, b.start);
    at = std::max(at, b.end);
  };
  auto it = std::partition_point(busy_closed_.begin(), busy_closed_.end(),
                                 [start](const Interval& b) { return b.end <= start; });
  for (; it != busy_closed_.end() && it->start < end; ++it) visit(*it);
  if (busy_.open) visit(busy_.current);
  if (idle != nullptr && at < end) Append(idle, at, end);
  return covered;
}

void RankMeter::CloseIo() {
  io_open_ = false;
  // Before any GPU work there is no window: the interval lies before it.
  if (!gpu_seen_) return;
  const uint64_t start = std::max(io_.start, figures_.gpu_first_ns);
  if (start >= io_.end) return;
  // Pieces past the window's end so far are clipped in Finish, once the
  // last GPU end is known.
  Covered(start, io_.end, &stall_);
}

void RankMeter::Forget() {
  // Nothing still open starts before this: the I/O interval and the
  // pending batch waits are the only ones measured later.
  uint64_t keep_from = busy_.open ? busy_.current.start : UINT64_MAX;
  if (io_open_) keep_from = std::min(keep_from, io_.start);
  for (const PendingIo& io : data_io_pending_) keep_from = std::min(keep_from, io.start);
  for (const PendingWait& w : pending_waits_) {
    keep_from = std::min(keep_from, batch_waits_[w.step].first);
  }
  while (!busy_closed_.empty() && busy_closed_.front().end <= keep_from) busy_closed_.pop_front();
  forget_at_ = std::max<size_t>(64, 2 * busy_closed_.size());
}
}  // namespace dlprof::analysis
