// The binned counters of the Perfetto exporter (tools/dump/perfetto_counters.h):
// sums per 100 ms bin with a zero after each busy stretch, and busy time as
// the union of intervals (overlaps counted once), split across bins.
#include "tools/dump/perfetto_counters.h"

#include <gtest/gtest.h>

#include <tuple>
#include <vector>

namespace dlprof::dump {
namespace {

using Sample = std::tuple<size_t, uint64_t, uint64_t>;  // counter, bin start, value
constexpr uint64_t kMs = 1000 * 1000;

TEST(PerfettoCounters, SumsPerBinAndAZeroAfterEachStretch) {
  std::vector<Sample> got;
  BinnedSums sums([&](size_t c, uint64_t at, uint64_t v) { got.emplace_back(c, at, v); });
  sums.Add(0, 10 * kMs, 100);   // bin 0
  sums.Add(1, 20 * kMs, 7);     // bin 0, another counter
  sums.Add(0, 90 * kMs, 50);    // bin 0
  sums.Add(0, 150 * kMs, 1);    // bin 1
  sums.Add(0, 450 * kMs, 2);    // bin 4: bins 2 and 3 idle
  sums.Add(1, 460 * kMs, 0);    // nothing moved: no sample of its own
  sums.Finish();
  const std::vector<Sample> want = {
      {0, 0, 150}, {1, 0, 7},             // bin 0
      {0, 100 * kMs, 1}, {1, 100 * kMs, 0},  // bin 1: counter 1 drops
      {0, 200 * kMs, 0},                  // bin 2: counter 0 drops; bin 3 says nothing
      {0, 400 * kMs, 2},                  // bin 4
      {0, 500 * kMs, 0},                  // the drop after the last stretch
  };
  EXPECT_EQ(got, want);
}

TEST(PerfettoCounters, BusyTimeCountsOverlapsOnceAcrossBins) {
  std::vector<Sample> got;
  BusyTime busy([&](size_t c, uint64_t at, uint64_t v) { got.emplace_back(c, at, v); });
  busy.Add(0, 10 * kMs, 20 * kMs);
  busy.Add(0, 15 * kMs, 30 * kMs);   // overlaps: the stretch is 10..30, 20 ms
  busy.Add(1, 50 * kMs, 60 * kMs);   // another device: 10 ms
  busy.Add(0, 90 * kMs, 120 * kMs);  // 10 ms in bin 0, 20 ms in bin 1
  busy.Add(0, 450 * kMs, 451 * kMs); // bin 4, after idle bins
  busy.Finish();
  const std::vector<Sample> want = {
      // Device 0: 10..30 and 90..100 in bin 0, 100..120 in bin 1, then the
      // drop; bin 4's millisecond and its drop come out at the end.
      {0, 0, 30 * kMs}, {0, 100 * kMs, 20 * kMs}, {0, 200 * kMs, 0},
      {0, 400 * kMs, 1 * kMs}, {0, 500 * kMs, 0},
      {1, 0, 10 * kMs}, {1, 100 * kMs, 0},
  };
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace dlprof::dump
