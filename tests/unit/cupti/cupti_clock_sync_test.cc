// Placing CUPTI timestamps on our clock: offset estimation from bracketing
// reads of a fake clock pair, the method choice, the zero-timestamp
// detector and the CudaClockSync event.
#include "lib/cupti/clock_sync.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

namespace dlprof::cupti {
namespace {

// A fake pair of clocks. "True" time advances by scripted steps; our clock
// reads it directly, CUPTI's clock reads it minus `offset`. Each bracket
// (ours, theirs, ours) uses three steps: the gap before the CUPTI read and
// the gap after it, which is what preemption or a page fault stretches.
class FakeClocks {
 public:
  FakeClocks(int64_t offset, std::vector<std::pair<uint64_t, uint64_t>> gaps)
      : offset_(offset), gaps_(std::move(gaps)) {}
  uint64_t Ours() {
    if (reads_ % 2 == 1) now_ += gaps_[bracket_].second;  // after the CUPTI read
    ++reads_;
    if (reads_ % 2 == 0) ++bracket_;
    return now_;
  }
  uint64_t Theirs() {
    now_ += gaps_[bracket_].first;
    uint64_t t = static_cast<uint64_t>(static_cast<int64_t>(now_) - offset_);
    cupti_read_at_.push_back(now_);
    return t;
  }
  ClockRead ours() { return [this] { return Ours(); }; }
  ClockRead theirs() { return [this] { return Theirs(); }; }
  std::vector<uint64_t> cupti_read_at_;

