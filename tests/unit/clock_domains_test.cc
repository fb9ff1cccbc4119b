// Clock domains (lib/read/clock_domains.h): the fit of (monotonic, realtime)
// pairs follows drift and shrugs off a wall-clock step; domains map onto the
// reference domain's clock, which is that of the lowest rank; offsets
// measured through MPI win over the wall clock.
#include "lib/read/clock_domains.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dlprof::read {
namespace {

constexpr uint64_t kSec = 1000000000;

TEST(ClockFitTest, FollowsDriftAndIgnoresAStep) {
  // real = mono + 5 s + 30 us per s of mono, from mono 100 s to 3700 s; one
  // pair after the wall clock was stepped by 2 s.
  std::vector<ClockPair> pairs;
  for (uint64_t m = 100 * kSec; m <= 3700 * kSec; m += 300 * kSec) {
    const uint64_t drift = (m - 100 * kSec) / kSec * 30000;
    pairs.push_back({m, m + 5 * kSec + drift, 1000});
  }
  pairs[5].real_ns += 2 * kSec;
  const ClockFit fit = FitClock(pairs);
  EXPECT_NEAR(static_cast<double>(fit.drift_ppb), 30000.0, 10.0);
  // Real time predicted at each unstepped pair within a microsecond.
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (i == 5) continue;
    const int64_t span = static_cast<int64_t>(pairs[i].mono_ns - fit.anchor_ns);
    const int64_t predicted = static_cast<int64_t>(pairs[i].mono_ns) + fit.offset_ns +
                              static_cast<int64_t>(static_cast<__int128>(fit.drift_ppb) * span /
                                                   1000000000);
    EXPECT_NEAR(static_cast<double>(predicted - static_cast<int64_t>(pairs[i].real_ns)), 0.0,
                1000.0)
        << i;
  }
  EXPECT_LT(fit.error_ns, 10000u);
}

TEST(ClockFitTest, OnePairIsAnOffset) {
  const ClockFit fit = FitClock({{10 * kSec, 1700000000 * kSec, 500}});
  EXPECT_EQ(fit.drift_ppb, 0);
  EXPECT_EQ(fit.offset_ns, static_cast<int64_t>(1700000000 * kSec - 10 * kSec));
  EXPECT_EQ(fit.error_ns, 500u);
}

CatalogEntry Trace(const std::string& boot, const std::string& ns, int32_t rank, uint64_t mono,
                   uint64_t real) {
  CatalogEntry t;
  t.opened = true;
  t.path = boot + ns + std::to_string(rank);
  t.info.boot_id = boot;
  t.info.time_ns = ns;
  t.info.host = "host-" + boot;
  t.info.rank = rank;
  t.info.clock_mono_ns = mono;
  t.info.clock_real_ns = real;
  t.events = 10;
  return t;
}

std::vector<ClockPair> NoBlockPairs(const CatalogEntry&) { return {}; }

TEST(AlignClocksTest, OneDomainMapsNothing) {
  TraceCatalog c;
  c.Add(Trace("b1", "t1", -1, 5 * kSec, 1000 * kSec));
  c.Add(Trace("b1", "t1", -1, 7 * kSec, 1002 * kSec));
  const ClockAlignment a = AlignClocks(c, NoBlockPairs);
  EXPECT_TRUE(a.identity());
  EXPECT_EQ(a.of(1).Map(123), 123u);
}

TEST(AlignClocksTest, ADomainBootedADayEarlierLandsOnTheReference) {
  // Host b2 booted a day before b1: its monotonic clock reads a day more at
  // the same wall-clock instant. Rank 0 is on b1: the reference.
  const uint64_t day = 86400 * kSec;
  TraceCatalog c;
  c.Add(Trace("b2", "t", 1, 10 * kSec + day, 5000 * kSec));
  c.Add(Trace("b1", "t", 0, 10 * kSec, 5000 * kSec + 1000));
  c.Add(Trace("b2", "t", 2, 20 * kSec + day, 5010 * kSec));
  const ClockAlignment a = AlignClocks(c, NoBlockPairs);
  ASSERT_EQ(a.domains.size(), 2u);
  EXPECT_TRUE(a.domains[0].reference);
  EXPECT_EQ(a.domains[0].host, "host-b1");
  EXPECT_EQ(a.of(1).Map(10 * kSec), 10 * kSec);
  // The same wall-clock instant on the reference clock, within the pairs'
  // disagreement (1 us here).
  const uint64_t mapped = a.of(0).Map(10 * kSec + day);
  EXPECT_NEAR(static_cast<double>(mapped), static_cast<double>(10 * kSec - 1000), 2000.0);
  EXPECT_EQ(a.domain_of[0], a.domain_of[2]);
  EXPECT_EQ(a.domains[1].traces, 2u);
}

