// Unions of time intervals and their overlaps.
#include "lib/analysis/summary/intervals.h"

#include <algorithm>

namespace dlprof::analysis {

void IntervalUnion::Seal() {
  std::sort(spans_.begin(), spans_.end());
  size_t out = 0;
  for (size_t i = 0; i < spans_.size(); ++i) {
    if (out > 0 && spans_[i].first <= spans_[out - 1].second) {
      spans_[out - 1].second = std::max(spans_[out - 1].second, spans_[i].second);
    } else {
      spans_[out++] = spans_[i];
    }
  }
  spans_.resize(out);
  prefix_.resize(out);
  uint64_t total = 0;
  for (size_t i = 0; i < out; ++i) {
    total += spans_[i].second - spans_[i].first;
    prefix_[i] = total;
  }
}

uint64_t IntervalUnion::Covered(uint64_t start, uint64_t end) const {
  if (end <= start || spans_.empty()) return 0;
  // First span that ends after `start`.
  auto first = std::upper_bound(spans_.begin(), spans_.end(), start,
                                [](uint64_t t, const auto& s) { return t < s.second; });
  uint64_t covered = 0;
  for (auto it = first; it != spans_.end() && it->first < end; ++it) {
    covered += std::min(end, it->second) - std::max(start, it->first);
  }
  return covered;
}

uint64_t IntervalUnion::CoveredBy(const IntervalUnion& other) const {
  uint64_t covered = 0;
  size_t j = 0;
  const auto& b = other.spans_;
  for (const auto& [s, e] : spans_) {
    while (j < b.size() && b[j].second <= s) ++j;
    for (size_t k = j; k < b.size() && b[k].first < e; ++k) {
      covered += std::min(e, b[k].second) - std::max(s, b[k].first);
    }
  }
  return covered;
}

void IntervalUnion::Clip(uint64_t start, uint64_t end) {
  std::vector<std::pair<uint64_t, uint64_t>> kept;
  for (auto [s, e] : spans_) {
    s = std::max(s, start);
    e = std::min(e, end);
    if (e > s) kept.emplace_back(s, e);
  }
  spans_ = std::move(kept);
  Seal();
}

void SpreadOverSeconds(uint64_t base, uint64_t start, uint64_t end, std::vector<uint64_t>* bins) {
  start = std::max(start, base);
  if (base == UINT64_MAX || end <= start) return;
  const uint64_t first = (start - base) / kNsPerSecond;
  if (first >= kMaxTimelineSeconds) return;
  const uint64_t last = std::min((end - 1 - base) / kNsPerSecond, kMaxTimelineSeconds - 1);
  if (bins->size() <= last) bins->resize(last + 1);
  for (uint64_t sec = first; sec <= last; ++sec) {
    const uint64_t from = std::max(start, base + sec * kNsPerSecond);
    const uint64_t to = std::min(end, base + (sec + 1) * kNsPerSecond);
    if (to > from) (*bins)[sec] += to - from;
  }
}

void AddAtSecond(uint64_t base, uint64_t at, uint64_t amount, std::vector<uint64_t>* bins) {
  if (base == UINT64_MAX || amount == 0) return;
  const uint64_t sec = at < base ? 0 : (at - base) / kNsPerSecond;
  if (sec >= kMaxTimelineSeconds) return;
  if (bins->size() <= sec) bins->resize(sec + 1);
  (*bins)[sec] += amount;
}

void AddBins(std::vector<uint64_t>* into, const std::vector<uint64_t>& from) {
  if (into->size() < from.size()) into->resize(from.size());
  for (size_t i = 0; i < from.size(); ++i) (*into)[i] += from[i];
}

void CoarsenBins(uint64_t* bin_ns, ByteBins* bins) {
  ByteBins& b = *bins;
  for (size_t i = 0; i < b.size(); ++i) {
    if (i % 2 == 0) {
      b[i / 2] = b[i];
    } else {
      b[i / 2].first += b[i].first;
      b[i / 2].second += b[i].second;
    }
  }
  b.resize((b.size() + 1) / 2);
  *bin_ns *= 2;
}

void AddFineBins(uint64_t* into_ns, ByteBins* into, uint64_t from_ns, const ByteBins& from) {
  if (from.empty()) return;
  if (into->empty()) {
    *into_ns = from_ns;
    *into = from;
    return;
  }
  ByteBins finer;
  const ByteBins* add = &from;
  if (from_ns < *into_ns) {
    finer = from;
    while (from_ns < *into_ns) CoarsenBins(&from_ns, &finer);
    add = &finer;
  }
  while (*into_ns < from_ns) CoarsenBins(into_ns, into);
  if (into->size() < add->size()) into->resize(add->size());
  for (size_t i = 0; i < add->size(); ++i) {
    (*into)[i].first += (*add)[i].first;
    (*into)[i].second += (*add)[i].second;
  }
  while (into->size() > kFineBins) CoarsenBins(into_ns, into);
}

}  // namespace dlprof::analysis
