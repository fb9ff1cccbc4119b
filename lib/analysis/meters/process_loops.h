// The loops of a job without ranks, a process at a time: each process that
// waits for batches runs a loop of its own (two trainers forked, or
// spawned by torch.multiprocessing, with no RANK), as each rank does, and
// the job's loop is their windows summed (docs/ANALYSIS.md, "Verdict").
// The group's rank meter (rank_meter.h) measures everything else over the
// group as one, and takes from here the loop's length, its start-up, its
// optimizer steps and the start-up's I/O where two or more processes
// looped: one window from the first process's first wait to the last one's
// end spans the gaps where a process was not in its loop (a trainer still
// importing, one that finished early), while the waits are each process's.
//
// A process's loop runs from its first batch wait to the end of its last
// step (batch wait, optimizer step or annotate_loader step in it); where
// no process waited for batches (loops without a DataLoader: nanoGPT-style
// trainers), from its first optimizer step's window to its last step's end
// (step_loop.h), the windows handed over once the stream has ended. Its
// start-up runs from its own first event; its start-up I/O is its own and
// that of its descendants that run no loop of their own (its loader
// workers, helpers), before its loop began (not a worker's fetch). Events
// come by start, so whether a process's loop had begun when an I/O call
// came is known then; which process is the call's loop is known at the
// end (its nearest ancestor, or itself, that looped): each process's I/O
// is kept by the nearest process of its line whose loop had begun when it
// came, and taken at the end as start-up where that process was not its
// loop's. Memory grows with the processes, never with the events.
//
// A loop's time is its window's part that its process's events on disk
// cover (kept_spans.h: a bounded trace's kept windows, not the segments
// deleted between them).
//
// A rank's processes are grouped the same way (a rank restarted by its
// launcher, torchrun's elastic restarts, is a new process each attempt):
// where their loops' windows do not overlap, the rank's loop is their
// windows summed, not one window spanning the dead time between attempts
// (failure detection, rendezvous, the next attempt's start-up).
//
// A process is an image, not a trace file: the segments of a bounded trace
// (DLPROF_KEEP: one file each, the same header) are one process's, and one
// loop; the images of an exec are processes of their own.
#ifndef DLPROF_LIB_ANALYSIS_METERS_PROCESS_LOOPS_H_
#define DLPROF_LIB_ANALYSIS_METERS_PROCESS_LOOPS_H_

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "lib/read/trace_set.h"

namespace dlprof::analysis {

// Whether any two of the loop windows [start, end) overlap: processes that
// ran one after another (a restarted rank's attempts) have none, and their
// loops are summed (here, and in a bounded trace's whole run).
bool AnyOverlap(std::vector<std::pair<uint64_t, uint64_t>> windows);

class ProcessLoops {
 public:
  // `processes`: the group's (a stream's processes()); their parents from
  // their headers (same host, the pid their ppid names, started no later).
  explicit ProcessLoops(const std::vector<read::ProcessTrace>& processes);

  // Every counted event's process and start, before what follows of it.
  void SeeEvent(uint32_t process, uint64_t start);
  // A batch wait [start, end) of `process` (iter(loader) too): its loop
  // begins with its first.
  void AddWait(uint32_t process, uint64_t start, uint64_t end);
  // A step of `process` ending at `end`: `optimizer` for an optimizer step
  // (counted), else annotate_loader's. Only in its loop.
  void AddStep(uint32_t process, uint64_t end, bool optimizer);
  // Where no process waited for batches (a loop without a DataLoader,
  // step_loop.h: nanoGPT-style trainers, torch.multiprocessing's): an
  // optimizer step of `process` and its window [start, end), from the
  // previous step's end (the first one's estimated), once the stream has
  // ended. Its loop is its steps' windows; its start-up I/O is the step
  // loop's, not kept here (Finish's startup_io is not for such loops).
  void AddStepWindow(uint32_t process, uint64_t start, uint64_t end);
  // An I/O call of `process` (or a page fault: `map`) that no fetch of its
  // holds, as it comes.
  void AddIo(uint32_t process, uint64_t ns, uint64_t read_bytes, bool map);

  // Processes whose loop began.
  size_t loops() const;

  struct StartupIo {
    uint64_t io_ns = 0, io_ops = 0, read_bytes = 0, map_ns = 0, map_bytes = 0;
  };
  struct Result {
    size_t loops = 0;
    uint64_t loop_ns = 0, startup_ns = 0;  // summed over the loops
    // Of the loops' windows, the time with no event of their process on
    // disk (a bounded trace's segments deleted between its kept windows):
    // not in loop_ns.
    uint64_t start_ns = 0, end_ns = 0;     // the first loop's start, the last one's end
    uint64_t unkept_ns = 0;
    uint64_t optimizer_steps = 0;
    StartupIo startup_io;
    // Whether two loops' windows (each to its extended end) overlap in
    // time: processes looping side by side, not one after another.
    bool overlapping = false;
  };
  // The loops summed. `extend_end(process, end, step_ns)` gives a loop's end
  // given its last step's (a checkpoint saved right after it); `kept(process,
  // start, end)`, where given, how much of [start, end) the process's
  // events on disk cover (kept_spans.h; all of it where not given).
  using Span = std::function<uint64_t(uint32_t, uint64_t, uint64_t)>;
  Result Finish(const Span& extend_end, const Span& kept = nullptr) const;

 private:
  struct Loop {
    bool begun = false;
    uint64_t start = 0, end = 0;
    uint64_t first_ns = UINT64_MAX;  // its first event
    uint64_t optimizer_steps = 0, waits = 0;
    // Its start-up I/O, by the nearest process of its line whose loop had
    // begun when it came (-1: none), in the order they came.
    std::vector<std::pair<int64_t, StartupIo>> io;
  };
  // The nearest process of `p`'s line (p, its parent, ...) whose loop has
  // begun; -1 if none. `p` is an image's first trace.
  int64_t NearestLooping(uint32_t p) const;
  // The first trace of the image `process`'s trace is of (its first
  // segment), or nullptr out of range.
  Loop* LoopOf(uint32_t process);

  std::vector<uint32_t> image_;  // each trace's image: the index of its first segment
  std::vector<int64_t> parent_;  // each image's parent image; -1 if none in the group
  std::vector<Loop> loops_;      // by image (a later segment's is unused)
};

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_METERS_PROCESS_LOOPS_H_
