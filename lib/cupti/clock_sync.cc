#include "lib/cupti/clock_sync.h"

#include <cstring>

namespace dlprof::cupti {

const char* ClockMethodName(ClockMethod m) {
  switch (m) {
    case ClockMethod::kNone: return "none";
    case ClockMethod::kCallback: return "callback";
    case ClockMethod::kConvert: return "convert";
  }
  return "?";
}

OffsetSample MeasureOffset(const ClockRead& ours, const ClockRead& theirs, int samples) {
  OffsetSample best;
  best.width_ns = ~uint64_t{0};
  for (int i = 0; i < samples; ++i) {
    uint64_t before = ours();
    uint64_t t = theirs();
    uint64_t after = ours();
    if (after < before) continue;  // cannot happen on a monotonic clock; never trust it
    uint64_t width = after - before;
    if (width < best.width_ns) {
      uint64_t mid = before + width / 2;
      best.width_ns = width;
      best.at_ns = mid;
      best.offset_ns = static_cast<int64_t>(mid - t);  // two's complement: mid < t is fine
    }
  }
  best.samples = samples;
  if (best.width_ns == ~uint64_t{0}) best = OffsetSample{0, 0, 0, samples};
  return best;
}

bool VersionMayZeroTimestamps(uint32_t v) {
  return (v >= 24 && v <= 28) || (v >= 130000 && v <= 130001);
}

ClockChoice ChooseClockMethod(const char* forced, uint32_t version) {
  ClockChoice c;
  if (forced && *forced && std::strcmp(forced, "auto") != 0) {
    if (std::strcmp(forced, "callback") == 0) {
      c.method = ClockMethod::kCallback;
      c.reason = ClockReason::kForced;
      return c;
    }
    if (std::strcmp(forced, "convert") == 0) {
      c.method = ClockMethod::kConvert;
      c.reason = ClockReason::kForced;
      return c;
    }
    c.note = std::string("DLPROF_CUPTI_CLOCK: '") + forced +
             "' is not one of auto, callback, convert; using auto";
  }
  if (VersionMayZeroTimestamps(version)) c.method = ClockMethod::kConvert;
  return c;
}

Event MakeClockSyncEvent(ClockMethod method, ClockReason reason, const OffsetSample& s,
                         uint32_t version, uint32_t name_id) {
  Event e;
  std::memset(&e, 0, sizeof(e));
  e.kind = static_cast<uint16_t>(EventKind::CudaClockSync);
  e.start_ns = s.at_ns;
  e.dur_ns = s.width_ns;
  e.ret = static_cast<int64_t>(method);
  e.offset = s.offset_ns;
  e.fd = static_cast<int32_t>(reason);
  e.size = static_cast<uint64_t>(s.samples);
  e.aux = version;
  e.file = name_id;
  return e;
}

}  // namespace dlprof::cupti
