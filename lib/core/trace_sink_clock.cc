// The trace sink's side of the TSC clock (tsc_clock.h): a calibration for
// each block's events, and the scale the rings sidecar holds for the events
// not written yet.
#include <algorithm>

#include "lib/core/trace_sink.h"

namespace dlprof::core {
namespace {
constexpr uint64_t kMinScaleGapNs = 1000000;  // 1 ms
}  // namespace

void TraceSink::RefreshTickScale() {
  tick_clock_.Update();
  encoder_.SetTickScale(tick_clock_.scale());
  PublishTickScale();
  scale_ns_.store(tick_clock_.scale().ns, std::memory_order_relaxed);
}

// The ticks in the rings sidecar are placed by the last scale published,
// at its rate, however long after it they were recorded: the error of that
// is the distance times the rate's error, which is two pair errors over the
// rate's baseline (the trace's age at the refresh). A refresh once an eighth
// of the trace's age has passed keeps it under a quarter of a pair error,
// for about 130 refreshes in an hour.
uint64_t TraceSink::ScaleDue() const {
  if (!tsc_ || sidecar_ == nullptr || sidecar_->header() == nullptr) return 0;
  const uint64_t last = scale_ns_.load(std::memory_order_relaxed);
  if (last == 0) return 0;
  return last + std::max(kMinScaleGapNs, (last - std::min(last, opened_ns_)) / 8);
}

void TraceSink::PublishTickScale() {
  format::SidecarHeader* side = sidecar_ != nullptr ? sidecar_->header() : nullptr;
  if (!tsc_ || side == nullptr) return;
  // The slot not in use, then its name: a kill in between leaves the other.
  const uint32_t next = side->tick_scale_slot.load(std::memory_order_relaxed) == 1 ? 2 : 1;
  side->tick_scales[next - 1] = tick_clock_.scale();
  side->tick_scale_slot.store(next, std::memory_order_release);
}

}  // namespace dlprof::core
