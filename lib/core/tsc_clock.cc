// The TSC as the events' clock, its choice and its calibration (tsc_clock.h).
#include "lib/core/tsc_clock.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "lib/core/raw_log.h"

namespace dlprof::core {

uint16_t g_tick_flag = 0;

namespace {

// Built on first use and never destroyed, not a namespace-scope object: the
// runtime's constructor chooses the clock before this file's dynamic
// initialisers run (it comes first in the link), and one of those would
// then construct the decision over the choice -- or, with a short `why`
// such as "tsc", copy into a string not constructed yet and crash every
// traced program (seen on the GPU machines, whose clocksource is the TSC).
// A forked child's trace header and the exit's flush read it later still.
ClockDecision& Decision() {
  static ClockDecision* const decision = new ClockDecision{false, "clock_gettime"};
  return *decision;
}

// The first `max` bytes of a /proc or /sys file (raw system calls: the
// tracer's own reads are never traced); empty when it cannot be read.
std::string ReadHead(const char* path, size_t max) {
  std::string out;
  int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC));
  if (fd < 0) return out;
  out.resize(max);
  size_t got = 0;
  while (got < max) {
    long n = syscall(SYS_read, fd, &out[got], max - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  syscall(SYS_close, fd);
  out.resize(got);
  return out;
}

// The first "flags" line of /proc/cpuinfo (every CPU's is the same).
std::string CpuFlags() {
  // The first processor's block is a few KiB; its flags line comes early.
  const std::string info = ReadHead("/proc/cpuinfo", 16384);
  size_t at = 0;
  while (at < info.size()) {
    size_t end = info.find('\n', at);
    if (end == std::string::npos) end = info.size();
    if (info.compare(at, 5, "flags") == 0) {
      size_t colon = info.find(':', at);
      if (colon != std::string::npos && colon < end) return info.substr(colon + 1, end - colon - 1);
    }
    at = end + 1;
  }
  return "";
}

bool HasWord(const std::string& words, const char* word) {
  const size_t n = std::strlen(word);
  for (size_t at = words.find(word); at != std::string::npos; at = words.find(word, at + 1)) {
    const bool starts = at == 0 || words[at - 1] == ' ' || words[at - 1] == '\t';
    const bool ends = at + n == words.size() || words[at + n] == ' ' || words[at + n] == '\n';
    if (starts && ends) return true;
  }
  return false;
}

inline uint64_t OrderedTicks() {
#if defined(__x86_64__)
  // In a calibration pair the TSC read must stay between the clock reads.
  __builtin_ia32_lfence();
  const uint64_t t = __builtin_ia32_rdtsc();
  __builtin_ia32_lfence();
  return t;
#else
  return 0;
#endif
}

// A rate needs a baseline: the first block of a trace younger than this
// waits for it (once, on the flusher, at most this long).
constexpr uint64_t kMinBaselineNs = 100000;
constexpr uint64_t kStartBaselineNs = 20000;

// How long a calibration waits for clock_gettime to pass a baseline: while
// the TSC runs on for kMaxWaitTicks (54 to 270 ms at 1 to 5 GHz, a
// thousand times what a baseline takes) or for kMaxWaitPairs pairs, should
// the TSC stand still too. A clock that does not get there in that time
// (stopped, or crawling against the TSC) cannot be calibrated against:
// traced calls read clock_gettime instead, and no thread ever waits on it.
constexpr uint64_t kMaxWaitTicks = uint64_t{1} << 28;
constexpr int kMaxWaitPairs = 1 << 20;

// A pair at least `baseline_ns` after `from`, in `*out`; false when
// clock_gettime does not get there within the bounds above.
bool PairAfter(const TickPair& from, uint64_t baseline_ns, TickPair* out) {
  for (int i = 0; i < kMaxWaitPairs; ++i) {
    *out = ReadTickPair();
    if (out->ns - from.ns >= baseline_ns) return true;
    if (out->ticks - from.ticks > kMaxWaitTicks) return false;
  }
  return false;
}

// ns per tick << 32, from two pairs (b later than a).
uint64_t RateOf(const TickPair& a, const TickPair& b) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(b.ns - a.ns) << 32) /
                               (b.ticks - a.ticks));
}
// What a TSC that behaves may miss a fresh pair by, beyond the pairs' own
// error: 10 us, and 500 ppm of the time since the last pair (the line's
// rate is measured to a few ppm after a second).
constexpr uint64_t kSlackNs = 10000;
constexpr uint64_t kSlackPerNs = 2000;  // 1/2000 = 500 ppm

}  // namespace

ClockDecision ChooseEventClock(ClockSetting setting, bool x86_64, const std::string& cpu_flags,
                               const std::string& clocksource) {
  if (setting == ClockSetting::kClockGettime) {
    return {false, "clock_gettime: DLPROF_CLOCK=clock_gettime"};
  }
  if (!x86_64) return {false, "clock_gettime: no TSC on this architecture"};
  if (!HasWord(cpu_flags, "constant_tsc") || !HasWord(cpu_flags, "nonstop_tsc")) {
    return {false, "clock_gettime: the TSC is not invariant (constant_tsc, nonstop_tsc)"};
  }
  const std::string source = clocksource.empty() ? "unknown" : clocksource;
  if (source != "tsc") {
    if (setting == ClockSetting::kAuto) {
      return {false, "clock_gettime: the kernel's clocksource is " + source + ", not tsc"};
    }
    return {true, "tsc (DLPROF_CLOCK=tsc; the kernel's clocksource is " + source + ")"};
  }
  return {true, "tsc"};
}

