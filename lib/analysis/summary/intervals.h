// Unions of time intervals and how much of a span they cover: the arithmetic
// of GPU busy time and data-stall time.
#ifndef DLPROF_LIB_ANALYSIS_INTERVALS_H_
#define DLPROF_LIB_ANALYSIS_INTERVALS_H_

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace dlprof::analysis {

// How much of [a0, a1) lies in [b0, b1).
inline uint64_t Overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1) {
  const uint64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
  return hi > lo ? hi - lo : 0;
}

// A set of half-open intervals [start, end) kept as a sorted list of disjoint
// ones once Seal() has run.
class IntervalUnion {
 public:
  void Add(uint64_t start, uint64_t end) {
    if (end > start) spans_.emplace_back(start, end);
  }
  void AddAll(const IntervalUnion& o) {
    spans_.insert(spans_.end(), o.spans_.begin(), o.spans_.end());
  }
  // Sorts and merges; afterwards Covered() and Length() are valid.
  void Seal();
  bool empty() const { return spans_.empty(); }
  uint64_t Length() const { return prefix_.empty() ? 0 : prefix_.back(); }
  // How much of [start, end) the union covers.
  uint64_t Covered(uint64_t start, uint64_t end) const;
  // How much of this union lies inside `other` (both sealed).
  uint64_t CoveredBy(const IntervalUnion& other) const;
  // Clips every interval to [start, end) (sealed stays sealed).
  void Clip(uint64_t start, uint64_t end);
  const std::vector<std::pair<uint64_t, uint64_t>>& spans() const { return spans_; }

 private:
  std::vector<std::pair<uint64_t, uint64_t>> spans_;
  std::vector<uint64_t> prefix_;  // prefix_[i] = total length of spans_[0..i]
};

// The summary's timelines (per_second and the GPU and per-rank series): one
// bin per second from a base (the run's second 0), at most 2^20 of them.
constexpr uint64_t kNsPerSecond = 1000000000ull;
constexpr uint64_t kMaxTimelineSeconds = uint64_t{1} << 20;

// Adds [start, end) to `bins`, split at the seconds' edges; what lies
// before `base` or past the last bin is left out.
void SpreadOverSeconds(uint64_t base, uint64_t start, uint64_t end, std::vector<uint64_t>* bins);
// Adds `amount` to the bin of the second `at` falls in.
void AddAtSecond(uint64_t base, uint64_t at, uint64_t amount, std::vector<uint64_t>* bins);
// Adds `from` to `into`, bin by bin.
void AddBins(std::vector<uint64_t>* into, const std::vector<uint64_t>& from);

// The fine timeline of bytes (Summary::fine_bins): bins of 1 ms from the
// timeline's base, doubled (two bins merged into one) whenever a call falls
// past kFineBins bins, so that its length stays bounded whatever the run's
// and a loop of one second in a run of minutes still gets bins of
// milliseconds.
constexpr uint64_t kFineBinStartNs = 1000000;
constexpr size_t kFineBins = 8192;
using ByteBins = std::vector<std::pair<uint64_t, uint64_t>>;  // (read, written)
// Doubles `*bin_ns`, merging the bins two by two.
void CoarsenBins(uint64_t* bin_ns, ByteBins* bins);
// Adds `from` (bins of `from_ns`) to `into` (bins of `*into_ns`), both from
// the same base: the finer is coarsened to the other's width first.
void AddFineBins(uint64_t* into_ns, ByteBins* into, uint64_t from_ns, const ByteBins& from);

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_INTERVALS_H_
