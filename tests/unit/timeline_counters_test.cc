// The timelines' binned counters (lib/analysis/meters/timeline_counters.h):
// sums per 100 ms bin with a zero after each busy stretch, busy time as the
// union of intervals (overlaps counted once), split across bins, and the
// bytes a call adds to the bandwidth counters.
#include "lib/analysis/meters/timeline_counters.h"

#include <gtest/gtest.h>

#include <tuple>

#include "dlprof/catalogue.h"
#include <vector>

namespace dlprof::analysis {
namespace {

using Sample = std::tuple<size_t, uint64_t, uint64_t>;  // counter, bin start, value
constexpr uint64_t kMs = 1000 * 1000;

TEST(TimelineCounters, SumsPerBinAndAZeroAfterEachStretch) {
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

TEST(TimelineCounters, BusyTimeCountsOverlapsOnceAcrossBins) {
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

TEST(TimelineCounters, BandwidthCountsTheBytesFileCallsMoved) {
  auto event = [](EventKind kind, int64_t ret, uint64_t aux, uint16_t flags = 0) {
    Event e{};
    e.kind = static_cast<uint16_t>(kind);
    e.ret = ret;
    e.aux = aux;
    e.flags = flags;
    return e;
  };
  BandwidthBytes io{};
  // POSIX: what the call returned; a failed call moved nothing.
  ASSERT_TRUE(BandwidthOf(event(EventKind::Pread, 4096, 0), &io));
  EXPECT_EQ(io.bytes, 4096u);
  EXPECT_FALSE(io.write);
  ASSERT_TRUE(BandwidthOf(event(EventKind::Pwrite, -1, 0), &io));
  EXPECT_EQ(io.bytes, 0u);
  EXPECT_TRUE(io.write);
  // STDIO: fread returns items; the bytes are in aux.
  ASSERT_TRUE(BandwidthOf(event(EventKind::Fread, 3, 3 * 512), &io));
  EXPECT_EQ(io.bytes, 3u * 512);
  // Counted by the call it is nested in; GPU copies and other calls: none.
  EXPECT_FALSE(BandwidthOf(event(EventKind::Pread, 4096, 0, kEventFlagNested), &io));
  EXPECT_FALSE(BandwidthOf(event(EventKind::CudaMemcpy, 0, 0), &io));
  EXPECT_FALSE(BandwidthOf(event(EventKind::Open, 3, 0), &io));
  EXPECT_FALSE(BandwidthOf(event(static_cast<EventKind>(9999), 1, 1), &io));
}

}  // namespace
}  // namespace dlprof::analysis
