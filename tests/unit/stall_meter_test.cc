// StallMeter against the obvious computation with whole interval unions, on
// hand-made cases with known answers and on random ones.
#include "lib/analysis/meters/stall_meter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "lib/analysis/summary/intervals.h"

namespace dlprof::analysis {
namespace {

struct Interval {
  bool gpu;
  int32_t device;  // GPU
  uint64_t start, end;
  int process, file;  // I/O; file -1: none
};

// What the figures are by definition (docs/ANALYSIS.md), from sealed unions.
struct Expected {
  uint64_t busy = 0, outstanding = 0, stall = 0;
  std::map<int32_t, uint64_t> device_busy, device_stall;
  std::map<int, uint64_t> by_process, by_file;
};

Expected Reference(const std::vector<Interval>& v) {
  Expected x;
  IntervalUnion io, all;
  std::map<int32_t, IntervalUnion> busy;
  std::map<int32_t, std::pair<uint64_t, uint64_t>> window;
  uint64_t first = UINT64_MAX, last = 0;
  for (const Interval& i : v) {
    if (!i.gpu) {
      io.Add(i.start, i.end);
      continue;
    }
    busy[i.device].Add(i.start, i.end);
    all.Add(i.start, i.end);
    auto [it, added] = window.try_emplace(i.device, i.start, i.end);
    if (!added) {
      it->second.first = std::min(it->second.first, i.start);
      it->second.second = std::max(it->second.second, i.end);
    }
    first = std::min(first, i.start);
    last = std::max(last, i.end);
  }
  if (window.empty()) return x;
  io.Seal();
  all.Seal();
  x.busy = all.Length();
  for (auto& [d, u] : busy) {
    u.Seal();
    x.device_busy[d] = u.Length();
    IntervalUnion clipped = io;
    clipped.Clip(window[d].first, window[d].second);
    x.device_stall[d] = clipped.Length() - clipped.CoveredBy(u);
  }
  IntervalUnion clipped = io;
  clipped.Clip(first, last);
  x.outstanding = clipped.Length();
  x.stall = x.outstanding - clipped.CoveredBy(all);
  for (const Interval& i : v) {
    if (i.gpu) continue;
    const uint64_t a = std::max(i.start, first), b = std::min(i.end, last);
    if (b <= a) continue;
    const uint64_t idle = (b - a) - all.Covered(a, b);
    if (idle == 0) continue;
    x.by_process[i.process] += idle;
    if (i.file >= 0) x.by_file[i.file] += idle;
  }
  return x;
}

// Feeds `v` (any order) to a StallMeter in order of start and compares.
void Check(std::vector<Interval> v) {
  std::stable_sort(v.begin(), v.end(),
                   [](const Interval& a, const Interval& b) { return a.start < b.start; });
  const Expected want = Reference(v);
  static const std::string kProcesses[4] = {"p0", "p1", "p2", "p3"};
  static const std::string kFiles[4] = {"f0", "f1", "f2", "f3"};
  StallMeter m;
  for (const Interval& i : v) {
    if (i.gpu) {
      m.AddGpu(i.device, i.start, i.end);
    } else {
      m.AddIo(i.start, i.end, &kProcesses[i.process], i.file >= 0 ? &kFiles[i.file] : nullptr);
    }
  }
  m.Finish();
  EXPECT_EQ(m.gpu_busy_ns(), want.busy);
  EXPECT_EQ(m.io_outstanding_ns(), want.outstanding);
  EXPECT_EQ(m.data_stall_ns(), want.stall);
  for (const auto& [d, busy] : want.device_busy) {
    ASSERT_TRUE(m.devices().count(d));
    EXPECT_EQ(m.devices().at(d).busy_ns, busy) << "device " << d;
    EXPECT_EQ(m.devices().at(d).stall_ns, want.device_stall.at(d)) << "device " << d;
  }
  for (int p = 0; p < 4; ++p) {
    auto got = m.stall_by_process().find(&kProcesses[p]);
    const uint64_t g = got == m.stall_by_process().end() ? 0 : got->second;
    auto w = want.by_process.find(p);
    EXPECT_EQ(g, w == want.by_process.end() ? 0 : w->second) << "process " << p;
  }
  for (int f = 0; f < 4; ++f) {
    auto got = m.stall_by_file().find(&kFiles[f]);
    const uint64_t g = got == m.stall_by_file().end() ? 0 : got->second;
    auto w = want.by_file.find(f);
    EXPECT_EQ(g, w == want.by_file.end() ? 0 : w->second) << "file " << f;
  }
}

Interval Gpu(int32_t d, uint64_t s, uint64_t e) { return {true, d, s, e, 0, -1}; }
Interval Io(int p, int f, uint64_t s, uint64_t e) { return {false, 0, s, e, p, f}; }

TEST(StallMeterTest, KnownOverlaps) {
  // GPU busy [100,200) and [300,400); reads [50,150) and [250,350), and one
  // past the last GPU work [450,500) that is outside the window.
  StallMeter m;
  std::string p = "p", f = "f";
  m.AddIo(50, 150, &p, &f);
  m.AddGpu(0, 100, 200);
  m.AddIo(250, 350, &p, &f);
  m.AddGpu(0, 300, 400);
  m.AddIo(450, 500, &p, &f);
  m.Finish();
  EXPECT_EQ(m.gpu_busy_ns(), 200u);
  EXPECT_EQ(m.io_outstanding_ns(), 50u + 100u);   // [100,150) + [250,350)
  EXPECT_EQ(m.data_stall_ns(), 50u);              // [250,300)
  EXPECT_EQ(m.stall_by_file().at(&f), 50u);
  EXPECT_EQ(m.devices().at(0).stall_ns, 50u);
}

TEST(StallMeterTest, NoGpuMeansNoWindow) {
  StallMeter m;
  std::string p = "p";
  m.AddIo(0, 100, &p, nullptr);
  m.Finish();
  EXPECT_FALSE(m.any_gpu());
  EXPECT_EQ(m.io_outstanding_ns(), 0u);
  EXPECT_TRUE(m.stall_by_process().empty());
}

TEST(StallMeterTest, LongCallSpanningManyKernels) {
  std::vector<Interval> v = {Io(0, 0, 0, 10000)};
  for (uint64_t t = 100; t < 9000; t += 300) v.push_back(Gpu(t % 2, t, t + 200));
  Check(v);
}

// Many calls before the first GPU event (the meter prunes them unordered)
// and a long one still in flight when the GPU starts.
TEST(StallMeterTest, ManyCallsBeforeTheFirstGpuEvent) {
  std::vector<Interval> v = {Io(0, 0, 5, 100000)};
  for (uint64_t t = 10; t < 50000; t += 37) v.push_back(Io(static_cast<int>(t % 3), 1, t, t + 20));
  for (uint64_t t = 50000; t < 120000; t += 900) v.push_back(Gpu(0, t, t + 500));
  for (uint64_t t = 50010; t < 130000; t += 53) v.push_back(Io(1, 2, t, t + 30));
  Check(v);
}

TEST(StallMeterTest, MatchesTheDefinitionOnRandomTraces) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 400; ++round) {
    std::vector<Interval> v;
    // Some rounds long enough for the meter to prune calls before the GPU starts.
    const int n = 1 + static_cast<int>(rng() % (round % 4 == 0 ? 400 : 60));
    const uint64_t span = 50 + rng() % 5000;
    for (int i = 0; i < n; ++i) {
      const uint64_t s = rng() % span;
      const uint64_t len = rng() % 4 == 0 ? rng() % span : rng() % 40;  // a few long calls
      if (rng() % 3 == 0) {
        v.push_back(Gpu(static_cast<int32_t>(rng() % 3), s, s + len));
      } else {
        v.push_back(Io(static_cast<int>(rng() % 4), static_cast<int>(rng() % 5) - 1, s, s + len));
      }
    }
    SCOPED_TRACE("round " + std::to_string(round));
    Check(v);
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace dlprof::analysis
