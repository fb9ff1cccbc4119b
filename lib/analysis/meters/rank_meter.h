// One rank group's figures (rank_figures.h) measured in one pass over the
// group's merged stream, as an observer beside the summary's other meters.
//
// Every figure is a union over time built as events arrive by start
// (StallMeter's method): an interval stays open while the next start falls
// inside it and closes once the stream passes its end. A closed I/O
// interval or batch wait is then measured against the GPU busy union, whose
// closed intervals are kept back to the earliest interval still open: every
// busy interval that can overlap it has started by then. What is kept grows
// with the steps, the data-stall episodes and the communication bursts
// (they are the per-step result and what the straggler loss needs), never
// with the events. Each batch wait is split by cause on the way
// (wait_causes.h), within the same bounds.
#ifndef DLPROF_LIB_ANALYSIS_RANK_METER_H_
#define DLPROF_LIB_ANALYSIS_RANK_METER_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "lib/analysis/summary/rank_figures.h"
#include "lib/analysis/meters/checkpoint_meter.h"
#include "lib/analysis/meters/kept_spans.h"
#include "lib/analysis/meters/loader_passes.h"
#include "lib/analysis/meters/process_loops.h"
#include "lib/analysis/meters/step_loop.h"
#include "lib/analysis/meters/wait_causes.h"
#include "lib/read/event_source.h"
#include "lib/read/regions.h"

namespace dlprof::analysis {
using namespace dlprof::read;

class RankMeter : public EventObserver {
 public:
  // `processes`: the group's (a source's processes(), outliving the meter).
  // Regions named `batch_region` (annotation regions or NVTX ranges, the
  // name alone or followed by " " and arguments) are the batch waits of
  // whichever process records them: the one that iterates the loader is the
  // rank's main process, whatever started it (docs/ANALYSIS.md, "Roles").
  RankMeter(const std::vector<ProcessTrace>& processes, int32_t rank, std::string host,
            std::string batch_region);

  // Every event in the stream's order; only `counted` ones count.
  void Add(const StreamEvent& e, bool counted) override;
  // The figures; `stall` (when given) gets the data-stall pieces, by start:
  // the intervals whose lengths add up to data_stall_ns (for timelines).
  RankFigures Finish(IntervalList* stall = nullptr);
  // Second 0 of the rank's timelines (the summary's; by default its first
  // event).
  void set_timeline_base(uint64_t base_ns) { timeline_base_ns_ = base_ns; }
  // Whether any event counted (a filter such as --rank may leave none).
  bool any_counted() const { return any_counted_; }

  // What each process of the group did (by index into `processes`), for
  // its role (Summary::ProcessId): batches waited for and fetched,
  // optimizer steps, GPU records.
  struct Activity {
    uint64_t batch_waits = 0, batch_fetches = 0, optimizer_steps = 0, gpu_records = 0;
  };
  const std::vector<Activity>& activity() const { return activity_; }

 private:
  struct Interval {
    uint64_t start = 0, end = 0;
  };
  // A union being built: its open interval and its closed length.
  struct Union {
    bool open = false;
    Interval current;
    uint64_t closed_ns = 0;
    // Adds [start, end) (starts in order); true with the interval it closed.
    bool Add(uint64_t start, uint64_t end, Interval* closed);
    uint64_t Length() const { return closed_ns + (open ? current.end - current.start : 0); }
  };
  // A batch wait not yet passed by the stream.
  struct PendingWait {
    uint32_t process;
    size_t step;  // index into figures_.steps
    uint64_t end;
  };

  void Advance(uint64_t now);
  void AddGpu(const StreamEvent& e);
  // `startup`: a call before the loop (events come by start: until the
  // first batch wait has come) that no batch fetch holds.
  void AddIo(const Event& e, bool startup);
  // A page fault on a mapped file (a major_fault event): in the data stall
  // and the start-up's I/O as a call is, but no call.
  void AddMapRead(const StreamEvent& e, bool startup);
  void AddBatchWait(const StreamEvent& e, StepRequest request);
  void AddOptimizerStep(const StreamEvent& e);
  // The GPU's busy time before `t`, once every event before `t` has come.
  uint64_t BusyBefore(uint64_t t) const;
  // A loop without batch waits: its figures from its optimizer steps.
  void TakeStepLoop();
  // The saves that filled a cache of samples on a stepping thread, into the
  // batch waits of the steps whose windows they lie in (CacheFills).
  void AddCacheFills(StepLoop::Result* r);
  // A mark inside a batch wait: the end of a pass, or (in a loader_iter)
  // which loader and pass it began.
  void NoteLoaderMark(const StreamEvent& e);
  // What a region is to the loop, by its name (looked at once per name).
  // kLoopStep: annotate_loader's "step" (batch handed out to next request),
  // which ends the loop where no optimizer step does.
  LoopRegion LoopRegionOf(const StreamEvent& e);
  bool IsCommunication(const StreamEvent& e);
  // The GPU busy time within [start, end); its idle pieces to `idle` when given.
  uint64_t Covered(uint64_t start, uint64_t end, IntervalList* idle) const;
  void CloseIo();
  void Forget();

