// The whole run's counters on one grid (whole_run_points.h).
#include "lib/analysis/whole_run_points.h"

#include <algorithm>

namespace dlprof::analysis {
namespace {

// An interval's length: the median of the records that are not their
// process's last (those are cut short at exit); without any, the longest.
uint64_t IntervalLength(const std::vector<PointSource>& sources) {
  std::vector<uint64_t> full, any;
  for (const PointSource& s : sources) {
    if (s.end_ns <= s.start_ns) continue;
    (s.last ? any : full).push_back(s.end_ns - s.start_ns);
  }
  if (!full.empty()) {
    std::nth_element(full.begin(), full.begin() + full.size() / 2, full.end());
    return full[full.size() / 2];
  }
  return any.empty() ? 0 : *std::max_element(any.begin(), any.end());
}

}  // namespace

WholeRunPoints MakeWholeRunPoints(const std::vector<PointSource>& sources,
                                  const std::vector<TimedBatches>& batches,
                                  const FetchIndex& fetches, bool workers) {
  WholeRunPoints out;
  uint64_t start = UINT64_MAX, end = 0;
  for (const PointSource& s : sources) {
    start = std::min(start, s.start_ns);
    end = std::max(end, s.end_ns);
  }
  const uint64_t interval = IntervalLength(sources);
  if (sources.empty() || end <= start || interval == 0) return out;
  const uint64_t span = end - start;
  const uint64_t intervals = (span + interval - 1) / interval;
  const uint64_t per_point = std::max<uint64_t>(1, (intervals + kMaxPoints - 1) / kMaxPoints);
  out.point_ns = interval * per_point;
  const size_t n = static_cast<size_t>((span + out.point_ns - 1) / out.point_ns);
  out.points.resize(n);
  for (size_t i = 0; i < n; ++i) {
    out.points[i].start_ns = start + i * out.point_ns;
    out.points[i].end_ns = std::min(end, out.points[i].start_ns + out.point_ns);
  }
  auto at = [&](uint64_t mid) -> WholeRunPoint& {
    const uint64_t i = mid > start ? (mid - start) / out.point_ns : 0;
    return out.points[std::min<uint64_t>(i, n - 1)];
  };
  for (const PointSource& s : sources) {
    WholeRunPoint& p = at(s.start_ns + (s.end_ns - s.start_ns) / 2);
    p.io_calls += s.io_calls;
    p.read_bytes += s.read_bytes;
    p.io_ns += s.io_ns;
    p.batches += s.batches;
    p.batch_wait_ns += s.batch_wait_ns;
    p.steps += s.steps;
    p.gpu_busy_ns += s.gpu_busy_ns;
    if (s.waited) p.waiting_ns += s.end_ns - s.start_ns;
  }
  std::vector<WaitCauseSums> sums(n);
  std::vector<uint64_t> step_reading(n, 0);
  for (const PointSource& s : sources) {
    step_reading[&at(s.start_ns + (s.end_ns - s.start_ns) / 2) - out.points.data()] +=
        s.step_reading_ns;
  }
  for (const TimedBatches& t : batches) {
    for (size_t k = 0; k < t.process->records.size() && k < t.mid_ns.size(); ++k) {
      sums[&at(t.mid_ns[k]) - out.points.data()].Add(fetches, t.process->machine,
                                                      t.process->records[k]);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    out.points[i].causes = sums[i].Split(workers);
    out.points[i].causes.reading_ns += step_reading[i];
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
