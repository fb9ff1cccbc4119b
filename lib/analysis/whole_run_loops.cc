// The loop windows of a bounded trace's whole run (whole_run_loops.h).
#include "lib/analysis/whole_run_loops.h"

#include <algorithm>
#include <utility>

#include "lib/analysis/meters/process_loops.h"

namespace dlprof::analysis {

// The loop's length, batch waits and steps of `regions` (WholeRun's), and
// of `steps` where no batch was waited for.
void LoopFigures(const std::map<std::string, WholeRunRegion>& regions,
                 const std::string& batch_region, const StepSums& steps, WholeRunLoop* out) {
  auto batch = regions.find(batch_region);
  auto step = regions.find(kStepRegion);
  auto iter = regions.find(kIterRegion);
  if (batch != regions.end()) {
    // The requests that found a pass over, or raised, waited, but no batch
    // came out of them (the full events' StepRequest).
    out->batches = batch->second.count - batch->second.no_batch;
    out->batch_wait_ns = batch->second.ns;
    uint64_t start = batch->second.first_start_ns, end = batch->second.last_end_ns;
    if (iter != regions.end()) {
      out->batch_wait_ns += iter->second.ns;
      start = std::min(start, iter->second.first_start_ns);
      end = std::max(end, iter->second.last_end_ns);
    }
    if (step != regions.end()) end = std::max(end, step->second.last_end_ns);
    out->loop_ns = end - start;
    out->loop_start_ns = start;
    out->loop_end_ns = end;
  } else if (step != regions.end()) {
    // A loop of steps (docs/ANALYSIS.md, "Loops without a DataLoader"):
    // from the first step's window, its waits the reading before each.
    out->loop_start_ns = std::min(step->second.first_start_ns, steps.loop_start_ns);
    out->loop_end_ns = step->second.last_end_ns;
    out->loop_ns = out->loop_end_ns - out->loop_start_ns;
    out->loop_of_steps = true;
    out->steps_unjoined_ns = steps.unjoined_ns;
    out->other_threads_io_ns = steps.other_threads_io_ns;
    out->steps_map_live_ns = std::min(steps.map_live_ns, out->loop_ns);
    if (steps.waits > 0) {
      out->batches = step->second.count;
      out->batch_wait_ns = steps.wait_ns;
      // Its reading, and the program's work between joined calls, as the
      // full events split a step's wait (step_loop.cc); a writer from before
      // the step split records counted all of it reading.
      const uint64_t preprocessing = std::min(steps.preprocessing_ns, steps.wait_ns);
      out->causes.reading_ns += steps.wait_ns - preprocessing;
      out->causes.preprocessing_ns += preprocessing;
      out->steps_mapping_ns = steps.mapping_ns;
      out->steps_map_copy_ns = steps.map_copy_ns;
    }
  }
  if (step != regions.end()) out->steps = step->second.count;
}

SummedLoops SumLoops(const std::vector<LoopWindow>& processes, const std::string& batch_region) {
  SummedLoops out;
  std::vector<std::pair<uint64_t, uint64_t>> windows;
  for (const LoopWindow& window : processes) {
    WholeRunLoop loop;
    LoopFigures(window.regions, batch_region, window.steps, &loop);
    out.loop_ns += loop.loop_ns;
    windows.emplace_back(loop.loop_start_ns, loop.loop_end_ns);
  }
  out.overlapping = AnyOverlap(std::move(windows));
  return out;
}

// The union of `spans`' lengths (overlaps counted once).
uint64_t UnionNs(std::vector<std::pair<uint64_t, uint64_t>> spans) {
  std::sort(spans.begin(), spans.end());
  uint64_t total = 0, end = 0;
  bool any = false;
  for (const auto& [a, b] : spans) {
    if (!any || a > end) {
      total += b - a;
      end = b;
      any = true;
    } else if (b > end) {
      total += b - end;
      end = b;
    }
  }
  return total;
}

}  // namespace dlprof::analysis
