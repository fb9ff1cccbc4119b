// CheckpointMeter (checkpoint_meter.h): saves and restores in one pass.
#include "lib/analysis/meters/checkpoint_meter.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "dlprof/catalogue.h"
#include "lib/format/event_rules.h"

namespace dlprof::analysis {
namespace {

// The length of the union of `intervals` (sorted here).
uint64_t UnionLength(IntervalList intervals) {
  std::sort(intervals.begin(), intervals.end());
  uint64_t length = 0, reached = 0;
  for (const auto& [start, end] : intervals) {
    const uint64_t from = std::max(start, reached);
    if (end > from) length += end - from;
    reached = std::max(reached, end);
  }
  return length;
}

}  // namespace

bool CheckpointMeter::InOpen(std::vector<Open>* open, uint32_t process, uint64_t at,
                             size_t* index) {
  open->erase(
      std::remove_if(open->begin(), open->end(), [at](const Open& o) { return o.end <= at; }),
      open->end());
  for (const Open& o : *open) {
    if (o.process == process) {
      *index = o.index;
      return true;
    }
  }
  return false;
}

void CheckpointMeter::AddSave(const StreamEvent& e) {
  const uint64_t start = e.event->start_ns, end = start + e.event->dur_ns;
  size_t outer;
  if (InOpen(&open_saves_, e.process, start, &outer)) {
    // One save calling another (dcp writing with torch.save): the outer one.
    saves_[outer].end = std::max(saves_[outer].end, end);
    return;
  }
  open_saves_.push_back({e.process, end, saves_.size()});
  saves_.push_back({e.process, ThreadKey(e.process, e.tid), start, end, 0, 0});
  saves_.back().steps_before = steps_seen_;
}

void CheckpointMeter::AddRestore(const StreamEvent& e) {
  const uint64_t start = e.event->start_ns, end = start + e.event->dur_ns;
  size_t outer;
  if (InOpen(&open_restores_, e.process, start, &outer)) return;
  open_restores_.push_back({e.process, end, restores_.size()});
  restores_.push_back({e.process, ThreadKey(e.process, e.tid), start, end, 0, 0});
}

void CheckpointMeter::AddIo(const StreamEvent& e, OpClass op, uint64_t bytes) {
  const Event& ev = *e.event;
  if (RulesFor(ev.kind).copy && ev.aux != 0) {
    // Each half on its own file (aux == file: the source was not traced,
    // a write alone); the call's time is the write's too, since it is the
    // destination's save that waits for it. The read is no reading of a
    // saved file back (a job making its data set): a checkpoint copied to
    // model_best stays a save.
    if (ev.aux != ev.file) AddIoOn(e, ev, OpClass::Read, bytes, /*reads_back=*/false);
    Event to = ev;
    to.file = static_cast<uint32_t>(ev.aux);
    to.offset = -1;
    AddIoOn(e, to, OpClass::Write, bytes);
    return;
  }
  AddIoOn(e, ev, op, bytes);
}

void CheckpointMeter::AddIoOn(const StreamEvent& call, const Event& ev, OpClass op,
                              uint64_t bytes, bool reads_back) {
  StreamEvent on = call;
  on.event = &ev;
  const StreamEvent& e = on;
  size_t at;
  switch (op) {
    case OpClass::Read:
      if (!open_restores_.empty() && InOpen(&open_restores_, e.process, ev.start_ns, &at)) {
        restores_[at].bytes += bytes;
      }
      // Read back (torch.load of the file just saved): its later closes
      // are the reader's, no longer the save's (SettlesSave).
      if (!saved_files_.empty()) {
        const uint64_t key = ProcessStringKey(e.process, ev.file);
        for (const auto& [file, index] : saved_files_) {
          if (file == key && ev.start_ns >= saves_[index].end) saves_[index].read_back = true;
        }
      }
      if (reads_back && !burst_paths_.empty()) ReadAfterBursts(e);
      return;
    case OpClass::Write: {
      if (!open_saves_.empty() && InOpen(&open_saves_, e.process, ev.start_ns, &at)) {
        saves_[at].bytes += bytes;
        saves_[at].write_ns += ev.dur_ns;
        const std::pair<uint64_t, size_t> written(ProcessStringKey(e.process, ev.file), at);
        if (std::find(saved_files_.begin(), saved_files_.end(), written) == saved_files_.end()) {
          NoteSavedFile(written.first, at);
        }
        return;
      }
      if (!paths_.IsJobFile(e)) return;
      const uint64_t key = ProcessStringKey(e.process, ev.file);
      auto last = bursts_.find(key);
      if (last != bursts_.end() && ev.start_ns > last->second.end + kBurstGapNs &&
          last->second.bytes < kMinBurstBytes) {
        EndBurst(key);
      }
      auto [it, added] = bursts_.try_emplace(key);
      Burst& b = it->second;
      if (added) {
        const uint64_t thread = ThreadKey(e.process, e.tid);
        b = {thread, BurstStart(key, thread, ev.start_ns), 0, 0, 0, true};
      }
      b.end = std::max(b.end, ev.start_ns + ev.dur_ns);
      b.bytes += bytes;
      b.write_ns += ev.dur_ns;
      return;
    }
    case OpClass::Open:
      if (OpensForOutput(ev) && paths_.IsJobFile(e)) {
        output_opens_[next_output_open_] = {ProcessStringKey(e.process, ev.file),
                                            ThreadKey(e.process, e.tid), ev.start_ns,
                                            ev.start_ns + ev.dur_ns};
        next_output_open_ = (next_output_open_ + 1) % kKeptOutputOpens;
      }
      return;
    case OpClass::Close:
    case OpClass::Sync:
      break;
    case OpClass::Meta:
      if (IsRename(ev.kind)) break;
      return;
    default:
      return;
  }
  // sync(): no file, every file's data; it settles what its thread saved.
  if (ev.file == 0 && op == OpClass::Sync) {
    SettlesThreadSaves(e.process, ThreadKey(e.process, e.tid), ev.start_ns,
                       ev.start_ns + ev.dur_ns);
    return;
  }
  // What ends a burst of writes on the file, or settles a save's; not a
  // call inside a load of a checkpoint (it closes what it read).
  const uint64_t key = ProcessStringKey(e.process, ev.file);
  if (!saved_files_.empty() && !InLoad(e) &&
      SettlesSave(e.process, key, ev.start_ns, ev.start_ns + ev.dur_ns)) {
    return;
  }
  if (bursts_.empty()) return;
  auto it = bursts_.find(key);
  if (it == bursts_.end()) return;
  it->second.end = std::max(it->second.end, ev.start_ns + ev.dur_ns);
  EndBurst(it->first, true);
}

bool CheckpointMeter::IsCheckpointCall(const StreamEvent& e, OpClass op) {
  const Event& ev = *e.event;
  if (RulesFor(ev.kind).copy && ev.aux != 0) {
    // A copy into a traced file: from an untraced one (aux == file: a write
    // alone) or a checkpoint (copied to model_best.pth.tar), the job's
    // output; a data file staged (to a local disk, in the loop: 78.5 ms of a
    // 192.6 ms fetch), its reading.
    if (ev.aux == ev.file) return true;
    const uint64_t source = ProcessStringKey(e.process, ev.file);
    for (const auto& [file, index] : saved_files_) {
      if (file == source) return true;
    }
    return false;
  }
  size_t at;
  if (!open_saves_.empty() && InOpen(&open_saves_, e.process, ev.start_ns, &at)) {
    // Another thread's save (one in the background) holds none of this
    // thread's calls.
    const uint64_t thread = ThreadKey(e.process, e.tid);
    for (const Open& o : open_saves_) {
      if (o.process == e.process && saves_[o.index].thread == thread) return true;
    }
  }
  // The close ending a burst of writes on its file is the writing's: judged
  // before the burst ends (AddIo), it was no save's yet (copyfile's close
  // of model_best, 21-25 ms under load, counted as the next step's wait).
  if ((op == OpClass::Close || op == OpClass::Sync) && !bursts_.empty() &&
      bursts_.count(ProcessStringKey(e.process, ev.file)) != 0) {
    return true;
  }
  if (saved_files_.empty()) return false;
  // A read of a file a save wrote reads it back: left to the reading (a
  // data set written, then read), but in a load region of its thread
  // (torch.load verifying the save, the best model reloaded), which reads
  // no data: its time is neither the batch wait nor a save's. (A load of
  // a file no save wrote, a data set of .pt samples, is reading.)
  uint64_t load_start = 0;
  const bool load = op == OpClass::Read && InLoad(e, &load_start);
  if (op == OpClass::Read && !load) return false;
  if (load) return LoadReadsBack(e, load_start);
  const uint64_t key = ProcessStringKey(e.process, ev.file);
  for (const auto& [file, index] : saved_files_) {
    if (file != key) continue;
    // A save found as a burst has no region to bound it: only the closes,
    // syncs and renames that settle it (SettlesSave's window) are its; the
    // opens, fadvises and maps of a data set written and then read (a
    // DONTNEED of 6.9 ms, in a loop's first window) are the reading's.
    const Save& s = saves_[index];
    if (!s.burst) return true;
    const bool settles = op == OpClass::Close || op == OpClass::Sync || IsRename(ev.kind);
    if (settles && !s.read_after && ev.start_ns >= s.end && ev.start_ns - s.end <= kSettleNs) {
      return true;
    }
  }
  return false;
}

bool CheckpointMeter::LoadReadsBack(const StreamEvent& e, uint64_t load_start) {
  // By path, not by the process's file: a loader's workers of the next
  // epoch are other processes than the ones that saved.
  const uint64_t key = ProcessStringKey(e.process, e.event->file);
  if (key != last_load_key_) {
    last_load_key_ = key;
    last_load_save_ = SIZE_MAX;
    if (const std::string* path = PathOf(key)) {
      last_load_path_ = std::hash<std::string>()(*path);
      auto it = saved_paths_.find(last_load_path_);
      if (it != saved_paths_.end()) last_load_save_ = it->second;
    }
  }
  if (last_load_save_ == SIZE_MAX) return false;
  Save& s = saves_[last_load_save_];
  if (s.burst || load_start < s.end) return false;
  // Only a load before the loop's next step (the save verified, the best
  // model reloaded) reads it back. One after it reads what an earlier step
  // saved as data (a cache of samples written in epoch 0, loaded in epoch 1:
  // 198 ms of a loop's 219 ms fetch), and the save was that cache's fill.
  // The saving thread's steps where it steps; a thread that never does (a
  // loader's worker caching its samples) has the loop's.
  auto step = last_step_.find(s.thread);
  const uint64_t stepped = step != last_step_.end() ? step->second : any_last_step_;
  if (stepped == UINT64_MAX || stepped < s.end) return true;
  s.loaded_as_data = std::min(s.loaded_as_data, e.event->start_ns);
  if (cache_paths_.size() < kMinCachePaths) cache_paths_.insert(last_load_path_);
  return false;
}

void CheckpointMeter::NoteSavedFile(uint64_t key, size_t index) {
  saved_files_.emplace_back(key, index);
  if (saved_files_.size() > kKeptSavedFiles) saved_files_.erase(saved_files_.begin());
  const std::string* path = PathOf(key);
  if (path == nullptr) return;
  const uint64_t hash = std::hash<std::string>()(*path);
  auto [it, added] = saved_paths_.try_emplace(hash, index);
  it->second = index;  // the path's latest save
  last_load_key_ = UINT64_MAX;
  if (!added) return;
  if (saved_path_order_.size() < kKeptSavedPaths) {
    saved_path_order_.push_back(hash);
    return;
  }
  saved_paths_.erase(saved_path_order_[next_saved_path_]);
  saved_path_order_[next_saved_path_] = hash;
  next_saved_path_ = (next_saved_path_ + 1) % kKeptSavedPaths;
}

bool CheckpointMeter::CachesDense() const {
  if (cache_dense_ < 0) {
    uint64_t fills = 0, first = UINT64_MAX, last = 0;
    for (const Save& s : saves_) {
      if (s.loaded_as_data == UINT64_MAX) continue;
      ++fills;
      first = std::min(first, s.steps_before);
      last = std::max(last, s.steps_before);
    }
    cache_dense_ = fills > 0 && 2 * fills >= last - first + 1;
  }
  return cache_dense_ != 0;
}

std::vector<CheckpointMeter::CacheFill> CheckpointMeter::CacheFills(uint64_t loop_end) const {
  std::vector<CacheFill> fills;
  for (const Save& s : saves_) {
    if (!s.burst && IsCache(s, loop_end)) fills.push_back({s.thread, s.start, s.end, s.write_ns});
  }
  std::sort(fills.begin(), fills.end(),
            [](const CacheFill& a, const CacheFill& b) { return a.start < b.start; });
  return fills;
}

bool CheckpointMeter::InLoad(const StreamEvent& e, uint64_t* load_start) {
  if (open_restores_.empty()) return false;
  size_t at;
  if (!InOpen(&open_restores_, e.process, e.event->start_ns, &at)) return false;
  const uint64_t thread = ThreadKey(e.process, e.tid);
  for (const Open& o : open_restores_) {
    if (o.process == e.process && restores_[o.index].thread == thread) {
      if (load_start != nullptr) *load_start = restores_[o.index].start;
      return true;
    }
  }
  return false;
}

uint64_t CheckpointMeter::BurstStart(uint64_t key, uint64_t thread, uint64_t first_write) {
  for (OutputOpen& o : output_opens_) {
    if (o.key == key && o.thread == thread && o.end <= first_write &&
        first_write - o.end <= kSettleNs) {
      o.key = UINT64_MAX;
      return o.start;
    }
  }
  return first_write;
}

void CheckpointMeter::AddLoopStep(uint64_t thread, uint64_t start) {
  // A step between an open and the first write: the open was no save's.
  for (OutputOpen& o : output_opens_) {
    if (o.thread == thread && o.end <= start) o.key = UINT64_MAX;
  }
  std::vector<uint64_t> ended;
  for (const auto& [key, burst] : bursts_) {
    if (burst.thread == thread && burst.end <= start) ended.push_back(key);
  }
  for (uint64_t key : ended) EndBurst(key);
  ++steps_seen_;
  uint64_t& last = last_step_.try_emplace(thread, 0).first->second;
  last = std::max(last, start);
  any_last_step_ = any_last_step_ == UINT64_MAX ? start : std::max(any_last_step_, start);
}

bool CheckpointMeter::SettlesSave(uint32_t process, uint64_t key, uint64_t start,
                                  uint64_t end) {
  // Only the file's latest save: saving every few steps, the next save of
  // the same file closes it inside its own region, which would otherwise
  // stretch the save before over the steps between the two (their time
  // counted twice). Entries come in the order of their saves' writes.
  for (auto f = saved_files_.rbegin(); f != saved_files_.rend(); ++f) {
    if (f->first != key) continue;
    Save& s = saves_[f->second];
    if (start < s.end || start - s.end > kSettleNs) return false;
    // Read back since (torch.load verifying it), or read as the data set
    // (read_after: a burst that made it): a close now is the reader's
    // descriptor's; the load's 10-15 ms were counted as the save's, and
    // np.memmap's close of the data file in each get_batch chained the
    // burst's settling on over the whole loop (its closes no step's wait).
    if (s.read_back || s.read_after) return false;
    // Written again since (a burst of its own, Lightning's next save): the
    // call ends that burst.
    auto b = bursts_.find(key);
    if (b != bursts_.end() && b->second.start >= s.end) return false;
    // Inside another save of the process: that save's.
    size_t at;
    if (!open_saves_.empty() && InOpen(&open_saves_, process, start, &at)) return false;
    s.end = std::max(s.end, end);
    return true;
  }
  return false;
}

void CheckpointMeter::SettlesThreadSaves(uint32_t process, uint64_t thread, uint64_t start,
                                         uint64_t end) {
  // A sync() inside a save is that save's.
  size_t at;
  if (!open_saves_.empty() && InOpen(&open_saves_, process, start, &at)) return;
  for (const auto& [file, index] : saved_files_) {
    Save& s = saves_[index];
    if (s.thread == thread && start >= s.end && start - s.end <= kSettleNs) {
      s.end = std::max(s.end, end);
    }
  }
}

uint64_t CheckpointMeter::LoopEnd(uint64_t loop_end, uint64_t step_ns,
                                  const std::unordered_set<uint64_t>& loop_threads) const {
  uint64_t end = loop_end;
  for (const Save& s : saves_) {
    if (s.start >= loop_end && s.start - loop_end <= step_ns && !s.read_after &&
        !IsCache(s, UINT64_MAX) && loop_threads.count(s.thread) != 0) {
      end = std::max(end, s.end);
    }
  }
  return end;
}

void CheckpointMeter::EndBurst(uint64_t key, bool by_file_call) {
  auto it = bursts_.find(key);
  if (it == bursts_.end()) return;
  const Burst& b = it->second;
  // The bytes a save region of its thread serialised into memory just
  // before: that save's.
  for (auto s = saves_.rbegin(); s != saves_.rend() && s != saves_.rbegin() + 4; ++s) {
    if (s->thread == b.thread && s->bytes == 0 && b.start >= s->end &&
        b.start - s->end <= kSettleNs) {
      s->end = std::max(s->end, b.end);
      s->bytes += b.bytes;
      s->write_ns += b.write_ns;
      // Its file's rename or sync that follows settles the save too.
      NoteSavedFile(key, static_cast<size_t>(saves_.rend() - s) - 1);
      bursts_.erase(it);
      return;
    }
  }
  if (b.bytes >= kMinBurstBytes) {
    if (const std::string* path = PathOf(key)) {
      burst_paths_[*path].push_back(saves_.size());
      last_read_key_ = UINT64_MAX;  // (a file read before may now have saves)
    }
    // Ended by a call on its file (a close, sync or rename), the file's
    // next such calls within kSettleNs are the save's too (SettlesSave):
    // np.save(f) writes through a stream on a dup of f's descriptor and
    // closes it, which ends the burst, and the fsync of f that follows is
    // the save's (half of its time). Not after a step or a pause: a file
    // written across the loop's steps would stretch over them.
    if (by_file_call) {
      saved_files_.push_back({key, saves_.size()});
      if (saved_files_.size() > kKeptSavedFiles) saved_files_.erase(saved_files_.begin());
    }
    saves_.push_back({static_cast<uint32_t>(key >> 32), b.thread, b.start, b.end, b.bytes,
                      b.write_ns, false, true});
    saves_.back().before_loop = steps_seen_ == 0;
  }
  bursts_.erase(it);
}

const std::string* CheckpointMeter::PathOf(uint64_t key) const {
  const uint32_t process = static_cast<uint32_t>(key >> 32);
  if (process >= processes_.size()) return nullptr;
  const auto& strings = processes_[process].strings;
  auto s = strings.find(static_cast<uint32_t>(key));
  return s == strings.end() ? nullptr : &s->second;
}

void CheckpointMeter::ReadAfterBursts(const StreamEvent& e, bool before_loop_only) {
  const uint64_t key = ProcessStringKey(e.process, e.event->file);
  if (key != last_read_key_) {
    last_read_key_ = key;
    last_read_saves_ = nullptr;
    if (const std::string* path = PathOf(key)) {
      auto it = burst_paths_.find(*path);
      if (it != burst_paths_.end()) last_read_saves_ = &it->second;
    }
  }
  if (last_read_saves_ == nullptr) return;
  for (size_t i : *last_read_saves_) {
    if (before_loop_only && !saves_[i].before_loop) continue;
    if (e.event->start_ns >= saves_[i].end) saves_[i].read_after = true;
  }
}

CheckpointFigures CheckpointMeter::Finish(bool loop, uint64_t loop_start, uint64_t loop_end,
                                          uint64_t step_ns,
                                          const std::unordered_set<uint64_t>& loop_threads) {
  while (!bursts_.empty()) EndBurst(bursts_.begin()->first);
  CheckpointFigures f;
  IntervalList all, blocking, background, restoring;
  for (const Save& s : saves_) {
    // A save counts where the loop ran: one at start-up or after the last
    // step (the final weights) stopped nothing.
    // A cache's fill (its file loaded as data by the loop) is no save.
    if (!loop || s.start < loop_start || s.start > loop_end + step_ns || s.read_after ||
        IsCache(s, loop_end)) {
      continue;
    }
    ++f.saves;
    f.bytes += s.bytes;
    f.write_ns += s.write_ns;
    all.emplace_back(s.start, s.end);
    (loop_threads.count(s.thread) != 0 ? blocking : background).emplace_back(s.start, s.end);
  }
  f.ns = UnionLength(std::move(all));
  f.blocking_ns = UnionLength(std::move(blocking));
  f.background_ns = UnionLength(std::move(background));
  for (const Save& r : restores_) {
    if (loop && r.start >= loop_start) continue;
    restoring.emplace_back(r.start, r.end);
    f.restore_bytes += r.bytes;
  }
  f.restore_ns = UnionLength(std::move(restoring));
  return f;
}

}  // namespace dlprof::analysis
