// The whole run's checkpoint saves, on the flusher (checkpoint_saves.h).
#include "lib/core/checkpoint_saves.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <vector>

namespace dlprof::core {

void CheckpointSaves::SetThread(uint32_t tid) {
  std::unique_ptr<Thread>& t = threads_[tid];
  if (!t) {
    t = std::make_unique<Thread>();
    t->tid = tid;
  }
  thread_ = t.get();
}

void CheckpointSaves::Write(uint32_t file, uint64_t start_ns, uint64_t end_ns, uint64_t bytes,
                            uint64_t ns, bool job) {
  Thread& t = *thread_;
  if (!saved_.empty()) {
    auto saved = saved_.find(file);
    if (saved != saved_.end()) saved->second.touched = true;
  }
  if (job) {
    auto burst = bursts_.find(file);
    if (burst != bursts_.end() && start_ns > burst->second.end + kBurstGapNs &&
        burst->second.bytes < kMinBurstBytes) {
      bursts_.erase(burst);  // written a little at a time: a log, no save
      burst = bursts_.end();
    }
    if (burst == bursts_.end()) {
      uint64_t start = start_ns;
      WriteRun& open = t.output_open;
      if (open.file == file && open.end <= start_ns && start_ns - open.end <= kSettleNs) {
        start = open.start;
        open.file = 0;
      }
      burst = bursts_.emplace(file, Burst{&t, start, start_ns, 0, 0}).first;
    }
    Burst& b = burst->second;
    b.end = std::max(b.end, end_ns);
    b.bytes += bytes;
    b.write_ns += ns;
  }
  if (t.count > 0) {
    WriteRun& last = t.writes[t.count - 1];
    if (last.file == file && start_ns < last.end + kJoinGapNs) {
      last.end = std::max(last.end, end_ns);
      last.bytes += bytes;
      last.ns += ns;
      return;
    }
  }
  if (t.count == kWriteRuns) JoinClosest(&t);
  t.writes[t.count++] = WriteRun{start_ns, std::max(start_ns, end_ns), bytes, ns, file};
}

void CheckpointSaves::JoinClosest(Thread* t) {
  // Two runs of one file first (a save's bursts), then of any two.
  size_t best = 0;
  bool same = false;
  uint64_t gap = UINT64_MAX;
  for (size_t i = 0; i + 1 < t->count; ++i) {
    const WriteRun &a = t->writes[i], &b = t->writes[i + 1];
    const uint64_t g = b.start > a.end ? b.start - a.end : 0;
    const bool one_file = a.file == b.file;
    if ((one_file && !same) || (one_file == same && g < gap)) {
      gap = g;
      best = i;
      same = one_file;
    }
  }
  WriteRun& a = t->writes[best];
  const WriteRun& b = t->writes[best + 1];
  a.end = std::max(a.end, b.end);
  if (b.bytes > a.bytes) a.file = b.file;
  a.bytes += b.bytes;
  a.ns += b.ns;
  std::copy(t->writes.begin() + best + 2, t->writes.begin() + t->count,
            t->writes.begin() + best + 1);
  --t->count;
}

format::SaveSample CheckpointSaves::SaveOf(const Thread& t, uint64_t start_ns,
                                           uint64_t end_ns) const {
  format::SaveSample s;
  s.start_ns = start_ns;
  s.end_ns = std::max(start_ns, end_ns);
  s.thread = t.tid;
  std::map<uint32_t, uint64_t> by_file;
  for (size_t i = t.count; i-- > 0;) {
    const WriteRun& w = t.writes[i];
    if (w.end < start_ns) break;
    // A run begun before the save (joined across its start): its share by time.
    uint64_t bytes = w.bytes, ns = w.ns;
    if (w.start < start_ns) {
      const uint64_t len = w.end - w.start, in = w.end - start_ns;
      bytes = static_cast<uint64_t>(static_cast<unsigned __int128>(bytes) * in / len);
      ns = static_cast<uint64_t>(static_cast<unsigned __int128>(ns) * in / len);
    }
    s.bytes += bytes;
    s.write_ns += ns;
    by_file[w.file] += bytes;
  }
  uint64_t most = 0;
  for (const auto& [file, bytes] : by_file) {
    if (bytes > most) {
      most = bytes;
      s.file = file;
    }
  }
  return s;
}

void CheckpointSaves::AddSample(const format::SaveSample& s, const Thread& t) {
  if (record_.saves.size() < format::kMaxSaveSamples) {
    record_.saves.push_back(s);
  } else {
    ++record_.unsampled;
  }
  if (s.file != 0 && (saved_.size() < kSavedFiles || saved_.count(s.file) > 0)) {
    saved_[s.file] = Saved{&t, s.end_ns};
  }
}

uint32_t CheckpointSaves::Region(uint32_t name, uint64_t start_ns, uint64_t end_ns) {
  Thread& t = *thread_;
  switch (roles_.Of(name)) {
    case RegionRole::kSave: {
      // Its thread's bursts that wrote in it are its writes: those under
      // way (a file opened before it, torch.save(model, f), and closed
      // after), and those ended inside it (torch.save(model, path) closes
      // its file inside: their samples dropped, Take).
      for (auto b = bursts_.begin(); b != bursts_.end();) {
        b = b->second.thread == &t && b->second.end >= start_ns ? bursts_.erase(b) : std::next(b);
      }
      for (auto b = burst_samples_.begin(); b != burst_samples_.end();) {
        format::SaveSample& x = record_.saves[b->second];
        if (x.thread == t.tid && x.end_ns >= start_ns && x.end_ns <= end_ns) {
          x = format::SaveSample();
          b = burst_samples_.erase(b);
        } else {
          ++b;
        }
      }
      const format::SaveSample s = SaveOf(t, start_ns, end_ns);
      AddSample(s, t);
      return s.file;
    }
    case RegionRole::kWait:
    case RegionRole::kIter:
    case RegionRole::kStep: {
      // A step: the writes before it are no later save's, its bursts end,
      // and an open for output before it was no save's.
      if (!t.looped) record_.loop_threads.push_back(t.tid);
      t.looped = true;
      t.last_step_start = std::max(t.last_step_start, start_ns);
      t.count = 0;
      t.output_open.file = 0;
      std::vector<uint32_t> ended;
      for (const auto& [file, b] : bursts_) {
        if (b.thread == &t && b.end <= start_ns) ended.push_back(file);
      }
      for (const uint32_t file : ended) EndBurst(file, 0, false);
      return 0;
    }
    default:
      return 0;
  }
}

void CheckpointSaves::EndBurst(uint32_t file, uint64_t end_ns, bool by_file_call) {
  auto it = bursts_.find(file);
  if (it == bursts_.end()) return;
  Burst b = it->second;
  bursts_.erase(it);
  b.end = std::max(b.end, end_ns);
  const Thread& t = *b.thread;
  // The bytes a save region of its thread serialised into memory just
  // before (torch.save into a BytesIO, then written: Lightning's atomic
  // save): that save's.
  for (size_t k = record_.saves.size(); k-- > 0 && k + 4 >= record_.saves.size();) {
    format::SaveSample& s = record_.saves[k];
    if (s.thread == t.tid && s.bytes == 0 && s.end_ns != 0 && b.start >= s.end_ns &&
        b.start - s.end_ns <= kSettleNs) {
      s.end_ns = std::max(s.end_ns, b.end);
      s.bytes += b.bytes;
      s.write_ns += b.write_ns;
      s.file = file;
      if (saved_.size() < kSavedFiles || saved_.count(file) > 0) saved_[file] = Saved{&t, s.end_ns};
      return;
    }
  }
  if (b.bytes < kMinBurstBytes) return;
  format::SaveSample s;
  s.start_ns = b.start;
  s.end_ns = b.end;
  s.bytes = b.bytes;
  s.write_ns = b.write_ns;
  s.file = file;
  s.thread = t.tid;
  if (record_.saves.size() < format::kMaxSaveSamples) burst_samples_[file] = record_.saves.size();
  if (by_file_call) {
    // Its file's syncs and closes that follow within kSettleNs settle it
    // (np.save(f) closes a stream on a dup of f's descriptor, which ends
    // the burst; the program's fsync of f follows).
    AddSample(s, t);
  } else if (record_.saves.size() < format::kMaxSaveSamples) {
    record_.saves.push_back(s);
  } else {
    ++record_.unsampled;
  }
}

void CheckpointSaves::DropBurst(uint32_t file) {
  auto it = burst_samples_.find(file);
  if (it == burst_samples_.end()) return;
  // Written, then read: the data set being made, no save.
  record_.saves[it->second] = format::SaveSample();
  burst_samples_.erase(it);
  saved_.erase(file);
}

void CheckpointSaves::Finish() {
  while (!bursts_.empty()) EndBurst(bursts_.begin()->first, 0, false);
}

void CheckpointSaves::SettleSave(uint32_t file, uint64_t start_ns, uint64_t end_ns) {
  if (file != 0) {
    auto saved = saved_.find(file);
    if (saved == saved_.end() || saved->second.touched) return;
  }
  for (auto s = record_.saves.rbegin(); s != record_.saves.rend(); ++s) {
    if (file == 0 ? s->thread != thread_->tid : s->file != file) continue;
    // (Its latest save only: an earlier one's settling was before it.)
    if (start_ns >= s->end_ns && start_ns - s->end_ns <= kSettleNs) {
      s->end_ns = std::max(s->end_ns, end_ns);
    }
    return;
  }
}

void CheckpointSaves::ReadSaved(uint32_t file) {
  auto it = saved_.find(file);
  if (it == saved_.end()) return;
  it->second.touched = true;
  if (it->second.thread->last_step_start < it->second.end) return;
  // Read after a later step of the thread that saved it: as data.
  record_.loaded.push_back(file);
  saved_.erase(it);
}

format::SavesRecord CheckpointSaves::Take(uint64_t start_ns, uint64_t end_ns, bool last) {
  format::SavesRecord r = std::move(record_);
  r.start_ns = start_ns;
  record_ = format::SavesRecord();
  std::unordered_map<uint32_t, size_t> bursts = std::move(burst_samples_);
  burst_samples_.clear();
  std::vector<format::SaveSample> saves = std::move(r.saves);
  r.saves.clear();
  for (size_t k = 0; k < saves.size(); ++k) {
    const format::SaveSample& s = saves[k];
    // (Dropped after it was made: a burst in a save region, or read as the
    // data set.)
    if (s.end_ns == 0) continue;
    const bool settling = !last && s.end_ns + kSettleNs > end_ns;
    std::vector<format::SaveSample>& into = settling ? record_.saves : r.saves;
    auto burst = bursts.find(s.file);
    if (settling && burst != bursts.end() && burst->second == k) {
      burst_samples_[s.file] = into.size();
    }
    into.push_back(s);
  }
  return r;
}

}  // namespace dlprof::core