 private:
  int64_t offset_;
  std::vector<std::pair<uint64_t, uint64_t>> gaps_;
  uint64_t now_ = 5000000000;
  int reads_ = 0;
  size_t bracket_ = 0;
};

TEST(MeasureOffsetTest, BestOfNPicksTheTightBracket) {
  const int64_t offset = 123456789;
  // Jittery brackets; the fourth is tight (30 ns) but lopsided: its midpoint
  // is 10 ns off the CUPTI read, well inside +-width/2.
  FakeClocks c(offset, {{400, 900}, {2000, 50}, {70, 80}, {10, 20}, {300, 300}, {5000, 5000}});
  OffsetSample s = MeasureOffset(c.ours(), c.theirs(), 6);
  EXPECT_EQ(s.samples, 6);
  EXPECT_EQ(s.width_ns, 30u);
  EXPECT_LE(std::llabs(s.offset_ns - offset), static_cast<long long>(s.width_ns / 2));
  EXPECT_EQ(s.offset_ns, offset + 5);  // mid = read - 10 + 15
  // The sample is placed at the tight bracket's midpoint.
  EXPECT_EQ(s.at_ns, c.cupti_read_at_[3] + 5);
}

TEST(MeasureOffsetTest, NegativeOffsetRealtimeAheadOfMonotonic) {
  // CUPTI's default clock is CLOCK_REALTIME, decades ahead of MONOTONIC_RAW.
  const int64_t offset = -1700000000000000000ll;
  FakeClocks c(offset, {{100, 100}, {40, 40}, {60, 60}});
  OffsetSample s = MeasureOffset(c.ours(), c.theirs(), 3);
  EXPECT_EQ(s.width_ns, 80u);
  EXPECT_EQ(s.offset_ns, offset);
  EXPECT_EQ(ToOurClock(1700000000000000000ull + 5000000123ull, s.offset_ns), 5000000123ull);
}

TEST(MeasureOffsetTest, NoSamples) {
  OffsetSample s = MeasureOffset([] { return uint64_t{1}; }, [] { return uint64_t{2}; }, 0);
  EXPECT_EQ(s.samples, 0);
  EXPECT_EQ(s.width_ns, 0u);
  EXPECT_EQ(s.offset_ns, 0);
}

TEST(ToOurClockTest, Edges) {
  EXPECT_EQ(ToOurClock(0, 100), 0u);    // no timestamp stays none
  EXPECT_EQ(ToOurClock(50, -100), 0u);  // would fall below zero
  EXPECT_EQ(ToOurClock(100, -100), 0u);
  EXPECT_EQ(ToOurClock(101, -100), 1u);
  EXPECT_EQ(ToOurClock(1000, 0), 1000u);
  EXPECT_EQ(ToOurClock(1000, 24), 1024u);
}

TEST(ChooseClockMethodTest, AutoByVersion) {
  // Releases with the zero-timestamp bug convert; others use the callback.
  for (uint32_t v : {24u, 26u, 27u, 28u, 130000u, 130001u}) {
    ClockChoice c = ChooseClockMethod(nullptr, v);
    EXPECT_EQ(c.method, ClockMethod::kConvert) << v;
    EXPECT_EQ(c.reason, ClockReason::kStart);
    EXPECT_TRUE(c.note.empty());
  }
  for (uint32_t v : {17u, 22u, 23u, 130002u, 130100u}) {
    EXPECT_EQ(ChooseClockMethod("auto", v).method, ClockMethod::kCallback) << v;
  }
}

TEST(ChooseClockMethodTest, Forced) {
  ClockChoice c = ChooseClockMethod("callback", 130001);
  EXPECT_EQ(c.method, ClockMethod::kCallback);
  EXPECT_EQ(c.reason, ClockReason::kForced);
  c = ChooseClockMethod("convert", 130100);
  EXPECT_EQ(c.method, ClockMethod::kConvert);
  EXPECT_EQ(c.reason, ClockReason::kForced);
  c = ChooseClockMethod("sometimes", 130100);
  EXPECT_EQ(c.method, ClockMethod::kCallback);
  EXPECT_EQ(c.reason, ClockReason::kStart);
  EXPECT_NE(c.note.find("DLPROF_CUPTI_CLOCK"), std::string::npos);
  EXPECT_EQ(ChooseClockMethod("", 130001).method, ClockMethod::kConvert);
}

TEST(ZeroTimestampDetectorTest, TripsOnARunOfZeros) {
  ZeroTimestampDetector d;
  for (int i = 0; i < 3; ++i) d.Observe(true);
  EXPECT_FALSE(d.tripped());  // three could be CUPTI's documented odd record
  d.Observe(true);
  EXPECT_TRUE(d.tripped());
  for (int i = 0; i < 100; ++i) d.Observe(false);
  EXPECT_TRUE(d.tripped());  // stays tripped
}

TEST(ZeroTimestampDetectorTest, MostlyGoodNeverTrips) {
  ZeroTimestampDetector d;
  for (int i = 0; i < 1000; ++i) d.Observe(i % 10 == 0);
  EXPECT_FALSE(d.tripped());
  EXPECT_EQ(d.zero(), 100u);
  EXPECT_EQ(d.valid(), 900u);
}

TEST(ClockSyncEventTest, Fields) {
  OffsetSample s{-42, 1000, 30, 32};
  Event e = MakeClockSyncEvent(ClockMethod::kConvert, ClockReason::kZeroTimestamps, s, 130001, 9);
  EXPECT_EQ(e.kind, static_cast<uint16_t>(EventKind::CudaClockSync));
  EXPECT_EQ(e.start_ns, 1000u);
  EXPECT_EQ(e.dur_ns, 30u);
  EXPECT_EQ(e.ret, 2);
  EXPECT_EQ(e.offset, -42);
  EXPECT_EQ(e.fd, 2);
  EXPECT_EQ(e.size, 32u);
  EXPECT_EQ(e.aux, 130001u);
  EXPECT_EQ(e.file, 9u);
  EXPECT_EQ(e.err, 0);
  EXPECT_EQ(e.flags, 0);
  EXPECT_STREQ(ClockMethodName(ClockMethod::kCallback), "callback");
  EXPECT_STREQ(ClockMethodName(ClockMethod::kConvert), "convert");
}

}  // namespace
}  // namespace dlprof::cupti