  const std::vector<ProcessTrace>& processes_;
  std::string batch_region_;
  RankFigures figures_;
  std::vector<Activity> activity_;
  std::vector<uint64_t> fetching_until_;  // per process: its latest fetch_batch's end
  uint64_t timeline_base_ns_ = UINT64_MAX;
  bool any_counted_ = false;

  Union busy_, compute_or_comm_, comm_;
  std::deque<Interval> busy_closed_;  // back to the earliest open interval
  size_t forget_at_ = 64;
  bool gpu_seen_ = false;

  bool io_open_ = false;
  Interval io_;
  IntervalList stall_;  // I/O outstanding, GPU idle, from the window's start

  std::vector<PendingWait> pending_waits_;
  IntervalList batch_waits_;            // every step's interval, by start
  std::vector<uint64_t> step_covered_;  // its GPU busy time
  uint64_t passes_ = 0;  // loader_iter regions so far: the pass of the next batch wait
  std::vector<int64_t> step_loaders_;  // by step: the loader its marks name, or -1
  // By step: it holds "shutdown loader=L", persistent workers shut down
  // as the loop went on without their DataLoader (the bootstrap's).
  std::vector<uint8_t> step_shutdowns_;
  std::map<int64_t, std::string> loader_sites_;  // L -> where it was made (its mark)
  // By pass: what its `epoch loader=L pass=N` mark says (none: not marked),
  // and whether any pass had such a mark.
  struct PassMark {
    bool marked = false;
    bool later = false;       // N > 0: a loader iterated again
    bool persistent = false;  // " persistent=1": its workers resumed, not started
    // pass=0 persistent=1 of an L that had a pass before: its DataLoader
    // made anew, its persistent workers started again.
    bool rebuilt = false;
    // pass=0 of non-persistent workers of an L whose DataLoader before ran
    // that one pass alone: made anew each pass, its start-up saved only by
    // one DataLoader kept across the passes (LoaderWait::made_anew_ns).
    bool anew = false;
    uint64_t loader_key = 0;  // (process << 32 | L)
  };
  // By pass: whether a later pass of the same DataLoader follows it (pass
  // N + 1 of its L): where it was left early, persistent workers would
  // finish its fetches at that pass's start.
  std::vector<bool> PassesContinued() const;
  // The L of every `epoch` mark so far, by process (L is numbered in each:
  // a job restarted as a new process begins at L 0 again), and its latest
  // pass=N.
  std::unordered_map<uint64_t, unsigned> last_pass_of_loader_;
  std::vector<PassMark> pass_marks_;
  bool marked_passes_ = false;
  uint64_t loop_steps_end_ =
      0;  // the latest end of a step (optimizer or annotate_loader's) in the loop
  // (process, string id) -> what the region is to the loop, whether the
  // name is a communication kernel's: each name is looked at once.
  std::unordered_map<uint64_t, LoopRegion> loop_names_;
  std::unordered_map<uint64_t, bool> comm_names_;
  FetchParts fetch_parts_;  // inside the workers' fetches; before causes_, which takes its records
  WaitCauses causes_;  // each batch wait split by what the loader did meanwhile
  LoaderPasses loader_passes_;  // each worker's loader, each loader's passes
  // Inside the fetches (fetch_parts.h), into figures_ at the end.
  void TakeFetchParts();

  // A loop without a DataLoader (step_loop.h): data I/O calls not yet
  // passed by the stream (their GPU idle time is measured then; at most one
  // per thread), the start-up's I/O when the first optimizer step came, and
  // the GPU's busy time at the first two steps' starts.
  struct PendingIo {
    uint64_t thread, start, end, bytes;
    bool fault;  // a page fault on a mapped data file
    StepLoop::MapCall map = StepLoop::MapCall::kNone;  // a call on a data file's maps
  };
  struct StartupIo {
    uint64_t io_ns = 0, io_ops = 0, read_bytes = 0, map_ns = 0, map_bytes = 0;
  };
  StepLoop step_loop_;
  // Each process's loop (process_loops.h), of its batch waits or, where
  // none waited (`of_steps`), of its steps: summed in a job without ranks
  // (rank -1), and in a rank whose processes looped one after another.
  std::unique_ptr<ProcessLoops> process_loops_;
  void TakeProcessLoops(bool of_steps);
  CheckpointMeter checkpoints_;
  // A bounded trace's stretches of events on disk (kept_spans.h): the loop
  // is its window's part inside its processes' (SetLoopUnkept).
  KeptSpans kept_;
  void SetLoopUnkept();
  std::unordered_set<uint64_t> loop_threads_;  // threads that waited for batches or stepped
  std::vector<PendingIo> data_io_pending_;
  StartupIo steps_startup_;
  std::vector<uint64_t> step_busy_;  // the GPU's busy time at the first steps (FirstPeriod)
};

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_RANK_METER_H_
