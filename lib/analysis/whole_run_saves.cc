// The whole run's checkpoint saves (whole_run_saves.h).
#include "lib/analysis/whole_run_saves.h"

#include <algorithm>

#include "lib/analysis/whole_run_loops.h"

namespace dlprof::analysis {

void ProcessSaves::Add(const format::SavesRecord& r) {
  saves_.insert(saves_.end(), r.saves.begin(), r.saves.end());
  loaded_.insert(r.loaded.begin(), r.loaded.end());
  loop_threads_.insert(r.loop_threads.begin(), r.loop_threads.end());
  unsampled_ += r.unsampled;
}

std::vector<format::SaveSample> ProcessSaves::Checkpoints(bool cache) const {
  // Fewer files loaded than a cache's: checkpoints reloaded (the best
  // model, evaluated an epoch later), still saves.
  const bool any_cache = loaded_.size() >= format::kMinCacheFiles;
  std::vector<format::SaveSample> out;
  for (const format::SaveSample& s : saves_) {
    if ((any_cache && loaded_.count(s.file) > 0) != cache) continue;
    out.push_back(s);
    out.back().loop_thread = loop_threads_.count(s.thread) > 0;
  }
  return out;
}

void SaveSums::SetWindow(const WholeRunLoop& loop) {
  loop_ = loop.loop_ns > 0;
  from_ = loop.loop_start_ns;
  to_ = loop.loop_end_ns;
  end_ = to_;
  const uint64_t steps = loop.steps > 0 ? loop.steps : loop.batches;
  step_ns_ = steps > 0 ? loop.loop_ns / steps : 0;
}

void SaveSums::Add(const format::SaveSample& s) {
  // A save at start-up stopped no loop; one after the last step, the
  // final weights, is the loop's where it began within a step's time.
  if (!loop_ || s.start_ns < from_ || s.start_ns > to_ + step_ns_) return;
  if (s.loop_thread && s.start_ns >= to_) end_ = std::max(end_, s.end_ns);
  ++figures_.saves;
  figures_.bytes += s.bytes;
  figures_.write_ns += s.write_ns;
  all_.emplace_back(s.start_ns, s.end_ns);
  (s.loop_thread ? blocking_ : background_).emplace_back(s.start_ns, s.end_ns);
}

void SaveSums::AddFill(const format::SaveSample& s) {
  if (!loop_ || !s.loop_thread || s.start_ns < from_ || s.end_ns > to_) return;
  fill_ns_ += s.end_ns - s.start_ns;
  fill_write_ns_ += std::min(s.write_ns, s.end_ns - s.start_ns);
}

void SaveSums::Put(WholeRunLoop* loop) const {
  if (loop->loop_of_steps && loop->batches > 0) {
    loop->batch_wait_ns += fill_ns_;
    loop->causes.reading_ns += fill_write_ns_;
    loop->causes.preprocessing_ns += fill_ns_ - fill_write_ns_;
  }
  if (figures_.saves == 0) return;
  loop->has_checkpoint = true;
  loop->checkpoint = figures_;
  loop->checkpoint.ns = UnionNs(all_);
  loop->checkpoint.blocking_ns = UnionNs(blocking_);
  loop->checkpoint.background_ns = UnionNs(background_);
  // (A loop summed over a rank's attempts grows by as much.)
  if (end_ > loop->loop_end_ns) {
    loop->loop_ns += end_ - loop->loop_end_ns;
    loop->loop_end_ns = end_;
  }
}

}  // namespace dlprof::analysis
