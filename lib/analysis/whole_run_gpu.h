// The whole run's GPU figures from a bounded trace's counters (whole_run.h):
// the GPU busy time of the GPU records and the data stall of the data stall
// records (lib/format/counters.h), each summed as its records are read, over
// the windows that the reader's first pass found: the loop's (its regions)
// and the GPU's (its GPU records). A record's time is prorated to the part
// of its span inside the window: the counters hold no finer time.
#ifndef DLPROF_LIB_ANALYSIS_WHOLE_RUN_GPU_H_
#define DLPROF_LIB_ANALYSIS_WHOLE_RUN_GPU_H_

#include <cstdint>

#include "lib/analysis/whole_run.h"
#include "lib/format/counters.h"

namespace dlprof::analysis {

// `ns` of the span [from, to), prorated to the part of it inside [lo, hi):
// 0 where the span is empty or outside.
uint64_t ProratedNs(uint64_t ns, uint64_t from, uint64_t to, uint64_t lo, uint64_t hi);

// The GPU's window: the first span's start and the last span's end of the
// GPU records of a process, a rank or the run (`any`: some record).
struct GpuWindow {
  bool any = false;
  uint64_t first_ns = 0, last_ns = 0;
  void Add(uint64_t first, uint64_t last);
  void Add(const GpuWindow& o);
};

// The GPU busy time inside a loop's window (all of it without one): each
// record's busy time in the share of its span inside the window. The
// window comes from the first pass (its regions and steps: LoopFigures),
// before any GPU record is read.
class GpuSums {
 public:
  void SetWindow(const WholeRunLoop& loop) {
    from_ = loop.loop_start_ns;
    to_ = loop.loop_end_ns;
  }
  void Add(const format::GpuRecord& g);
  void Put(WholeRunLoop* loop) const;

 private:
  uint64_t from_ = 0, to_ = 0;
  bool gpu_ = false;
  uint64_t busy_ = 0, first_ = 0, last_ = 0;
};

// The data stall, as the full events' rank meter counts it: inside the
// GPU's window and, where there is a loop, inside the loop's. Each record's
// stall in the share of its stretch inside both windows (the stretches of
// a process begin at its first GPU work, but go on after its last). Both
// windows come from the first pass, before any data stall record is read;
// `any` tells a run whose processes wrote none (a writer from before them,
// or no GPU work) from one that stalled 0.
class StallSums {
 public:
  void SetWindow(const WholeRunLoop& loop, const GpuWindow& gpu);
  void Add(const format::DataStallRecord& r);
  void Put(WholeRunLoop* loop) const;

 private:
  uint64_t from_ = 0, to_ = UINT64_MAX;
  bool any_ = false;
  uint64_t stall_ = 0;
};

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_WHOLE_RUN_GPU_H_
