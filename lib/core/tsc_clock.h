// The clock a traced call reads: the TSC where it is safe, else
// clock_gettime(CLOCK_MONOTONIC_RAW).
//
// Two clock_gettime calls were 60 ns of the ~110 a traced call cost; two
// rdtsc are about 25. So where the TSC is invariant (/proc/cpuinfo's
// constant_tsc and nonstop_tsc) and the kernel itself keeps time with it
// (its clocksource is `tsc`: it checked the CPUs' TSCs agree), a traced call
// stores raw ticks and kEventFlagTicks, and the flusher converts them to
// CLOCK_MONOTONIC_RAW ns before encoding (format::TickScale): the trace
// holds nanoseconds on the one clock, and no reader knows the difference.
// Everything else -- annotations, GPU records, the runtime's own events --
// keeps reading clock_gettime: the flag says per event which it is.
//
// The conversion is a line through a calibration pair (the TSC and
// clock_gettime read together, the tightest of a few brackets) taken at
// every block, at the rate measured from the first pair of the trace to the
// latest. The kernel's raw clock is the TSC times a fixed rate, so its error
// is the pairs' own (tens of ns), recorded in the trace header. A pair that
// disagrees with the line by more than a TSC that behaves can explain
// switches the process to clock_gettime for good: never wrong times.
//
// DLPROF_CLOCK=clock_gettime keeps clock_gettime; DLPROF_CLOCK=tsc takes
// the TSC with another clocksource too (a VM's kvm-clock, itself the TSC
// scaled), where the per-block check is what stands guard.
#ifndef DLPROF_LIB_CORE_TSC_CLOCK_H_
#define DLPROF_LIB_CORE_TSC_CLOCK_H_

#include <cstdint>
#include <string>

#include "dlprof/format.h"
#include "lib/core/clock.h"
#include "lib/core/config.h"
#include "lib/format/tick_scale.h"

namespace dlprof::core {

// kEventFlagTicks while traced calls read the TSC, else 0. Read once per
// call, so a call's two reads and its flag always agree.
extern uint16_t g_tick_flag;

__attribute__((always_inline)) inline uint64_t EventNow(uint16_t tick_flag) {
#if defined(__x86_64__)
  if (__builtin_expect(tick_flag != 0, 1)) return __builtin_ia32_rdtsc();
#endif
  (void)tick_flag;
  return NowNs();
}

// The choice, from DLPROF_CLOCK, the first CPU's flags line of
// /proc/cpuinfo and the kernel's current clocksource; `why` says it for
// the trace header ("tsc" or "clock_gettime: <reason>").
struct ClockDecision {
  bool tsc = false;
  std::string why;
};
ClockDecision ChooseEventClock(ClockSetting setting, bool x86_64, const std::string& cpu_flags,
                               const std::string& clocksource);

// Reads the files and sets g_tick_flag; once at start (a forked child keeps
// its parent's choice). The decision stays for the header.
void SetUpEventClock(ClockSetting setting);
const ClockDecision& EventClockDecision();
// Traced calls read clock_gettime from now on, and the decision says `why`
// (a trace opened afterwards names it): the TSC could not be calibrated.
void FallBackToClockGettime(const std::string& why);

// The TSC and CLOCK_MONOTONIC_RAW read together: the clock read between two
// TSC reads and paired with their midpoint, the tightest of five brackets.
struct TickPair {
  uint64_t ticks = 0;
  uint64_t ns = 0;
  uint32_t error_ns = 0;  // half the bracket's width in ns, >= 1
};
TickPair ReadTickPair();

// The flusher's calibration: a scale for each block's events.
class TickCalibration {
 public:
  // At trace open (and in a forked child's new trace): the first pair and
  // a first rate. False when clock_gettime did not move on against the TSC
  // within a bound (it stands still): no rate, and the caller falls back.
  bool Start();
  // At each block, before its events are drained: a fresh pair and rate.
  // False when the TSC disagrees with clock_gettime, or clock_gettime stood
  // still (g_tick_flag is then cleared); the scale still converts the ticks
  // already recorded. Waits for clock_gettime within the same bound, once.
  bool Update();
  const format::TickScale& scale() const { return scale_; }
  // The first pair's error bound, for the header.
  uint32_t start_error_ns() const { return anchor_.error_ns; }
  bool started() const { return anchor_.ns != 0; }

  // The check itself, on given pairs (tests): would `p` be taken, given the
  // anchor and the scale in force.
  static bool Agrees(const TickPair& anchor, const format::TickScale& scale, const TickPair& p);

 private:
  TickPair anchor_;
  format::TickScale scale_;
  bool stuck_ = false;  // clock_gettime stood still: never wait for it again
};

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_TSC_CLOCK_H_
