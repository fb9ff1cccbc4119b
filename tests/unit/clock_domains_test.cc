// Clock domains (lib/read/clock_domains.h): the fit of (monotonic, realtime)
// pairs follows drift and shrugs off a wall-clock step; domains map onto the
// reference domain's clock, which is that of the lowest rank.
#include "lib/read/clock_domains.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dlprof::dump {
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

}  // namespace
}  // namespace dlprof::dump
