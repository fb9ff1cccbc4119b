// The whole run's counters on one grid (whole_run_points.h).
#include "lib/analysis/whole_run_points.h"

#include <algorithm>

namespace dlprof::analysis {

void WholeRunPointsBuilder::AddSpan(uint64_t start_ns, uint64_t end_ns, bool last) {
  start_ = std::min(start_, start_ns);
  end_ = std::max(end_, end_ns);
  if (end_ns > start_ns) (last ? last_ : full_).push_back(end_ns - start_ns);
}

void WholeRunPointsBuilder::Lay() {
  // An interval's length: the median of the records that are not their
  // process's last (those are cut short at exit); without any, the longest.
  uint64_t interval = 0;
  if (!full_.empty()) {
    std::nth_element(full_.begin(), full_.begin() + full_.size() / 2, full_.end());
    interval = full_[full_.size() / 2];
  } else if (!last_.empty()) {
    interval = *std::max_element(last_.begin(), last_.end());
  }
  full_ = {};
  last_ = {};
  sums_.assign(1, WaitCauseSums());  // the sink, where no point is laid
  step_reading_.assign(1, 0);
  step_preprocessing_.assign(1, 0);
  if (end_ <= start_ || interval == 0) return;
  const uint64_t span = end_ - start_;
  const uint64_t intervals = (span + interval - 1) / interval;
  const uint64_t per_point = std::max<uint64_t>(1, (intervals + kMaxPoints - 1) / kMaxPoints);
  out_.point_ns = interval * per_point;
  const size_t n = static_cast<size_t>((span + out_.point_ns - 1) / out_.point_ns);
  out_.points.resize(n);
  for (size_t i = 0; i < n; ++i) {
    out_.points[i].start_ns = start_ + i * out_.point_ns;
    out_.points[i].end_ns = std::min(end_, out_.points[i].start_ns + out_.point_ns);
  }
  sums_.resize(n);
  step_reading_.assign(n, 0);
  step_preprocessing_.assign(n, 0);
}

uint32_t WholeRunPointsBuilder::PointAt(uint64_t mid_ns) const {
  if (out_.points.empty()) return 0;
  const uint64_t i = mid_ns > start_ ? (mid_ns - start_) / out_.point_ns : 0;
  return static_cast<uint32_t>(std::min<uint64_t>(i, out_.points.size() - 1));
}

void WholeRunPointsBuilder::Add(const PointSource& s) {
  if (out_.points.empty()) return;
  const uint32_t i = PointAt(s.start_ns + (s.end_ns - s.start_ns) / 2);
  WholeRunPoint& p = out_.points[i];
  p.io_calls += s.io_calls;
  p.read_bytes += s.read_bytes;
  p.io_ns += s.io_ns;
  p.batches += s.batches;
  p.batch_wait_ns += s.batch_wait_ns;
  p.steps += s.steps;
  p.gpu_busy_ns += s.gpu_busy_ns;
  if (s.waited) p.waiting_ns += s.end_ns - s.start_ns;
  step_reading_[i] += s.step_reading_ns;
  step_preprocessing_[i] += s.step_preprocessing_ns;
}

void WholeRunPointsBuilder::AddStall(uint64_t mid_ns, uint64_t stall_ns) {
  if (!out_.points.empty()) out_.points[PointAt(mid_ns)].data_stall_ns += stall_ns;
}

WholeRunPoints WholeRunPointsBuilder::Finish(bool workers) {
  WholeRunPoints out = std::move(out_);
  out_ = {};
  const size_t n = out.points.size();
  for (size_t i = 0; i < n; ++i) {
    out.points[i].causes = sums_[i].Split(workers);
    // A loop of steps' wait: its reading and preprocessing (LoopFigures).
    const uint64_t preprocessing = std::min(step_preprocessing_[i], step_reading_[i]);
    out.points[i].causes.reading_ns += step_reading_[i] - preprocessing;
    out.points[i].causes.preprocessing_ns += preprocessing;
  }

  std::vector<uint64_t> waiting;
  for (const WholeRunPoint& p : out.points) {
    if (p.waiting_ns > 0) waiting.push_back(p.waiting_ns);
  }
  if (waiting.empty()) return out;
  std::nth_element(waiting.begin(), waiting.begin() + waiting.size() / 2, waiting.end());
  const uint64_t floor = waiting[waiting.size() / 2] / 2;
  for (size_t i = 0; i < n; ++i) {
    const WholeRunPoint& p = out.points[i];
    if (p.waiting_ns == 0 || p.waiting_ns < floor) continue;
    // p's share above the worst's so far: a / b > c / d as a d > c b.
    const WholeRunPoint* w = out.worst < 0 ? nullptr : &out.points[out.worst];
    if (w == nullptr || static_cast<unsigned __int128>(p.batch_wait_ns) * w->waiting_ns >
                            static_cast<unsigned __int128>(w->batch_wait_ns) * p.waiting_ns) {
      out.worst = static_cast<int64_t>(i);
    }
  }
  return out;
}

}  // namespace dlprof::analysis
