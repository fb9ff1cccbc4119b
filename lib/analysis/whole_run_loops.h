// The loop windows of a bounded trace's whole run (whole_run.h), from the
// counters' regions and step records: the loop's length, batch waits and
// steps of a process, a rank or the run (LoopFigures), and the loops of
// processes that ran one after another summed (SummedLoops), as the rank
// meter sums them (lib/analysis/meters/process_loops.h). Internal to
// whole_run.cc.
#ifndef DLPROF_LIB_ANALYSIS_WHOLE_RUN_LOOPS_H_
#define DLPROF_LIB_ANALYSIS_WHOLE_RUN_LOOPS_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lib/analysis/whole_run.h"
#include "lib/analysis/whole_run_gpu.h"
#include "lib/format/counters.h"

namespace dlprof::analysis {

inline constexpr const char* kStepRegion = "optimizer_step";
// iter(loader): a batch wait of its own, as the rank meter counts it.
inline constexpr const char* kIterRegion = "loader_iter";

// The step records of processes without batch waits (a loop without a
// DataLoader: its waits are the reading between steps).
struct StepSums {
  uint64_t waits = 0, wait_ns = 0;
  uint64_t preprocessing_ns = 0;  // of wait_ns, between calls (StepRecord)
  uint64_t mapping_ns = 0, map_copy_ns = 0;  // of that, its parts (StepRecord)
  uint64_t loop_start_ns = UINT64_MAX;  // the first step's window's start
  // What the waits cannot see (StepRecord's step unseen figures).
  uint64_t unjoined_ns = 0, other_threads_io_ns = 0, map_live_ns = 0;
  void Add(const format::StepRecord& r) {
    waits += r.waits;
    wait_ns += r.wait_ns;
    preprocessing_ns += r.preprocessing_ns;
    mapping_ns += r.mapping_ns;
    map_copy_ns += r.map_copy_ns;
    unjoined_ns += r.unjoined_ns;
    other_threads_io_ns += r.other_threads_io_ns;
    map_live_ns += r.map_live_ns;
    if (r.loop_start_ns != 0) loop_start_ns = std::min(loop_start_ns, r.loop_start_ns);
  }
};

// The loop's length, batch waits and steps of `regions` (WholeRun's), and
// of `steps` where no batch was waited for.
void LoopFigures(const std::map<std::string, WholeRunRegion>& regions,
                 const std::string& batch_region, const StepSums& steps, WholeRunLoop* out);

// What makes a loop's window (LoopFigures), from the first pass: the first
// starts and last ends of the batch waits', iter(loader)'s and the steps'
// regions, and the first step window's start of processes that waited for
// no batch; and the GPU's window, inside which the data stall is counted.
struct LoopWindow {
  std::map<std::string, WholeRunRegion> regions;
  StepSums steps;
  GpuWindow gpu;
  void Add(const LoopWindow& file, bool waited) {
    gpu.Add(file.gpu);
    for (const auto& [name, r] : file.regions) {
      WholeRunRegion& sum = regions[name];
      sum.count += r.count;
      sum.no_batch += r.no_batch;
      sum.first_start_ns = std::min(sum.first_start_ns, r.first_start_ns);
      sum.last_end_ns = std::max(sum.last_end_ns, r.last_end_ns);
    }
    if (!waited) steps.loop_start_ns = std::min(steps.loop_start_ns, file.steps.loop_start_ns);
  }
};

// The loops of `processes` (each one's LoopWindow) summed: each one's
// window from its first region (or first step's window) to its last, their
// lengths added. `overlapping`: whether two of the windows overlap in time
// (processes looping side by side, not one after another).
struct SummedLoops {
  uint64_t loop_ns = 0;
  bool overlapping = false;
};
SummedLoops SumLoops(const std::vector<LoopWindow>& processes, const std::string& batch_region);

// The union of `spans`' lengths (overlaps counted once).
uint64_t UnionNs(std::vector<std::pair<uint64_t, uint64_t>> spans);

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_WHOLE_RUN_LOOPS_H_
