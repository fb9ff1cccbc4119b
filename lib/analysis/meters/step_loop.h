// Loops without a DataLoader (docs/ANALYSIS.md, "The loop"): nanoGPT's
// get_batch, Megatron-style indexed datasets, a hand-written reader or a
// generator make their batches on the training thread itself, so no batch
// region marks the wait. Where optimizer steps are recorded (the PyTorch
// bootstrap's `optimizer_step`), the loop is the steps, and each step's
// batch wait is the stepping thread's time in I/O on data files between the
// previous step's end and this step's start, all of it reading (but for a
// collective MPI-IO call's waiting for other ranks, which the summary takes
// out once every rank's calls are in: collective_waits.h). Calls less
// than kJoinGapNs apart are one stretch of reading, the time between them
// included: the Python of a get_batch between its reads (the loop over the
// samples, the slicing) is the wait's, not the step's. That time between
// calls is kept apart (Step::joined_ns): it is the program's own work, not
// I/O (a decoder between a JPEG's reads: 310 ms of a 320 ms "reading"). Work
// between reads further apart is in no wait; how much, and the data I/O of
// threads that never step (a prefetcher), are Result's, for the verdict to
// say when the wait is not measured.
//
//   step k-1 ]......get_batch (reads)......forward, backward......[ step k
//            <-------------------- step k's window ------------------>
//
// The first step has no previous one: its window is taken to be as long as
// the second step's period (from step 1's end to step 2's), or as the
// median of the second to fifth steps' where that is shorter (FirstPeriod:
// a second step slowed by a compilation, a save or a busy machine does not
// stretch the loop back into the start-up), back from the end of a step as
// short as the shortest of the first ones begun at step 1's start (a long
// first step keeps its window: format::FirstWindowStart). Until a thread
// steps, its data I/O is kept (at most kKeptEarlyCalls calls, the oldest
// dropped) for that window.
//
// A StepLoop lives inside the rank meter (rank_meter.h), which hands it each
// data I/O call once the stream has passed its end (with the part of it the
// GPU sat idle) and each optimizer step when it starts. Memory grows with the
// steps and the threads, never with the events.
#ifndef DLPROF_LIB_ANALYSIS_STEP_LOOP_H_
#define DLPROF_LIB_ANALYSIS_STEP_LOOP_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

#include "lib/format/step_rules.h"

namespace dlprof::analysis {

class StepLoop {
 public:
  // Calls of a thread before its first step kept for its first window.
  static constexpr size_t kKeptEarlyCalls = 4096;
  // Calls of a thread closer than this are one stretch of reading.
  static constexpr uint64_t kJoinGapNs = format::kStepReadingJoinNs;

  // A data I/O call (not a write) of `thread` (ThreadKey) over [start, end),
  // `gpu_idle_ns` of it inside the GPU's window with no device busy; `fault`:
  // a page fault on a mapped data file (reading, no call). Calls of a
  // thread come in order of start, each before the thread's next step. One
  // of no length (a fault the kernel did not time: lib/core/map_faults.h)
  // is a point: it joins the stretch around it, as the counters join it.
  // `map`: a call on a data file's maps (mmap, munmap, mremap): in the
  // wait, but no reading (Step::map_ns). A map the thread made in a window
  // and tore down in the same window (nanoGPT's get_batch: np.memmap made,
  // sliced, dropped on return) was made for the batch: its whole life is
  // the wait, one stretch however long the copies out of it took between
  // its calls (with its pages in memory, no call and no fault: 29 of the
  // program's 188 ms of get_batch were seen). Its time between calls is
  // split as a stretch's (Step::joined_ns: the program's own work, the
  // copies and the slicing; reading next to a page fault).
  // (kOther: a map moved, mremap, or a call that failed.)
  enum class MapCall : uint8_t { kNone, kMade, kTornDown, kOther };
  void AddDataIo(uint64_t thread, uint64_t start, uint64_t end, uint64_t bytes,
                 uint64_t gpu_idle_ns, bool fault = false, MapCall map = MapCall::kNone);
  // A data file's map made (`made`: from its mmap's end) or torn down (from
  // its munmap's start) in `process`, in order of time. While one is live
  // the stepping threads may read through it with no call and no fault
  // (pages already in memory): Result::map_live_ns.
  void AddDataMap(uint32_t process, uint64_t ns, bool made);
  // An optimizer step region of `thread`.
  void AddStep(uint64_t thread, uint64_t start, uint64_t end);
  bool any_step() const { return any_step_; }

