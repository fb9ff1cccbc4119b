// The whole run's verdict from its counters (whole_run_verdict.h).
#include "lib/analysis/findings/whole_run_verdict.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "lib/analysis/whole_run_loops.h"
#include "lib/format/path_class.h"

namespace dlprof::analysis {
namespace {

// Adds one loop (a rank's, or the job's where it has no ranks) to `v`;
// `dataloader` set where it waited for a loader's batches.
void AddRankLoop(const WholeRunLoop& l, Verdict* v, bool* dataloader) {
  v->loop_ns += l.loop_ns;
  *dataloader = *dataloader || (l.loop_ns > 0 && !l.loop_of_steps);
  v->loop_steps += l.steps;
  // What a loop of steps' waits cannot see, whatever they measured.
  v->steps_unjoined_ns += l.steps_unjoined_ns;
  v->other_threads_io_ns += l.other_threads_io_ns;
  v->steps_map_live_ns += l.steps_map_live_ns;
  if (l.gpu) {
    v->has_gpu = true;
    v->gpu_busy_ns += l.gpu_busy_ns;
    v->gpu_window_ns += l.gpu_last_ns - l.gpu_first_ns;
  }
  if (l.data_stall) {
    v->has_data_stall = true;
    v->data_stall_ns += l.data_stall_ns;
  }
  v->has_checkpoint = v->has_checkpoint || l.has_checkpoint;
  v->checkpoint.Add(l.checkpoint);
  if (l.batches == 0 && l.batch_wait_ns == 0) return;
  v->has_batch_wait = true;
  v->batch_wait_ns += l.batch_wait_ns;
  v->wait_loop_ns += l.loop_ns;
  v->steps += l.batches;
  const WholeRunCauses& c = l.causes;
  v->reading_ns += c.reading_ns;
  v->preprocessing_ns += c.preprocessing_ns;
  if (l.loop_of_steps) {
    AddStepLoopParts(c.preprocessing_ns, l.steps_mapping_ns, l.steps_map_copy_ns,
                     &v->preprocessing_parts);
  }
  v->handover_ns += c.handover_ns;
  v->worker_startup_ns += c.worker_startup_ns;
  v->split = v->split || c.total_ns() > c.unsplit_ns;
}

// Ranks that step together (verdict_lockstep.cc), by the counters' loops:
// the longest wait of one rank stopped every rank, against a rank's mean
// loop. (The full events' figure is each moment any rank waited while all
// were in their loops: at least this; the counters keep no step's time.
// Summed over the ranks, the whole run read 12.7 % of a job whose kept
// events said 27.0 %, the slow rank's own clock 24.1 %.) Each rank's
// window is weighed from when the last rank began its loop: a rank that
// enters late (its model built, a checkpoint loaded) holds the others'
// first step in the collective, their loops longer by that alone, as the
// full events' rule weighs them from each rank's first batch on.
Lockstep WholeRunLockstep(const WholeRun& w) {
  Lockstep out;
  uint64_t all_in = 0;  // every rank in its loop from here
  for (const WholeRunRank& r : w.ranks) {
    if (r.loop_ns > 0) all_in = std::max(all_in, r.loop_start_ns);
  }
  std::vector<RankPace> paces;
  uint64_t loops_ns = 0, longest_wait_ns = 0;
  for (const WholeRunRank& r : w.ranks) {
    if (r.loop_ns == 0) continue;
    if (r.loop_end_ns <= all_in) return out;  // one ended before another began
    paces.push_back(RankPace{r.loop_end_ns - all_in, r.batch_wait_ns + r.checkpoint.blocking_ns,
                             r.batches > 0 ? r.batches : r.steps});
    loops_ns += r.loop_ns;
    longest_wait_ns = std::max(longest_wait_ns, r.batch_wait_ns);
    out.save_ns = std::max(out.save_ns, r.checkpoint.blocking_ns);
  }
  if (paces.size() < 2) return Lockstep();
  const uint64_t mean_loop_ns = loops_ns / paces.size();
  if (!StepTogether(paces, mean_loop_ns)) return Lockstep();
  out.found = true;
  out.ranks = paces.size();
  out.loop_ns = mean_loop_ns;
  // As the full events': the saves of the rank that saved longest, and
  // the two shares never more than the loop (verdict_lockstep.cc).
  out.save_ns = std::min(out.save_ns, mean_loop_ns);
  out.wait_ns = std::min(longest_wait_ns, mean_loop_ns - out.save_ns);
  return out;
}

}  // namespace

Verdict WholeRunVerdict(const WholeRun& w) {
  Verdict v;
  v.batch_region = w.batch_region;
  v.run_ns = w.end_ns > w.start_ns ? w.end_ns - w.start_ns : 0;
  std::vector<std::pair<int32_t, uint64_t>> rank_waits;
  bool dataloader = false;
  if (w.ranks.empty()) {
    AddRankLoop(w, &v, &dataloader);
  } else {
    for (const WholeRunRank& r : w.ranks) {
      AddRankLoop(r, &v, &dataloader);
      rank_waits.emplace_back(r.rank, r.batch_wait_ns);
    }
  }
  v.optimizer_steps = v.loop_steps > 0;
  if (!v.optimizer_steps) v.loop_steps = v.steps;
  // As the full events' verdict: a loader's loop where any rank had one
  // (or waits without steps), else a loop of steps.
  const bool loader = v.has_batch_wait && (dataloader || !v.optimizer_steps);
  v.loop_basis = loader              ? LoopBasis::kDataLoader
                 : v.optimizer_steps ? LoopBasis::kSteps
                 : v.has_gpu         ? LoopBasis::kGpu
                                     : LoopBasis::kRun;
  if (v.loop_basis == LoopBasis::kGpu) v.loop_ns = v.gpu_window_ns;
  if (v.loop_basis == LoopBasis::kRun) v.loop_ns = v.run_ns;
  v.cause = LargestCause(v.reading_ns, v.preprocessing_ns, v.handover_ns, v.worker_startup_ns);
  v.lockstep = WholeRunLockstep(w);
  // Workers started afresh in each of several passes (none outlived a
  // pass): a rank iterated its loaders more than once (the job's passes
  // are every rank's).
  auto iter = w.regions.find(kIterRegion);
  const uint64_t passes = iter == w.regions.end() ? 0
                          : iter->second.count / std::max<size_t>(1, w.ranks.size());
  v.workers_restarted =
      passes > 1 && !w.workers_persistent && (w.workers_forked || w.workers_execed);
  // As the full events' verdict: exec'd where any worker was.
  v.worker_start = w.workers_execed   ? Verdict::WorkerStart::kExeced
                   : w.workers_forked ? Verdict::WorkerStart::kForked
                                      : Verdict::WorkerStart::kUnknown;
  v.bound = BoundOf(v);
  MarkStepUnmeasured(&v);
  std::vector<Finding> found;
  // (The slowest rank's host: a rank's processes may be on several hosts.)
  LoopWaitFindings(v, DistributionOf(std::move(rank_waits)), w.ranks.size(), "", &found);
  WorkerStartupFinding(v, &found);
  if (v.has_data_stall) DataStallFinding(v, &found);
  const format::IoTotals& data = w.classes[format::kPathData];
  CheckpointFinding(v, data.read_bytes, data.read_ns, &found);
  KeepFindings(std::move(found), &v);
  return v;
}

}  // namespace dlprof::analysis
