// Figures derived from a finished summary.
#include "lib/analysis/findings/summary_figures.h"

#include "lib/analysis/summary/file_classes.h"

namespace dlprof::analysis {
namespace {

bool OpenedAndUnused(const Summary& s, const std::string& path, const IoStats& st) {
  return st.opens > 0 && st.read.ops == 0 && st.write.ops == 0 && !st.maps.any() &&
         ClassOfPath(path) == FileClass::kOther && !IsDirectoryOfFiles(s.files, path);
}

}  // namespace

std::vector<ListedFile> ListedFiles(const Summary& s, size_t top, bool details,
                                    size_t* left_out) {
  std::vector<ListedFile> by_class[kFileClasses];
  size_t files = 0;
  for (const auto& [path, st] : s.files) {
    if (IsDirectoryOfFiles(s.files, path)) continue;
    ++files;
    const int c = static_cast<int>(ClassifyFile(path, st));
    by_class[c].push_back({&path, &st, c});
  }
  std::vector<ListedFile> out;
  for (std::vector<ListedFile>& v : by_class) {
    if (details || v.size() <= top) {
      out.insert(out.end(), v.begin(), v.end());
      continue;
    }
    // The class's top by each key; ties by path (the vector is by path).
    std::vector<bool> keep(v.size(), false);
    std::vector<size_t> order(v.size());
    for (int key = 0; key < 2; ++key) {
      for (size_t i = 0; i < v.size(); ++i) order[i] = i;
      auto value = [&](size_t i) {
        const IoStats& io = *v[i].io;
        // (Bytes read through a map count as read, its faults' time as I/O.)
        return key == 0 ? io.read.bytes + io.write.bytes + io.maps.bytes
                        : io.io_time_ns() + io.maps.time_ns;
      };
      std::partial_sort(order.begin(), order.begin() + top, order.end(), [&](size_t a, size_t b) {
        return value(a) != value(b) ? value(a) > value(b) : a < b;
      });
      // A file with none of it is no top file by it (a class of files
      // only opened has no top files by bytes).
      for (size_t i = 0; i < top && value(order[i]) > 0; ++i) keep[order[i]] = true;
    }
    for (size_t i = 0; i < v.size(); ++i) {
      if (keep[i]) out.push_back(v[i]);
    }
  }
  std::sort(out.begin(), out.end(),
            [](const ListedFile& a, const ListedFile& b) { return *a.path < *b.path; });
  if (left_out != nullptr) *left_out = files - out.size();
  return out;
}

std::vector<const std::string*> ListedProcesses(const Summary& s, size_t top, bool details,
                                                size_t* left_out) {
  std::vector<std::pair<const std::string*, const IoStats*>> all;
  for (const auto& [key, st] : s.processes_stats) all.emplace_back(&key, &st);
  std::vector<bool> keep(all.size(), details || all.size() <= top);
  if (!details && all.size() > top) {
    std::vector<size_t> order(all.size());
    for (int by = 0; by < 2; ++by) {  // I/O time, then bytes moved
      auto value = [&](size_t i) {
        const IoStats& io = *all[i].second;
        return by == 0 ? io.io_time_ns() : io.read.bytes + io.write.bytes;
      };
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::partial_sort(order.begin(), order.begin() + top, order.end(), [&](size_t a, size_t b) {
        return value(a) != value(b) ? value(a) > value(b) : a < b;  // ties by key
      });
      for (size_t i = 0; i < top; ++i) keep[order[i]] = true;
    }
  }
  std::vector<const std::string*> out;
  for (size_t i = 0; i < all.size(); ++i) {
    if (keep[i]) out.push_back(all[i].first);
  }
  if (left_out != nullptr) *left_out = all.size() - out.size();
  return out;
}

std::vector<std::pair<std::string, const IoStats*>> FilesByBytes(const Summary& s) {
  std::vector<std::pair<std::string, const IoStats*>> v;
  for (const auto& [path, st] : s.files) {
    if (!IsDirectoryOfFiles(s.files, path)) v.emplace_back(path, &st);
  }
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    uint64_t x = a.second->read.bytes + a.second->write.bytes;
    uint64_t y = b.second->read.bytes + b.second->write.bytes;
    return x != y ? x > y : a.first < b.first;
  });
  return v;
}