void SetUpEventClock(ClockSetting setting) {
#if defined(__x86_64__)
  const bool x86_64 = true;
#else
  const bool x86_64 = false;
#endif
  std::string flags, source;
  if (x86_64 && setting != ClockSetting::kClockGettime) {
    flags = CpuFlags();
    source = ReadHead("/sys/devices/system/clocksource/clocksource0/current_clocksource", 64);
    while (!source.empty() && (source.back() == '\n' || source.back() == ' ')) source.pop_back();
  }
  ClockDecision& decision = Decision();
  decision = ChooseEventClock(setting, x86_64, flags, source);
  __atomic_store_n(&g_tick_flag, decision.tsc ? kEventFlagTicks : 0, __ATOMIC_RELAXED);
}

const ClockDecision& EventClockDecision() { return Decision(); }

void FallBackToClockGettime(const std::string& why) {
  __atomic_store_n(&g_tick_flag, 0, __ATOMIC_RELAXED);
  Decision() = ClockDecision{false, "clock_gettime: " + why};
}

TickPair ReadTickPair() {
  TickPair best;
  uint64_t best_width = ~uint64_t{0};
  for (int i = 0; i < 5; ++i) {
    const uint64_t a = NowNs();
    const uint64_t t = OrderedTicks();
    const uint64_t b = NowNs();
    if (b - a < best_width) {
      best_width = b - a;
      best.ticks = t;
      best.ns = a + (b - a) / 2;
    }
  }
  const uint64_t half = (best_width + 1) / 2;
  best.error_ns = half == 0 ? 1 : half > 0xffffffffu ? 0xffffffffu : static_cast<uint32_t>(half);
  return best;
}

bool TickCalibration::Start() {
  anchor_ = ReadTickPair();
  stuck_ = false;
  // A first rate at once, from a short baseline (its error, about 2 pair
  // errors over kStartBaselineNs, shrinks with each Update): a process
  // killed before its first block leaves ticks in its rings sidecar that
  // recovery must place.
  scale_ = format::TickScale{anchor_.ticks, anchor_.ns, 0};
  TickPair p;
  if (!PairAfter(anchor_, kStartBaselineNs, &p)) {
    stuck_ = true;
    return false;
  }
  if (p.ticks > anchor_.ticks) {
    scale_ = format::TickScale{p.ticks, p.ns, RateOf(anchor_, p)};
  }
  return true;
}

bool TickCalibration::Agrees(const TickPair& anchor, const format::TickScale& scale,
                             const TickPair& p) {
  if (scale.mult == 0) return true;  // nothing to check against yet
  if (p.ticks <= scale.ticks || p.ns <= scale.ns) return false;  // the TSC went back
  const uint64_t predicted = scale.Ns(p.ticks);
  const uint64_t miss = predicted > p.ns ? predicted - p.ns : p.ns - predicted;
  const uint64_t since = p.ns - scale.ns;
  const uint64_t baseline = scale.ns > anchor.ns ? scale.ns - anchor.ns : 1;
  // The rate's own error: the two pairs it came from, over its baseline.
  const uint64_t rate_error_ns = static_cast<uint64_t>(
      static_cast<unsigned __int128>(2 * (anchor.error_ns + p.error_ns)) * since / baseline);
  const uint64_t allowed = kSlackNs + since / kSlackPerNs + 2 * (anchor.error_ns + p.error_ns) +
                           rate_error_ns;
  return miss <= allowed;
}

bool TickCalibration::Update() {
  if (!started()) Start();
  // Once clock_gettime was found standing still, no block waits for it again.
  TickPair p = ReadTickPair();
  if (!stuck_ && p.ns - anchor_.ns < kMinBaselineNs && !PairAfter(anchor_, kMinBaselineNs, &p)) {
    stuck_ = true;
  }
  if (stuck_ || !Agrees(anchor_, scale_, p) || p.ticks <= anchor_.ticks) {
    if (__atomic_load_n(&g_tick_flag, __ATOMIC_RELAXED) != 0) {
      __atomic_store_n(&g_tick_flag, 0, __ATOMIC_RELAXED);
      if (stuck_) {
        RawLog("clock_gettime(CLOCK_MONOTONIC_RAW) stood still while the TSC ran; "
               "timing with clock_gettime from now on");
      } else {
        RawLog("the TSC disagrees with clock_gettime (%llu ns expected, %llu ns read); "
               "timing with clock_gettime from now on",
               static_cast<unsigned long long>(scale_.mult ? scale_.Ns(p.ticks) : 0),
               static_cast<unsigned long long>(p.ns));
      }
    }
    // The ticks already recorded are placed as well as the line allows.
    return false;
  }
  scale_ = format::TickScale{p.ticks, p.ns, RateOf(anchor_, p)};
  return true;
}

}  // namespace dlprof::core
