// The whole run's verdict, from a bounded trace's counters (DLPROF_KEEP;
// docs/ANALYSIS_RUNS.md, "Bounded traces"): the verdict's rules (verdict.h)
// applied where the counters hold their inputs, so that a month-long run
// gets its answer -- what held the loop back, how much, the wait's cause and
// what to try -- and not only the answer for the minutes its kept windows
// hold.
//
// The counters hold each rank's loop (its regions' first start and last
// end), batch waits and their four causes, its GPU busy time, its
// checkpoint saves and, from a writer that has them, its data stall (the
// I/O of a rank's processes against its GPU's idle time; whole_run.h); so
// this verdict is `data`, `checkpoint`, `host`, `neither` or `unknown`, and
// its findings are batch_wait (naming the cause and advising for it),
// slow_rank, worker_startup, data_stall and checkpoint (the saves of
// whole_run_saves.h), with the thresholds and the order of the full
// verdict. Not in the counters, so not in it: saves found as bursts of
// writes without a region, the access pattern's findings (small_reads,
// reread, few_files, metadata, the workers' estimate), the hand-over's
// parts and the start-up by pass. The kept
// windows' verdict has those for the time they cover.
#ifndef DLPROF_LIB_ANALYSIS_WHOLE_RUN_VERDICT_H_
#define DLPROF_LIB_ANALYSIS_WHOLE_RUN_VERDICT_H_

#include "lib/analysis/findings/verdict.h"
#include "lib/analysis/whole_run.h"

namespace dlprof::analysis {

// The loop is summed over the ranks as the full verdict's is (a job
// without ranks: its one loop); `wait_loop_ns` over the ranks that waited.
Verdict WholeRunVerdict(const WholeRun& w);

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_WHOLE_RUN_VERDICT_H_
