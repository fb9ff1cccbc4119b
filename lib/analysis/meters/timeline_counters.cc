// The timelines' binned counters (timeline_counters.h).
#include "lib/analysis/meters/timeline_counters.h"

#include <algorithm>

#include "dlprof/catalogue.h"
#include "lib/format/event_rules.h"

namespace dlprof::analysis {

bool BandwidthOf(const Event& e, BandwidthBytes* out) {
  const EventRules& k = RulesFor(e.kind);
  if (!k.bandwidth || (e.flags & kEventFlagNested)) return false;
  *out = {BytesMoved(e, k.bytes_at), kEventKinds.info[e.kind].op_class == OpClass::Write};
  return true;
}

void BinnedSums::Add(size_t counter, uint64_t at_ns, uint64_t amount) {
  Advance(at_ns / kCounterBinNs);
  if (counter >= sums_.size()) sums_.resize(counter + 1, 0);
  if (amount == 0) return;
  if (sums_[counter] == 0) touched_.push_back(counter);
  sums_[counter] += amount;
}

void BinnedSums::Advance(uint64_t bin) {
  while (bin_ < bin) {
    if (touched_.empty() && active_.empty()) {
      bin_ = bin;  // nothing to report in between
      break;
    }
    FlushBin();
    ++bin_;
  }
}

void BinnedSums::FlushBin() {
  const uint64_t at = bin_ * kCounterBinNs;
  std::sort(touched_.begin(), touched_.end());
  for (size_t c : touched_) {
    emit_(c, at, sums_[c]);
    sums_[c] = 0;
  }
  // The counters busy in the bin before but not in this one drop to zero.
  for (size_t c : active_) {
    if (!std::binary_search(touched_.begin(), touched_.end(), c)) emit_(c, at, 0);
  }
  active_.swap(touched_);
  touched_.clear();
}

void BusyTime::Add(size_t counter, uint64_t start_ns, uint64_t end_ns) {
  if (counter >= devices_.size()) devices_.resize(counter + 1);
  Device& d = devices_[counter];
  if (d.open && start_ns <= d.end) {
    d.end = std::max(d.end, end_ns);
    return;
  }
  if (d.open) Close(&d);
  d.open = true;
  d.start = start_ns;
  d.end = end_ns;
  // Nothing later starts before this stretch: the bins before it are final.
  EmitBefore(counter, &d, start_ns / kCounterBinNs);
}

void BusyTime::Close(Device* d) {
  // The stretch's time, bin by bin.
  for (uint64_t t = d->start; t < d->end;) {
    const uint64_t bin = t / kCounterBinNs;
    const uint64_t bin_end = (bin + 1) * kCounterBinNs;
    const uint64_t until = std::min(bin_end, d->end);
    d->bins[bin] += until - t;
    t = until;
  }
  d->open = false;
}

void BusyTime::EmitBefore(size_t counter, Device* d, uint64_t bin) {
  while (!d->bins.empty() && d->bins.begin()->first < bin) {
    auto [b, ns] = *d->bins.begin();
    d->bins.erase(d->bins.begin());
    if (d->last_emitted != UINT64_MAX && d->last_emitted + 1 < b) {
      emit_(counter, (d->last_emitted + 1) * kCounterBinNs, 0);
    }
    emit_(counter, b * kCounterBinNs, ns);
    d->last_emitted = b;
  }
  if (d->last_emitted != UINT64_MAX && d->last_emitted + 1 < bin && d->bins.empty()) {
    emit_(counter, (d->last_emitted + 1) * kCounterBinNs, 0);
    d->last_emitted = UINT64_MAX;  // the drop is drawn
  }
}

void BusyTime::Finish() {
  for (size_t c = 0; c < devices_.size(); ++c) {
    Device& d = devices_[c];
    if (d.open) Close(&d);
    EmitBefore(c, &d, UINT64_MAX);
  }
}

}  // namespace dlprof::analysis
