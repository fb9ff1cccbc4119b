// The one clock of every event: CLOCK_MONOTONIC_RAW in integer nanoseconds.
// clock_gettime on this clock is served by the vDSO, so reading it makes no
// system call.
#ifndef DLPROF_LIB_CORE_CLOCK_H_
#define DLPROF_LIB_CORE_CLOCK_H_

#include <time.h>

#include <cstdint>

namespace dlprof::core {

inline uint64_t NowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t RealtimeNs() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// A (monotonic_raw, realtime) pair: realtime read between two monotonic
// reads, and paired with their midpoint, so the pair is off by at most half
// the time between them -- the error bound, kept with the pair (blocks
// record it; the decoder aligns hosts no better than it). The tightest of a
// few attempts: a preemption between the reads only widens one of them.
struct ClockPair {
  uint64_t mono_ns;
  uint64_t real_ns;
  uint32_t error_ns;  // >= 1: half the width, rounded up
};

inline ClockPair ReadClockPair() {
  ClockPair best{0, 0, 0};
  uint64_t best_width = ~uint64_t{0};
  for (int i = 0; i < 5; ++i) {
    uint64_t a = NowNs();
    uint64_t r = RealtimeNs();
    uint64_t b = NowNs();
    if (b - a < best_width) {
      best_width = b - a;
      best = {a + (b - a) / 2, r, 0};
    }
  }
  const uint64_t half = (best_width + 1) / 2;
  best.error_ns = half == 0 ? 1 : half > 0xffffffffu ? 0xffffffffu : static_cast<uint32_t>(half);
  return best;
}

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_CLOCK_H_