// A trace whose header did not open (an empty file: a process killed as it
// started, a full disk) says nothing of its clock. Before, it was a domain
// of its own, key "", and, sorting first, the reference: every time of the
// real traces went through their wall clocks onto a clock of zeros
// (1.8e18 ns off), and the summary said "2 clock domains".
TEST(AlignClocksTest, ATraceThatDidNotOpenIsNoDomain) {
  CatalogEntry empty;
  empty.path = "aaa-empty.dlprof";
  empty.error = "aaa-empty.dlprof: empty file";
  TraceCatalog c;
  c.Add(empty);
  c.Add(Trace("b1", "t1", -1, 5 * kSec, 1000 * kSec));
  c.Add(Trace("b1", "t1", -1, 7 * kSec, 1002 * kSec));
  ClockAlignment a = AlignClocks(c, NoBlockPairs);
  EXPECT_TRUE(a.identity());
  ASSERT_EQ(a.domains.size(), 1u);
  EXPECT_EQ(a.domains[0].traces, 2u);
  EXPECT_EQ(a.domains[0].host, "host-b1");
  // Two real domains: the reference is the first trace that opened (no
  // rank), and the empty file is put with it, mapping nothing.
  const uint64_t day = 86400 * kSec;
  c.Add(Trace("b2", "t", -1, 10 * kSec + day, 1005 * kSec));
  a = AlignClocks(c, NoBlockPairs);
  ASSERT_EQ(a.domains.size(), 2u);
  EXPECT_EQ(a.domains[0].host, "host-b1");
  EXPECT_EQ(a.domains[0].traces, 2u);
  EXPECT_EQ(a.of(1).Map(5 * kSec), 5 * kSec);
  EXPECT_EQ(a.domain_of[0], 0u);
  EXPECT_EQ(a.of(0).Map(123), 123u);
}

TEST(FitOffsetsTest, OneMeasurementIsAnOffsetTwoGiveTheDrift) {
  EXPECT_FALSE(FitOffsets({}).mapped);
  const OffsetFit one = FitOffsets({{10 * kSec, 3 * kSec, 800, 0}});
  EXPECT_TRUE(one.mapped);
  EXPECT_EQ(one.shift_ns, -7 * static_cast<int64_t>(kSec));
  EXPECT_EQ(one.drift_ppb, 0);
  EXPECT_EQ(one.error_ns, 800u);
  // At finalize, 1,000 s later, the peer's clock gained 20 ms more: 20 ppm;
  // a third measurement between them, 1 us off the line.
  const OffsetFit two = FitOffsets({{1010 * kSec, 1003 * kSec + 20000000, 500, 0},
                                    {10 * kSec, 3 * kSec, 800, 0},
                                    {510 * kSec, 503 * kSec + 10000000 + 1000, 300, 0}});
  EXPECT_EQ(two.measurements, 3u);
  EXPECT_EQ(two.anchor_ns, 10 * kSec);
  EXPECT_EQ(two.drift_ppb, 20000);
  EXPECT_EQ(two.error_ns, 1300u);
}

// Offsets as a rank's trace would hold them.
std::vector<ClockOffset> g_offsets;
std::vector<ClockOffset> GivenOffsets(const CatalogEntry&) { return g_offsets; }

TEST(AlignClocksTest, MeasuredOffsetsWinOverAWrongWallClock) {
  // b2 booted a day before b1, and its wall clock is 5 s ahead (a wrong
  // NTP setup): through the wall clock, b2's times land 5 s late. Rank 1
  // (on b2) measured b2's clock against rank 0's at init and finalize. b3
  // measured nothing: it goes through its (right) wall clock.
  const uint64_t day = 86400 * kSec;
  TraceCatalog c;
  CatalogEntry r1 = Trace("b2", "t", 1, 10 * kSec + day, 5005 * kSec);
  r1.block_flags = kBlockFlagClockOffset;
  c.Add(r1);
  c.Add(Trace("b1", "t", 0, 10 * kSec, 5000 * kSec));
  c.Add(Trace("b3", "t", -1, 30 * kSec, 5020 * kSec));
  g_offsets = {{11 * kSec + day, 11 * kSec + 250, 400, 0},
               {61 * kSec + day, 61 * kSec + 250, 300, 0}};
  const ClockAlignment a = AlignClocks(c, NoBlockPairs, GivenOffsets);
  ASSERT_EQ(a.domains.size(), 3u);
  EXPECT_EQ(a.domains[0].method, "reference");
  EXPECT_EQ(a.of(0).method, "mpi");
  EXPECT_EQ(a.of(0).measurements, 2u);
  EXPECT_EQ(a.of(0).error_ns, 400u);
  EXPECT_EQ(a.of(0).Map(20 * kSec + day), 20 * kSec + 250);
  EXPECT_EQ(a.of(2).method, "wall clock");
  EXPECT_NEAR(static_cast<double>(a.of(2).Map(30 * kSec)), static_cast<double>(30 * kSec), 1.0);
  EXPECT_EQ(ClockMethod(a.domains), "mpi and wall clock");
}

TEST(AlignClocksTest, OffsetsAgainstARankNotTracedAreNotUsed) {
  // Rank 0's trace is missing: the measurements (against rank 0) have no
  // clock to refer to, and the wall clocks decide.
  const uint64_t day = 86400 * kSec;
  TraceCatalog c;
  CatalogEntry r2 = Trace("b2", "t", 2, 10 * kSec + day, 5000 * kSec);
  r2.block_flags = kBlockFlagClockOffset;
  c.Add(r2);
  c.Add(Trace("b1", "t", 1, 10 * kSec, 5000 * kSec));
  g_offsets = {{11 * kSec + day, 99 * kSec, 400, 0}};
  const ClockAlignment a = AlignClocks(c, NoBlockPairs, GivenOffsets);
  EXPECT_EQ(a.of(0).method, "wall clock");
  EXPECT_EQ(a.of(0).Map(10 * kSec + day), 10 * kSec);
  EXPECT_EQ(ClockMethod(a.domains), "wall clock");
}

}  // namespace
}  // namespace dlprof::read
