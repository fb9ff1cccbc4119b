// The summary's timelines (SummaryBuilder's): bytes read and written per
// second and in fine bins, and GPU busy time per second, from second 0.
#ifndef DLPROF_LIB_ANALYSIS_METERS_SUMMARY_TIMELINES_H_
#define DLPROF_LIB_ANALYSIS_METERS_SUMMARY_TIMELINES_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "lib/analysis/summary/intervals.h"
#include "lib/analysis/summary/summary.h"

namespace dlprof::analysis {

enum class Access { kNone, kRead, kWrite };

// The summary's timelines from second 0 (`base_ns`): bytes read and written
// per second and in fine bins (1 ms, doubled as the run grows: at most
// kFineBins of them, intervals.h), and GPU busy time per second.
class Timelines {
 public:
  // UINT64_MAX: second 0 is the first event's start (StartAt).
  explicit Timelines(uint64_t base_ns) : base_ns_(base_ns) {}

  void StartAt(uint64_t start_ns) {
    if (base_ns_ == UINT64_MAX) base_ns_ = start_ns;
  }
  // Second 0; `run_start_ns` when no event came.
  uint64_t base_ns(uint64_t run_start_ns) const {
    return base_ns_ == UINT64_MAX ? run_start_ns : base_ns_;
  }

  // Whether a call that starts at `start` falls outside the second and fine
  // bin where the last one started (calls that start in it add to both).
  // Starts only grow (but for a file merged out of order), so the bins are
  // worked out again only past their ends.
  bool Moved(uint64_t start) const { return start >= second_.end || start < second_.start; }

  // Bytes read or written by calls that started in the current bins.
  template <Access kAccess>
  void Add(uint64_t bytes) {
    if (second_.index == SIZE_MAX || bytes == 0) return;
    auto& at = per_second_[second_.index];
    (kAccess == Access::kRead ? at.first : at.second) += bytes;
    auto& fine = fine_bins_[second_.fine];
    (kAccess == Access::kRead ? fine.first : fine.second) += bytes;
  }

  // Makes the current bins those `start` falls in.
  [[gnu::noinline]] void MoveTo(uint64_t start) {
    // A call before the first (a file merged out of order) goes in second 0;
    // one past the timeline's bound (a forged start) in none.
    const uint64_t base = base_ns_;
    const uint64_t sec = start < base ? 0 : (start - base) / kNsPerSecond;
    if (sec >= kMaxTimelineSeconds) {
      second_ = {0, 0, SIZE_MAX};
      return;
    }
    if (sec >= per_second_.size()) per_second_.resize(sec + 1);
    uint64_t fine = start < base ? 0 : (start - base) / fine_bin_ns_;
    while (fine >= kFineBins) {
      CoarsenBins(&fine_bin_ns_, &fine_bins_);
      fine /= 2;
    }
    if (fine >= fine_bins_.size()) fine_bins_.resize(fine + 1);
    const uint64_t fine_start = fine == 0 ? 0 : base + fine * fine_bin_ns_;
    second_ = {std::max(sec == 0 ? 0 : base + sec * kNsPerSecond, fine_start),
               std::min(base + (sec + 1) * kNsPerSecond, base + (fine + 1) * fine_bin_ns_),
               static_cast<size_t>(sec), static_cast<size_t>(fine)};
  }

  // The union of GPU work over all devices, in order of start: an interval
  // stays open while the next start falls inside it; a closed one is spread
  // over the seconds it covers.
  void AddGpuBusy(uint64_t start, uint64_t end) {
    if (gpu_open_ && start <= gpu_end_) {
      gpu_end_ = std::max(gpu_end_, end);
      return;
    }
    CloseGpuBusy();
    std::tie(gpu_open_, gpu_start_, gpu_end_) = std::make_tuple(true, start, end);
  }

  // The timelines into `s`.
  void Finish(Summary* s) {
    CloseGpuBusy();
    s->per_second = std::move(per_second_);
    s->fine_bin_ns = fine_bin_ns_;
    s->fine_bins = std::move(fine_bins_);
    s->gpu_busy_per_second = std::move(gpu_busy_per_second_);
  }

 private:
  // The part of a second and of a fine bin where the last call started
  // (index SIZE_MAX: past the timeline's bound).
  struct Second {
    uint64_t start = 0, end = 0;
    size_t index = 0, fine = 0;
  };
  void CloseGpuBusy() {
    if (gpu_open_) SpreadOverSeconds(base_ns_, gpu_start_, gpu_end_, &gpu_busy_per_second_);
    gpu_open_ = false;
  }

  uint64_t base_ns_;  // second 0 starts here
  Second second_;
  std::vector<std::pair<uint64_t, uint64_t>> per_second_;  // (read, written)
  uint64_t fine_bin_ns_ = kFineBinStartNs;
  std::vector<std::pair<uint64_t, uint64_t>> fine_bins_;
  std::vector<uint64_t> gpu_busy_per_second_;
  bool gpu_open_ = false;  // the GPU busy interval AddGpuBusy grows
  uint64_t gpu_start_ = 0, gpu_end_ = 0;
};

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_METERS_SUMMARY_TIMELINES_H_
