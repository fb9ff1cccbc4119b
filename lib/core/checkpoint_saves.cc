// The whole run's checkpoint saves, on the flusher (checkpoint_saves.h).
#include "lib/core/checkpoint_saves.h"

#include <algorithm>
#include <map>

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
                            uint64_t ns) {
  Thread& t = *thread_;
  if (!saved_.empty()) {
    auto saved = saved_.find(file);
    if (saved != saved_.end()) saved->second.touched = true;
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

uint32_t CheckpointSaves::Region(uint32_t name, uint64_t start_ns, uint64_t end_ns) {
  Thread& t = *thread_;
  switch (roles_.Of(name)) {
    case RegionRole::kSave: {
      const format::SaveSample s = SaveOf(t, start_ns, end_ns);
      if (record_.saves.size() < format::kMaxSaveSamples) {
        record_.saves.push_back(s);
      } else {
        ++record_.unsampled;
      }
      if (s.file != 0 && (saved_.size() < kSavedFiles || saved_.count(s.file) > 0)) {
        saved_[s.file] = Saved{&t, s.end_ns};
      }
      return s.file;
    }
    case RegionRole::kWait:
    case RegionRole::kIter:
    case RegionRole::kStep:
      // A step: the writes before it are no later save's.
      if (!t.looped) record_.loop_threads.push_back(t.tid);
      t.looped = true;
      t.last_step_start = std::max(t.last_step_start, start_ns);
      t.count = 0;
      return 0;
    default:
      return 0;
  }
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

format::SavesRecord CheckpointSaves::Take(uint64_t start_ns) {
  format::SavesRecord r = std::move(record_);
  r.start_ns = start_ns;
  record_ = format::SavesRecord();
  return r;
}

}  // namespace dlprof::core