  // One step's batch wait: the stepping thread's data I/O in its window.
  struct Step {
    uint64_t window_start = 0;   // the previous step's end (for the first, estimated)
    uint64_t start = 0, end = 0; // the optimizer step itself
    uint64_t io_ns = 0, gpu_idle_ns = 0;
    // Of io_ns, the time between joined calls, neither a page fault: the
    // program's own work (parsing, decoding), not time in a call.
    uint64_t joined_ns = 0;
    uint64_t fault_ns = 0;  // of io_ns, page faults on mapped data files
    uint64_t map_ns = 0;    // of io_ns, data files' maps made and torn down
    // Of joined_ns, the time between calls while a map the thread made for
    // the batch was open (AddDataIo): the copies out of it, the slicing.
    uint64_t map_copy_ns = 0;
    uint64_t io_first = 0, io_last = 0;  // the span of that I/O (0, 0: none)
    // The gaps of kJoinGapNs or more between its reads (calls that moved
    // bytes, faults), and the end of the latest read.
    uint64_t unjoined_ns = 0, read_last = 0;
    bool last_fault = false;  // the call ending at io_last was a page fault
    uint64_t thread = 0;  // the stepping thread (ThreadKey): whose loop it is
    // While the window is open: how many maps the thread made in it and
    // has not torn down, and since the first of them was made, the gaps of
    // kJoinGapNs or more (`held_ns`; of it, `held_between_ns` not next to a
    // page fault), which join the stretch where one is torn down, and the
    // joined ones' time between calls (`held_copy_ns`).
    uint32_t maps_made = 0;
    uint64_t held_ns = 0, held_between_ns = 0, held_copy_ns = 0;
  };
  struct Result {
    uint64_t loop_start = 0, loop_end = 0;
    std::vector<Step> steps;  // every thread's, by start
    // The stepping threads' data I/O inside their first windows: the
    // loop's, which the rank meter counted as start-up until the loop's
    // start was known.
    uint64_t first_window_io_ns = 0, first_window_io_ops = 0, first_window_read_bytes = 0;
    uint64_t first_window_map_ns = 0, first_window_map_bytes = 0;  // of them, faults'
    // The steps' windows' gaps between reads kJoinGapNs or more apart, the
    // median step's times the steps: work between them (a CPU sort after
    // each read) in a typical step, in no wait. Far larger than the waits,
    // the fetch's own work is not measured.
    uint64_t unjoined_ns = 0;
    // Data I/O inside the loop of threads that never stepped (a prefetcher
    // feeding a queue the loop takes its batches from), each thread's calls
    // as a union, joined as a step's are from the first step on, summed
    // over the threads. No step's wait: the loop's wait
    // for them (in the queue's get()) is no I/O.
    uint64_t other_threads_io_ns = 0;
    // The loop's time in which a stepping thread's process held a map of a
    // data file: copies out of its cached pages are in no wait (a np.memmap
    // read through by get_batch: 33 % of the loop by the program's clock,
    // a wait of 0).
    uint64_t map_live_ns = 0;
  };
  // Every step's wait; `first_ns`, the group's first event, bounds the loop's
  // start. Empty steps when no thread stepped.
  Result Finish(uint64_t first_ns) const;

  // The first step's period from `marks`, a figure at the end of each of
  // the first steps in order (their ends; the GPU's busy time by then):
  // the second's increment, or the median of the second to fifth's (the
  // lower of the middle two of four) where there are three or more and it
  // is smaller. 0 with fewer than two marks.
  static constexpr size_t kFirstPeriodMarks = format::kFirstPeriodMarks;
  static uint64_t FirstPeriod(const std::vector<uint64_t>& marks);

 private:
  struct Call {
    uint64_t start, end, bytes, gpu_idle_ns;
    bool fault;
    MapCall map;
    bool late;  // made after some thread's first step: in other_io_ns while it never steps
  };
  struct Thread {
    bool stepped = false;
    uint64_t resume_at = 0;  // the end of its latest step: later calls are the next window's
    Step gap;                // the current window's I/O, not yet closed by a step
    std::deque<Call> early;  // its calls before its first step (at most kKeptEarlyCalls)
    // Its data I/O after the loop's first step while it has not stepped,
    // and the end of its latest such call.
    uint64_t other_io_ns = 0, other_last = 0;
    std::vector<Step> steps;
  };
  std::unordered_map<uint64_t, Thread> threads_;  // threads that stepped or did data I/O
  bool any_step_ = false;
  // A process's data maps: how many are live, since when, and the spans in
  // which some were (AddDataMap). Grows with the maps made, at most one
  // span a step for a loop that maps its data anew each step.
  struct DataMaps {
    uint64_t live = 0, since = 0;
    std::vector<std::pair<uint64_t, uint64_t>> spans;
  };
  std::unordered_map<uint32_t, DataMaps> maps_;
  // The union of the stepping processes' live maps' spans within [from, to).
  uint64_t MapLiveNs(uint64_t from, uint64_t to) const;
};

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_STEP_LOOP_H_
