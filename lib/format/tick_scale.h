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
    if (TicksInAux(e)) e.aux = AsyncAux(e.aux);
    e.flags = static_cast<uint16_t>(e.flags & ~kEventFlagTicks);
  }

  // An asynchronous request's event in ticks carries, in aux bits 0-31, the
  // ticks from its completion to its reaping (PackTicksAfter): the format's
  // microseconds (PackAsyncAux), the rest of aux as it was.
  static bool TicksInAux(const Event& e) {
    return e.kind >= kFirstAsyncKind && e.kind <= kLastAsyncKind &&
           e.kind != static_cast<uint16_t>(EventKind::UringEnter) &&
           e.kind != static_cast<uint16_t>(EventKind::UringRing);
  }
  uint64_t AsyncAux(uint64_t aux) const {
    const uint64_t after_ns = Span(UnpackTicksAfter(static_cast<uint32_t>(aux)));
    return (aux & ~uint64_t{0xffffffff}) | (PackAsyncAux(after_ns, 0, 0) & 0xffffffffu);
  }

  // The ticks after, in 32 bits: the program's thread cannot make them
  // microseconds (no scale there) and 2^32 ticks are only a second or two.
  // A float of sorts, 5 bits of exponent over 27 of mantissa: exact below
  // 2^27 ticks (tens of ms), within 2^-26 above, saturating past 2^58.
  static constexpr uint64_t kAfterExact = uint64_t{1} << 27;
  static uint32_t PackTicksAfter(uint64_t ticks) {
    if (__builtin_expect(ticks < kAfterExact, 1)) return static_cast<uint32_t>(ticks);
    const int shift = 64 - 27 - __builtin_clzll(ticks);  // 1 and up
    if (shift > 31) return 0xffffffffu;
    return static_cast<uint32_t>(shift) << 27 | static_cast<uint32_t>(ticks >> shift);
  }
  static uint64_t UnpackTicksAfter(uint32_t packed) {
    return uint64_t{packed & (kAfterExact - 1)} << (packed >> 27);
  }
  static constexpr uint16_t kFirstAsyncKind = 256, kLastAsyncKind = 319;
};

// The same line, cheaper for the writer's loop, which converts every event
// of a block: TickScale::Ns() branches on the side of the pair a tick lies
// and takes a 128-bit product from there, twice per event (43 instructions,
// a tenth of the flusher's). The events a block drains were read before its
// pair, most within a second, so TickLine measures them forward from a base
// 2^32 ticks behind the pair: 2^32 ticks are exactly `mult` ns, so the base
// is exact, and below a tick a ns (a TSC of 1 GHz and more: mult < 2^32) the
// product of 2^32 ticks at most fits 64 bits: one multiply, no branch on the
// side. Rounding up to the pair from below with 2^31 - 1 gives what rounding
// down to it from above with 2^31 does (a tie goes the same way), so every
// result equals TickScale's; a tick outside [base, pair] takes its path.
class TickLine {
 public:
  TickLine() = default;
  explicit TickLine(const TickScale& scale) : scale_(scale) {
    const bool fits = scale.ticks >> 32 != 0 && scale.mult >> 32 == 0;
    reach_ = fits ? uint64_t{1} << 32 : 0;
    base_ticks_ = scale.ticks - reach_;
    base_ns_ = fits ? scale.ns - scale.mult : scale.ns;
  }

  // TickScale::Times through this line: the start's distance from the base
  // taken once and the end's from it, both tested against the reach (a tick
  // outside takes TickScale's path). An end a few ticks before its start (a
  // "negative" duration) comes out before it on the line, or out of reach,
  // and so gives a duration of 0, as TickScale's does.
  void Times(uint64_t start, uint64_t dur, uint64_t* start_ns, uint64_t* dur_ns) const {
    const uint64_t d = start - base_ticks_;
    const uint64_t d_end = d + dur;
    if (__builtin_expect(d > reach_ || d_end > reach_, 0)) {
      return scale_.Times(start, dur, start_ns, dur_ns);
    }
    const uint64_t from_base = (d * scale_.mult + ((uint64_t{1} << 31) - 1)) >> 32;
    const uint64_t to_end = (d_end * scale_.mult + ((uint64_t{1} << 31) - 1)) >> 32;
    *start_ns = base_ns_ + from_base;
    *dur_ns = to_end > from_base ? to_end - from_base : 0;
  }

  const TickScale& scale() const { return scale_; }

 private:
  TickScale scale_;
  uint64_t base_ticks_ = 0;
  uint64_t base_ns_ = 0;
  uint64_t reach_ = 0;  // the pair is `reach_` ticks past the base
};

}  // namespace dlprof::format

#endif  // DLPROF_LIB_FORMAT_TICK_SCALE_H_