std::vector<std::pair<std::string, double>> Rereads(const Summary& s) {
  std::vector<std::pair<std::string, double>> v;
  for (const auto& [path, st] : s.files) {
    if (st.read_extent > 0 && st.read.bytes >= 2 * st.read_extent &&
        ClassifyFile(path, st) == FileClass::kData) {
      v.emplace_back(path,
                     static_cast<double>(st.read.bytes) / static_cast<double>(st.read_extent));
    }
  }
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return v;
}

std::vector<std::string> NeverReadFiles(const Summary& s) {
  std::vector<std::string> v;
  for (const auto& [path, st] : s.files) {
    if (OpenedAndUnused(s, path, st)) v.push_back(path);
  }
  return v;
}

std::vector<std::pair<std::string, uint64_t>> NeverReadByOpens(const Summary& s) {
  std::vector<std::pair<std::string, uint64_t>> v;
  for (const auto& [path, st] : s.files) {
    if (OpenedAndUnused(s, path, st)) v.emplace_back(path, st.opens);
  }
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return v;
}

LoopTimeline TimelineOfLoop(const Summary& s, size_t max_bins) {
  LoopTimeline t;
  t.start_ns = s.run_start_ns;
  t.end_ns = s.run_end_ns;
  std::vector<const RankFigures*> groups;
  for (const RankFigures& r : s.rank_figures) groups.push_back(&r);
  if (s.has_unranked_group) groups.push_back(&s.unranked_group);
  for (const RankFigures* r : groups) {
    if (!r->loop || r->loop_end_ns <= r->loop_start_ns) continue;
    t.start_ns = t.loop ? std::min(t.start_ns, r->loop_start_ns) : r->loop_start_ns;
    t.end_ns = t.loop ? std::max(t.end_ns, r->loop_end_ns) : r->loop_end_ns;
    t.loop = true;
  }
  const uint64_t width = s.fine_bin_ns, base = s.timeline_base_ns;
  if (width == 0 || s.fine_bins.empty() || t.end_ns <= t.start_ns || max_bins == 0) return t;
  // The window's bins; those past the last I/O call (the loop's last
  // steps) are empty.
  const uint64_t lo = t.start_ns > base ? (t.start_ns - base) / width : 0;
  const uint64_t hi = std::max(lo, t.end_ns - 1 > base ? (t.end_ns - 1 - base) / width : 0);
  const uint64_t group = (hi - lo) / max_bins + 1;  // ceil((hi - lo + 1) / max_bins)
  t.bin_ns = group * width;
  t.start_ns = base + lo * width;
  const uint64_t stored = s.fine_bins.size();
  for (uint64_t i = lo; i <= hi; i += group) {
    std::pair<uint64_t, uint64_t> sum{0, 0};
    for (uint64_t k = i; k < i + group && k <= hi && k < stored; ++k) {
      sum.first += s.fine_bins[k].first;
      sum.second += s.fine_bins[k].second;
    }
    t.bytes.push_back(sum);
  }
  return t;
}

MpiBalance MpiImbalance(const Summary& s) {
  uint64_t max = 0, total = 0;
  for (const auto& [rank, st] : s.ranks) {
    uint64_t b = st.mpi_collective_bytes + st.mpi_independent_bytes;
    max = std::max(max, b);
    total += b;
  }
  double mean = s.ranks.empty() ? 0 : static_cast<double>(total) / s.ranks.size();
  return {max, mean > 0 ? static_cast<double>(max) / mean : 0};
}

std::vector<RankedSample> SlowestSamples(const Summary& s, size_t n, size_t* total) {
  std::vector<RankedSample> out;
  for (const RankFigures& r : s.rank_figures) {
    for (const SlowSample& x : r.slowest_samples) out.push_back({r.rank, x});
  }
  if (s.has_unranked_group) {
    for (const SlowSample& x : s.unranked_group.slowest_samples) out.push_back({-1, x});
  }
  std::stable_sort(out.begin(), out.end(), [](const RankedSample& a, const RankedSample& b) {
    return a.sample.ns > b.sample.ns;
  });
  if (total != nullptr) *total = out.size();
  if (out.size() > n) out.resize(n);
  return out;
}

}  // namespace dlprof::analysis
