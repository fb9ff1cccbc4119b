// The whole run's checkpoint saves from a bounded trace's counters
// (whole_run.h; the saves records of lib/format/counters.h): the full
// events' CheckpointFigures (docs/ANALYSIS_CHECKPOINTS.md) where the
// counters hold their inputs -- the `save_checkpoint` regions, each with its
// thread's writes in it and whether that thread ran the loop. By the full
// events' rules (checkpoint_meter.h): a save counts where it begins in the
// loop's window or within a step's time after its end, blocking where its
// thread ran the loop, else in the background; a save of a loop thread
// begun within a step's time after the loop's last step ends the loop (the
// final weights); and the saves whose files the process loaded as data
// after a later step, where it loaded kMinCacheFiles of them, were a cache
// of samples, no checkpoint: in a loop of steps, its thread's fills are
// its steps' batch wait. Not in the counters, so not here: saves found
// as bursts of writes without a region (np.save, DLIO's), a save's settling
// sync or close in a later interval, a rename, a cache read by other processes (a
// loader's workers of the next epoch: its saves stay background saves),
// and restores.
#ifndef DLPROF_LIB_ANALYSIS_WHOLE_RUN_SAVES_H_
#define DLPROF_LIB_ANALYSIS_WHOLE_RUN_SAVES_H_

#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "lib/analysis/whole_run.h"
#include "lib/format/counters.h"

namespace dlprof::analysis {

// One process's saves, held until its counters are read (its files loaded
// as data come after its saves), times on the job's time base.
class ProcessSaves {
 public:
  void Add(const format::SavesRecord& r);
  // Its saves but a cache's (`cache` false), or a cache's alone, each
  // with whether its thread ran the loop (at any time: a cache filled
  // before the loop's first step, on its thread, is the loop's).
  std::vector<format::SaveSample> Checkpoints(bool cache = false) const;
  uint64_t unsampled() const { return unsampled_; }

 private:
  std::vector<format::SaveSample> saves_;
  std::set<uint32_t> loaded_;  // saved files loaded as data
  std::set<uint32_t> loop_threads_;
  uint64_t unsampled_ = 0;
};

// A loop's checkpoint figures: the saves of its processes against its
// window, which the first pass found (its regions and steps: LoopFigures).
class SaveSums {
 public:
  void SetWindow(const WholeRunLoop& loop);
  void Add(const format::SaveSample& s);
  // A cache's fill: in a loop without a DataLoader, on its thread, the
  // batch wait of the step whose window holds it (the full events'
  // CacheFills), which the counters' step windows leave out as they leave
  // out every save: its writes reading, the rest preprocessing.
  void AddFill(const format::SaveSample& s);
  // Its figures to `loop` (after LoopFigures), its end moved to that of a
  // loop thread's save just after its last step.
  void Put(WholeRunLoop* loop) const;

 private:
  bool loop_ = false;
  uint64_t from_ = 0, to_ = 0, step_ns_ = 0;
  CheckpointFigures figures_;
  std::vector<std::pair<uint64_t, uint64_t>> all_, blocking_, background_;
  uint64_t end_ = 0;  // the loop's end, moved by such a save
  uint64_t fill_ns_ = 0, fill_write_ns_ = 0;
};

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_WHOLE_RUN_SAVES_H_
