// TSC ticks to CLOCK_MONOTONIC_RAW nanoseconds.
//
// Where the TSC is the events' clock (lib/core/tsc_clock.h) a traced call
// stores raw ticks and kEventFlagTicks; the writer converts them here before
// encoding, and so does crash recovery for the events a rings sidecar still
// holds (sidecar.h), so no trace ever holds anything but nanoseconds.
//
// A scale is a calibration pair -- the TSC and CLOCK_MONOTONIC_RAW read
// together -- and the rate, in integer fixed point (ns per tick, times
// 2^32): the kernel's raw clock is itself the TSC times a fixed rate, so a
// line through a recent pair is the clock, to the pair's error.
#ifndef DLPROF_LIB_FORMAT_TICK_SCALE_H_
#define DLPROF_LIB_FORMAT_TICK_SCALE_H_

#include <cstdint>

#include "dlprof/format.h"

namespace dlprof::format {

struct TickScale {
  uint64_t ticks = 0;  // the TSC ...
  uint64_t ns = 0;     // ... and CLOCK_MONOTONIC_RAW read with it
  uint64_t mult = 0;   // ns per tick << 32; 0: no scale (nothing to convert)

  // Ticks to ns, rounded, without overflow whatever the distance (a
  // 128-bit product).
  uint64_t Span(uint64_t dticks) const {
    return static_cast<uint64_t>(
        (static_cast<unsigned __int128>(dticks) * mult + (uint64_t{1} << 31)) >> 32);
  }
  uint64_t Ns(uint64_t t) const {
    return t >= ticks ? ns + Span(t - ticks) : ns - Span(ticks - t);
  }
  // An event's start and end to ns, the end through the same line (not the
  // duration on its own), so that the gaps between events stay what the
  // ticks say: rounded apart, they would gain a +-1 ns of noise that costs
  // bytes. A duration whose end was read on another CPU a few ticks behind
  // (TSCs agree only that closely) is 0, not 2^64 - a few.
  void Times(uint64_t start, uint64_t dur, uint64_t* start_ns, uint64_t* dur_ns) const {
    *start_ns = Ns(start);
    *dur_ns = static_cast<int64_t>(dur) <= 0 ? 0 : Ns(start + dur) - *start_ns;
  }
  void Convert(Event& e) const {
    Times(e.start_ns, e.dur_ns, &e.start_ns, &e.dur_ns);
    e.flags = static_cast<uint16_t>(e.flags & ~kEventFlagTicks);
  }
};

}  // namespace dlprof::format

#endif  // DLPROF_LIB_FORMAT_TICK_SCALE_H_
