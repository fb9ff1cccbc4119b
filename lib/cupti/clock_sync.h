// Putting CUPTI's timestamps on dlprof's clock (CLOCK_MONOTONIC_RAW ns).
//
// Two methods, chosen once per attach (docs/CUDA.md):
//   callback  CUPTI calls dlprof_plugin_now_ns for every timestamp, so
//             records arrive on our clock already (offset 0).
//   convert   CUPTI keeps its own clock (CLOCK_REALTIME on Linux); we add
//             an offset measured by bracketing a CUPTI clock read between
//             two reads of ours, best of N, re-measured periodically.
// CUDA 12.6 Update 2 to 13.0 return zero kernel timestamps when a timestamp
// callback is registered; ZeroTimestampDetector notices that at run time.
//
// No CUPTI calls here: clocks are passed in, so all of it runs in CPU tests.
#ifndef DLPROF_LIB_CUPTI_CLOCK_SYNC_H_
#define DLPROF_LIB_CUPTI_CLOCK_SYNC_H_

#include <cstdint>
#include <functional>
#include <string>

#include "dlprof/format.h"

namespace dlprof::cupti {

// On disk in CudaClockSync events (`ret`): never renumber.
enum class ClockMethod : int64_t { kNone = 0, kCallback = 1, kConvert = 2 };

// Why a CudaClockSync event was written (its `fd`): never renumber.
enum class ClockReason : int32_t {
  kStart = 0,         // method chosen when CUPTI was attached
  kRefresh = 1,       // periodic re-measurement of the offset (convert)
  kZeroTimestamps = 2,  // switched to convert: zero timestamps seen with the callback
  kForced = 3,        // method forced by DLPROF_CUPTI_CLOCK
};

const char* ClockMethodName(ClockMethod m);

// One offset estimate: ours = theirs + offset_ns, known to +-width_ns/2.
struct OffsetSample {
  int64_t offset_ns = 0;
  uint64_t at_ns = 0;     // our time of the best bracket's midpoint
  uint64_t width_ns = 0;  // the best bracket: ours-after minus ours-before
  int samples = 0;        // brackets taken
};

using ClockRead = std::function<uint64_t()>;

// Takes `samples` brackets (ours, theirs, ours) and keeps the tightest: a
// bracket interrupted by preemption or a page fault is wide and loses.
OffsetSample MeasureOffset(const ClockRead& ours, const ClockRead& theirs, int samples);

// Our time of a CUPTI timestamp; 0 when it cannot be placed (0 in, or the
// offset would take it below zero).
inline uint64_t ToOurClock(uint64_t cupti_ns, int64_t offset_ns) {
  if (cupti_ns == 0) return 0;
  if (offset_ns < 0 && cupti_ns <= static_cast<uint64_t>(-offset_ns)) return 0;
  return cupti_ns + static_cast<uint64_t>(offset_ns);
}

// CUPTI API versions (cuptiGetVersion) of the releases with the
// zero-timestamp bug, 12.6 Update 2 to 13.0: 24 (12.6; its GA and Update 1
// share the number and are taken too), 26 (12.8), 27-28 (12.9),
// 130000-130001 (13.0, 13.0 Update 1).
bool VersionMayZeroTimestamps(uint32_t cupti_api_version);

struct ClockChoice {
  ClockMethod method = ClockMethod::kCallback;
  ClockReason reason = ClockReason::kStart;
  std::string note;  // for stderr; empty when there is nothing to say
};

// `forced` is DLPROF_CUPTI_CLOCK (callback, convert, auto or unset). Auto:
// convert on the versions above, else callback with the run-time detector.
ClockChoice ChooseClockMethod(const char* forced, uint32_t cupti_api_version);

// Watches GPU-timed records (kernel, memcpy, memset) while the callback is
// registered. Trips when at least kMinZero of them had zero start and end
// and they outnumber those with real timestamps: CUPTI documents an
// occasional zero record, a run of them is the bug.
class ZeroTimestampDetector {
 public:
  static constexpr uint64_t kMinZero = 4;
  void Observe(bool zero) {
    if (zero) ++zero_; else ++valid_;
    if (!tripped_ && zero_ >= kMinZero && zero_ > valid_) tripped_ = true;
  }
  bool tripped() const { return tripped_; }
  uint64_t zero() const { return zero_; }
  uint64_t valid() const { return valid_; }

 private:
  uint64_t zero_ = 0;
  uint64_t valid_ = 0;
  bool tripped_ = false;
};

// The CudaClockSync event that records a method and offset (docs/CUDA.md):
// start_ns/dur_ns the best bracket, ret the method, offset the offset, fd the
// reason, size the brackets taken, aux the CUPTI API version, file the id of
// the method's name.
Event MakeClockSyncEvent(ClockMethod method, ClockReason reason, const OffsetSample& s,
                         uint32_t cupti_api_version, uint32_t name_id);

}  // namespace dlprof::cupti

#endif  // DLPROF_LIB_CUPTI_CLOCK_SYNC_H_
