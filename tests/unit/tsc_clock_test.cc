// The TSC as the events' clock (lib/core/tsc_clock.h): when it is chosen,
// the tick-to-ns arithmetic, the check that makes a misbehaving TSC fall
// back, and the conversion held against clock_gettime over seconds.
#include "lib/core/tsc_clock.h"

#include <gtest/gtest.h>
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "lib/format/tick_scale.h"

namespace dlprof::core {
namespace {

const char kInvariant[] = " fpu tsc msr constant_tsc rep_good nopl nonstop_tsc cpuid";

TEST(TscClockTest, ChosenOnlyWhereTheKernelKeepsTimeWithAnInvariantTsc) {
  EXPECT_TRUE(ChooseEventClock(ClockSetting::kAuto, true, kInvariant, "tsc").tsc);
  EXPECT_EQ(ChooseEventClock(ClockSetting::kAuto, true, kInvariant, "tsc").why, "tsc");
  ClockDecision kvm = ChooseEventClock(ClockSetting::kAuto, true, kInvariant, "kvm-clock");
  EXPECT_FALSE(kvm.tsc);
  EXPECT_EQ(kvm.why, "clock_gettime: the kernel's clocksource is kvm-clock, not tsc");
  // Not invariant: neither flag may be missing (nor match inside a word).
  EXPECT_FALSE(ChooseEventClock(ClockSetting::kAuto, true, " tsc constant_tsc", "tsc").tsc);
  EXPECT_FALSE(ChooseEventClock(ClockSetting::kAuto, true, " nonstop_tsc", "tsc").tsc);
  EXPECT_FALSE(
      ChooseEventClock(ClockSetting::kAuto, true, " xconstant_tsc nonstop_tscx", "tsc").tsc);
  EXPECT_FALSE(ChooseEventClock(ClockSetting::kTsc, true, " constant_tsc", "tsc").tsc);
  EXPECT_FALSE(ChooseEventClock(ClockSetting::kAuto, false, kInvariant, "tsc").tsc);
  EXPECT_FALSE(ChooseEventClock(ClockSetting::kAuto, true, kInvariant, "").tsc);
}

TEST(TscClockTest, SettingsOverrideTheClocksourceOnly) {
  ClockDecision off = ChooseEventClock(ClockSetting::kClockGettime, true, kInvariant, "tsc");
  EXPECT_FALSE(off.tsc);
  EXPECT_EQ(off.why, "clock_gettime: DLPROF_CLOCK=clock_gettime");
  ClockDecision forced = ChooseEventClock(ClockSetting::kTsc, true, kInvariant, "kvm-clock");
  EXPECT_TRUE(forced.tsc);
  EXPECT_EQ(forced.why, "tsc (DLPROF_CLOCK=tsc; the kernel's clocksource is kvm-clock)");
}

TEST(TickScaleTest, ConvertsBothWaysFromThePairWithoutOverflow) {
  // 2.5 GHz: 0.4 ns a tick.
  format::TickScale s{1000000, 5000000000ull, (uint64_t{2} << 32) / 5};
  EXPECT_NEAR(static_cast<double>(s.Ns(1000000 + 2500000000ull)), 6000000000.0, 1);
  EXPECT_NEAR(static_cast<double>(s.Ns(1000000 - 250000)), 5000000000.0 - 100000, 1);
  // A day of ticks does not overflow the product.
  const uint64_t day = 86400ull * 2500000000ull;
  EXPECT_NEAR(static_cast<double>(s.Span(day)), 86400e9, 86400e9 * 1e-9);
  Event e{};
  e.flags = kEventFlagTicks | kEventFlagNested;
  e.start_ns = 1000000 + 25;
  e.dur_ns = 2500;
  s.Convert(e);
  EXPECT_EQ(e.flags, kEventFlagNested);
  EXPECT_EQ(e.start_ns, 5000000010u);
  EXPECT_EQ(e.dur_ns, 1000u);
  // An end read on a CPU whose TSC is a few ticks behind: 0, not 2^64.
  e.flags = kEventFlagTicks;
  e.dur_ns = static_cast<uint64_t>(-3);
  s.Convert(e);
  EXPECT_EQ(e.dur_ns, 0u);
}

// An asynchronous request in ticks carries its reaping delay in ticks in
// aux bits 0-31 (a 5-bit exponent over 27 bits): the writer makes it the
// format's microseconds and leaves the opcode and submitter as they were.
TEST(TickScaleTest, AnAsyncRequestsReapingDelayBecomesMicroseconds) {
  using format::TickScale;
  const uint64_t cases[] = {0, 1, uint64_t{1} << 26, (uint64_t{1} << 27) - 1,
                            uint64_t{1} << 27, 123456789012ull, uint64_t{1} << 58};
  for (uint64_t ticks : cases) {
    const uint64_t back = TickScale::UnpackTicksAfter(TickScale::PackTicksAfter(ticks));
    if (ticks < TickScale::kAfterExact) {
      EXPECT_EQ(back, ticks);
    } else {
      EXPECT_LE(back, ticks);
      EXPECT_GE(static_cast<double>(back), static_cast<double>(ticks) * (1 - 1.0 / (1 << 26)));
    }
  }
  // Past 2^58 ticks (years): the largest, which saturates the microseconds.
  EXPECT_EQ(TickScale::PackTicksAfter(~uint64_t{0}), 0xffffffffu);
  // 2.5 GHz.
  format::TickScale s{1000000, 5000000000ull, (uint64_t{2} << 32) / 5};
  Event e{};
  e.kind = static_cast<uint16_t>(EventKind::LinuxAioPread);
  e.flags = kEventFlagTicks;
  e.start_ns = 1000000;
  e.dur_ns = 2500;
  e.aux = PackAsyncAux(0, 7, 4242) | TickScale::PackTicksAfter(2500000 * 3 + 7);  // 3 ms
  s.Convert(e);
  EXPECT_EQ(e.aux, PackAsyncAux(3000000, 7, 4242));
  e.flags = kEventFlagTicks;
  e.aux = PackAsyncAux(0, 1, 99) | TickScale::PackTicksAfter(2500000000ull * 3000);
  s.Convert(e);  // 3000 s: within 2^-26
  EXPECT_NEAR(static_cast<double>(UnpackAsyncAux(e.aux).reaped_after_us), 3e9, 3e9 / (1 << 26));
  EXPECT_EQ(UnpackAsyncAux(e.aux).submit_tid, 99);
  EXPECT_EQ(UnpackAsyncAux(e.aux).opcode, 1);
  e.flags = kEventFlagTicks;
  e.aux = TickScale::PackTicksAfter(2500000000ull * 7000);
  s.Convert(e);  // 7000 s: saturated, as PackAsyncAux saturates
  EXPECT_EQ(UnpackAsyncAux(e.aux).reaped_after_us, 0xffffffffu);
  // io_uring_enter is a call: its aux (the flags) stays.
  e.kind = static_cast<uint16_t>(EventKind::UringEnter);
  e.flags = kEventFlagTicks;
  e.aux = 5;
  s.Convert(e);
  EXPECT_EQ(e.aux, 5u);
}

// The writer's faster line must give TickScale's every nanosecond, ties of
// the rounding included, on both sides of the pair and beyond its reach.
TEST(TickScaleTest, TheWritersLineGivesTheScalesEveryResult) {
  std::mt19937_64 rng(33);
  const uint64_t rates[] = {(uint64_t{2} << 32) / 5, uint64_t{1} << 31,  // 2.5, 2 GHz (uint64_t{10} << 32) / 30,
                            (uint64_t{1} << 32) + 12345, 0};
  const uint64_t pair_ticks[] = {uint64_t{1} << 20, uint64_t{3} << 32, uint64_t{1} << 45,
                                 (uint64_t{1} << 40) + 7, ~uint64_t{0} >> 1};
  for (uint64_t mult : rates) {
    for (uint64_t at : pair_ticks) {
      const format::TickScale scale{at, 1000000000ull + rng() % 1000000000000ull, mult};
      const format::TickLine line(scale);
      auto expect_same = [&](uint64_t t, uint64_t dur) {
        uint64_t a_start = 0, a_dur = 0, b_start = 0, b_dur = 0;
        scale.Times(t, dur, &a_start, &a_dur);
        line.Times(t, dur, &b_start, &b_dur);
        ASSERT_EQ(a_start, b_start) << "tick " << t << " rate " << mult << " pair " << at;
        ASSERT_EQ(a_dur, b_dur) << "tick " << t << " rate " << mult << " pair " << at;
      };
      for (int i = 0; i < 20000; ++i) {
        const uint64_t back = rng() >> (rng() % 64);  // all distances, near ones most
        expect_same(at - back, rng() % 5000000);
        expect_same(at + (rng() >> (rng() % 63 + 1)), rng() % 5000);  // shifts 1-63
        expect_same(at - back, static_cast<uint64_t>(-static_cast<int64_t>(rng() % 100)));
      }
      // At half a ns a tick every odd distance rounds from exactly halfway.
      if (mult == uint64_t{1} << 31) {
        for (uint64_t d = 1; d < 4000; d += 2) expect_same(at - d, d + 2);
      }
      expect_same(at, 0);
      expect_same(at, static_cast<uint64_t>(-3));
    }
  }
}

TEST(TickCalibrationTest, APairOffTheLineIsRefused) {
  TickPair anchor{1000, 1000000000, 20};
  // 1 GHz, measured over a second.
  format::TickScale scale{1000 + 1000000000, 2000000000, uint64_t{1} << 32};
  TickPair p{scale.ticks + 1000000, scale.ns + 1000000, 20};  // on the line, 1 ms on
  EXPECT_TRUE(TickCalibration::Agrees(anchor, scale, p));
  p.ns += 5000;  // 5 us off: within 10 us + 500 ppm
  EXPECT_TRUE(TickCalibration::Agrees(anchor, scale, p));
  p.ns += 50000;  // 55 us off in 1 ms: the TSC stopped or jumped
  EXPECT_FALSE(TickCalibration::Agrees(anchor, scale, p));
  TickPair back{scale.ticks - 10, scale.ns + 1000, 20};  // the TSC went back
  EXPECT_FALSE(TickCalibration::Agrees(anchor, scale, back));
}

uint64_t MonoRaw() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// The conversion the flusher makes, held against clock_gettime over three
// seconds: TSC reads, each between two clock reads, are taken for 50 ms (a
// block's events), then the calibration is updated (the block's pair) and
// each read converted with that scale must land within its bracket, 1 us
// either side. Only where this machine has an invariant TSC.
TEST(TickCalibrationTest, TicksConvertWithin1usOfClockGettimeOverSeconds) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "no TSC";
#else
  SetUpEventClock(ClockSetting::kTsc);
  if (!EventClockDecision().tsc) GTEST_SKIP() << EventClockDecision().why;
  TickCalibration cal;
  cal.Start();
  struct Bracket {
    uint64_t before, ticks, after;
  };
  std::vector<Bracket> block;
  const uint64_t begin = MonoRaw();
  uint64_t checks = 0, worst = 0;
  uint64_t next_block = begin + 50000000;
  while (MonoRaw() - begin < 3000000000ull) {
    for (int i = 0; i < 200; ++i) {
      const uint64_t a = MonoRaw();
      const uint64_t t = __builtin_ia32_rdtsc();
      const uint64_t b = MonoRaw();
      if (b - a <= 2000) block.push_back({a, t, b});  // else preempted: no bracket
    }
    struct timespec pause = {0, 1000000};
    nanosleep(&pause, nullptr);
    if (MonoRaw() < next_block) continue;
    ASSERT_TRUE(cal.Update());
    for (const Bracket& k : block) {
      const uint64_t ns = cal.scale().Ns(k.ticks);
      const uint64_t miss = ns < k.before ? k.before - ns : ns > k.after ? ns - k.after : 0;
      worst = miss > worst ? miss : worst;
      ++checks;
    }
    block.clear();
    next_block = MonoRaw() + 50000000;
  }
  EXPECT_GT(checks, 10000u);
  EXPECT_LE(worst, 1000u) << "worst miss " << worst << " ns in " << checks << " checks";
  std::printf("TSC against clock_gettime: %llu checks over 3 s, worst %llu ns outside the bracket, "
              "calibration error %u ns\n",
              static_cast<unsigned long long>(checks), static_cast<unsigned long long>(worst),
              cal.start_error_ns());
#endif
}

}  // namespace
}  // namespace dlprof::core
