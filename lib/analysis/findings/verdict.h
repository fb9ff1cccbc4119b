// The verdict: the answer to "is my training held back by data, by how much,
// and what should I change?", from a finished Summary.
//
// It is the first thing --summary prints (tools/dump/verdict_text.cc) and a
// part of --format json ("verdict"): the share of the run the training loop
// spent waiting for batches and the share of GPU time lost to data stall,
// where the I/O time went by role (main processes, loader workers, the
// launcher, other processes), and the findings that matter most. Each
// finding is a rule with a documented threshold (docs/ANALYSIS.md,
// "Verdict"), a number, and what to try; they are ordered by the time they
// stand for. Nothing here is measured anew: every number comes from the
// summary's own figures.
#ifndef DLPROF_LIB_ANALYSIS_VERDICT_H_
#define DLPROF_LIB_ANALYSIS_VERDICT_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lib/analysis/meters/handover.h"
#include "lib/analysis/summary/summary.h"
#include "lib/analysis/summary/worker_estimate.h"
#include "lib/text/text.h"  // DurationText, ByteText, PerMilleText

namespace dlprof::analysis {
using namespace dlprof::text;

struct Finding {
  std::string rule;    // the rule's name: "batch_wait", "small_reads", ...
  std::string what;    // what was found, with its number
  std::string advice;  // what to try
  uint64_t cost_ns = 0;  // the time it stands for (the order of the findings)
  // few_workers only: the batch wait expected with more workers (today's
  // count `workers` per rank; worker_estimate.h), and what would stop more
  // from helping ("storage", "cpu"; empty: nothing measured does).
  uint64_t workers = 0;
  std::vector<WorkerPoint> estimate = {};
  std::string limit = {};
  WorkerModel model = {};  // the inputs, of the rank that waited most
  // head_of_line only: the slow samples of the late batches (their indices,
  // -1 unknown, and the files they read), and the batch wait expected had
  // the loader handed each ready batch over first (in_order=False).
  std::vector<int64_t> samples = {};
  std::vector<std::string> files = {};
  // ... and the parts of their fetches that held the others up ("collate").
  std::vector<std::string> parts = {};
  bool has_in_order_estimate = false;
  uint64_t in_order_wait_ns = 0;
};

// Processes of one role and their I/O.
struct RoleShare {
  std::string role;  // "main", "loader workers", "launcher", "other"
  uint64_t processes = 0;
  // The most of them alive at once (first to last event): loader workers
  // started anew each epoch are 2 at a time of 4 over two epochs.
  uint64_t at_once = 0;
  uint64_t io_ns = 0;       // time in I/O calls, summed
  uint64_t read_bytes = 0;
};

// A main process or loader worker (verdict_roles.cc: not a launcher), whose
// parent did not go on to end with status 0, that ended with a non-zero
// exit status or by a signal, as its trace's last record says
// (lib/core/process_end.h): a rank that failed, and the ranks its launcher
// then ended, read as a finished run without. Or whose trace has neither
// that record nor its end marker: killed by SIGKILL (the OOM killer, a
// scheduler's time limit), which no handler sees, or still running.
struct BadEnd {
  std::string host, exe;
  int32_t pid = 0, rank = -1;
  int32_t status = 0;  // its exit status, where no signal
  int32_t signal = 0;  // the signal that ended it (0: none)
  int32_t sender = 0;  // the signal's sender's pid (0: the kernel, or unknown)
  std::string sender_exe;  // the sender's program, where it is one of the job's
  bool recorded = true;  // false: its trace was cut short with no end record
};
constexpr size_t kMaxBadEnds = 8;

// What holds the job back, in the order the verdict tests it
// (docs/ANALYSIS.md, "Verdict").
enum class Bound : uint8_t {
  kData,        // the batch wait is at least 10 % of the loop
  kCheckpoint,  // the loop stopped for checkpoint saves at least 10 % of it
  kHost,     // the GPU idled most of the loop without waiting for data
  kNeither,  // a loop or GPU work, and neither of the above
  kUnknown,  // no loop and no GPU work: nothing to measure against
};
const char* BoundName(Bound b);  // "data", "checkpoint", "host", "neither", "unknown"

// How the loop's window was found.
enum class LoopBasis : uint8_t {
  kDataLoader,  // first batch request to the end of the last step, per rank
  kSteps,       // no DataLoader: the optimizer steps, per rank
  kGpu,         // neither: the GPU's first to last record, per rank
  kRun,         // none of these: the run's length
};
const char* LoopBasisName(LoopBasis b);  // "dataloader", "steps", "gpu", "run"

// What the batch wait went to (docs/ANALYSIS.md, "Where the wait goes").
enum class WaitCause : uint8_t { kReading, kPreprocessing, kHandover, kWorkerStartup };
// "reading", "preprocessing", "handover", "worker_startup"
const char* WaitCauseName(WaitCause c);
// The same in prose: "hand-over", "worker start-up".
const char* WaitCauseText(WaitCause c);
// The largest of the four parts of a wait (ties: the first in this order).
WaitCause LargestCause(uint64_t reading_ns, uint64_t preprocessing_ns, uint64_t handover_ns,
                       uint64_t worker_startup_ns);

// Ranks that step together (verdict_lockstep.cc; docs/ANALYSIS.md): each
// step's collective waits for the slowest rank, so the job's wait is the
// critical path's. `wait_ns`: each step's longest batch wait over the ranks,
// summed; `save_ns`: the blocking saves of the rank that saved longest;
// both against a rank's loop, the ranks' mean (`loop_ns`).
struct Lockstep {
  bool found = false;
  size_t ranks = 0;
  uint64_t loop_ns = 0, wait_ns = 0, save_ns = 0;
};

struct Verdict {
  uint64_t run_ns = 0;
  std::string batch_region = read::kDefaultBatchRegion;  // Summary::batch_region
  Bound bound = Bound::kUnknown;
  // The training loop, summed over the ranks (or the job's one group): the
  // yardstick of every share below. `steps`: optimizer steps in it (the
  // batches where none were recorded); start-up is what came before.
  LoopBasis loop_basis = LoopBasis::kRun;
  uint64_t loop_ns = 0, loop_steps = 0;
  bool optimizer_steps = false;  // loop_steps counts optimizer steps
  uint64_t startup_ns = 0, startup_io_ns = 0, startup_io_ops = 0, startup_read_bytes = 0;
  // Of the start-up's I/O time and bytes, page faults on mapped files.
  uint64_t startup_map_ns = 0, startup_map_bytes = 0;
  // Batch wait: the training loop waiting for a batch (the batch region),
  // summed over the ranks, against the loop's window of the ranks that
  // waited (`wait_loop_ns`); `steps` is the batches waited for, `raised`
  // the waits that raised instead (their time in batch_wait_ns).
  bool has_batch_wait = false;
  uint64_t batch_wait_ns = 0, wait_loop_ns = 0, steps = 0, raised = 0;
  // The batch wait split by what the loader did meanwhile, summed over the
  // ranks (adding up to batch_wait_ns), and the largest part (ties: the
  // first in this order). `split`: measured (a rank meter saw the loop).
  bool split = false;
  uint64_t reading_ns = 0, preprocessing_ns = 0, handover_ns = 0, worker_startup_ns = 0;
  // Of reading_ns, page faults on mapped data files, and of those, the ones
  // while a made batch waited to be sent (wait_causes.h).
  uint64_t reading_faults_ns = 0, handover_faults_ns = 0;
  WaitCause cause = WaitCause::kReading;
  uint64_t cause_ns() const {
    switch (cause) {
      case WaitCause::kReading: return reading_ns;
      case WaitCause::kPreprocessing: return preprocessing_ns;
      case WaitCause::kHandover: return handover_ns;
      case WaitCause::kWorkerStartup: break;
    }
    return worker_startup_ns;
  }
  // The workers' start-up by pass over the loader (index 0: waits before
  // any loader_iter region, 1: the first pass, ...), summed over the ranks.
  std::vector<uint64_t> pass_worker_startup_ns;
  // The start-ups after each rank's first pass, and the waits at the ends
  // of passes while torch shut non-persistent workers down (RankFigures).
  uint64_t startup_after_first_pass_ns = 0, pass_end_shutdown_ns = 0;
  uint64_t pass_end_leftover_ns = 0;  // of the shut-downs, not saved (RankFigures)
  // Persistent workers started and shut down again because the DataLoader
  // was made anew each pass (RankFigures::rebuilt_persistent_ns).
  uint64_t rebuilt_persistent_ns = 0;
  // What persistent_workers=True would save: both of those, but for the
  // leftover fetches that they would wait for at a later pass's start.
  uint64_t persistent_workers_save_ns() const {
    return startup_after_first_pass_ns + pass_end_shutdown_ns -
           std::min(pass_end_shutdown_ns, pass_end_leftover_ns);
  }
  // The batch wait by loader (RankFigures::loader_waits), summed over the
  // ranks by the loader's number L: the kListedLoaders that waited longest,
  // in order of L; the others (a loader made anew each epoch is one per
  // epoch) counted, with their wait, in loaders_left_out/_ns.
  static constexpr size_t kListedLoaders = 8;
  std::vector<LoaderWait> loader_waits;
  uint64_t loaders_left_out = 0, loaders_left_out_ns = 0;
  // Head-of-line time (part of batch_wait_ns, orthogonal to the four parts)
  // and the late batches that had it, most first; inside the fetches the
  // loop waited for, their preprocessing by part, largest first.
  uint64_t head_of_line_ns = 0;
  uint64_t out_of_order_wait_ns = 0;  // the batch wait with in_order=False (rank_figures.h)
  // The hand-over in parts (adding up to handover_ns) and what held it up
  // most (handover.h's causes, by the hand-over time each explains; kNone:
  // none measured).
  uint64_t handover_in_worker_ns = 0, handover_in_transit_ns = 0, handover_rebuild_ns = 0;
  std::array<uint64_t, kHandoverCauseSlots> handover_cause_ns = {};
  HandoverCause handover_cause = HandoverCause::kNone;
  std::vector<LateBatch> late_batches;
  std::vector<std::pair<std::string, uint64_t>> preprocessing_parts;
  // The loader workers' fetches outside their I/O calls, and of that their
  // threads' CPU time (the bootstrap's fetch_cpu), summed over the ranks
  // whose every fetch said it (0 and 0 where some did not): preprocessing
  // mostly off the CPU waited (a sleep, a lock, the network), not computed.
  uint64_t fetch_work_ns = 0, fetch_cpu_ns = 0;
  // Why there is no batch wait, when there is none.
  std::string batch_wait_missing;
  // A loop of steps whose wait the trace cannot tell (StepUnmeasured in
  // verdict.cc): its waits' work between reads far apart, its data read
  // on threads that never step, or its time with a data map live
  // (RankFigures), summed over the ranks. Then
  // there is no batch wait, `batch_wait_missing` says why and the bound is
  // unknown: the 2.6 % measured was not the loop's wait (its clock: 85 %).
  uint64_t steps_unjoined_ns = 0, other_threads_io_ns = 0, steps_map_live_ns = 0;
  bool wait_unmeasured = false;
  // Checkpoints (checkpoint_meter.h), summed over the ranks: the saves in
  // the loops (`has_checkpoint` when any was), and restoring one before
  // them (start-up's).
  bool has_checkpoint = false;
  CheckpointFigures checkpoint;
  // The ranks in lockstep, where they are; then the shares below are its.
  Lockstep lockstep;
  // The shares of the loop (per mille) that the verdict judges: the batch
  // wait's and the blocking saves', of the ranks' sums, or in lockstep of
  // the critical path.
  uint64_t wait_per_mille() const;
  uint64_t save_per_mille() const;
  // Data stall (inside the loop where there is one) against the GPU's
  // window, and the GPU's busy time inside the loop, summed over ranks.
  // `has_data_stall`: the whole run's verdict only (whole_run_verdict.h),
  // whose data stall is measured where the counters hold it; the full
  // events measure it wherever `has_gpu`.
  bool has_gpu = false, has_data_stall = false;
  uint64_t data_stall_ns = 0, gpu_window_ns = 0, gpu_busy_ns = 0;
  std::vector<RoleShare> roles;    // the four roles, in that order
  // How the loader workers started, for the start-up's advice: some ran a
  // new interpreter (spawn: "fork rather than spawn"), all were forked
  // (fork, forkserver), or not known (no worker process). The whole run's
  // from its workers' counters files' headers.
  enum class WorkerStart : uint8_t { kUnknown, kForked, kExeced };
  WorkerStart worker_start = WorkerStart::kUnknown;
  // The whole run's: its loader workers started afresh in each of several
  // passes (no worker outlived a pass), from the counters, which do not
  // split the start-up by pass (false in the full events' verdict, which
  // does: persistent_workers_save_ns).
  bool workers_restarted = false;
  // The processes that ended badly, by rank then host and pid: the first
  // kMaxBadEnds, and how many in all.
  std::vector<BadEnd> bad_ends;
  uint64_t bad_end_count = 0;
  std::vector<Finding> findings;   // most costly first, at most kMaxFindings
};

constexpr size_t kMaxFindings = 5;

// The role of every process row of the summary, by key: "main", "loader
// workers", "launcher" or "other" (docs/ANALYSIS.md, "Roles").
std::map<std::string, std::string> ProcessRoles(const Summary& s);
// One row's role (ProcessRoles of the whole summary, looked up).
std::string ProcessRole(const Summary& s, const std::string& key);
// The four roles, in that order, with their processes and I/O.
std::vector<RoleShare> RoleShares(const Summary& s);
// Verdict::bad_ends and bad_end_count (verdict_ends.cc).
void FindBadEnds(const Summary& s, Verdict* v);
// How it ended: "exit status 1", "SIGTERM from pid 4100 (mpirun)",
// "SIGSEGV", "no end recorded (SIGKILL, the OOM killer, or still
// running)"; and who it was: "rank 1 (pid 4123)", "pid 4123 (python3)".
std::string BadEndHow(const BadEnd& e);
std::string BadEndWho(const BadEnd& e);
// The line of them: "exit status 1: rank 1 (pid 4123); SIGTERM from pid
// 4100 (mpirun): rank 0 (pid 4122), rank 2 (pid 4124)", and how many more.
std::string BadEndsText(const Verdict& v);

Verdict ComputeVerdict(const Summary& s);
// A loop of steps whose measured wait is under the data bound's share while
// what it cannot see could reach it (docs/ANALYSIS.md, "Loops without a
// DataLoader"): why, or "" where the wait stands. MarkStepUnmeasured takes
// such a wait out of `v` (no batch wait, the reason, the bound unknown);
// the full events' verdict and the whole run's (from counters) alike.
std::string StepUnmeasured(const Verdict& v);
void MarkStepUnmeasured(Verdict* v);
// Whether the ranks of `s` step together, and the critical path's figures.
Lockstep FindLockstep(const Summary& s);
// One rank's loop as the lockstep rule weighs it: its window, what it
// stopped for on its own in it (waits, saves), and its steps.
struct RankPace {
  uint64_t window_ns = 0, stopped_ns = 0, steps = 0;
};
// Whether ranks of these loops step together (verdict_lockstep.cc):
// as many steps, loops about equal while what they stopped for differs.
bool StepTogether(const std::vector<RankPace>& ranks, uint64_t mean_loop_ns);

// The loop's figures per rank: the ranks', or the job's one group (the
// verdict's loop and the few_workers finding read them). verdict.cc.
std::vector<const RankFigures*> LoopGroups(const Summary& s);
// Every rule's findings on `s` and `v`'s figures, all of them, in the
// rules' order (KeepFindings keeps those shown). verdict_rules.cc.
void AllFindings(const Summary& s, const Verdict& v, std::vector<Finding>* out);

// The parts of ComputeVerdict that the whole run's verdict from a bounded
// trace's counters shares (whole_run_verdict.h): each rule in one place
// (verdict_rules.cc; KeepFindings in verdict.cc).
// What holds the loop back, from v's batch wait, checkpoints and GPU busy.
Bound BoundOf(const Verdict& v);
// The batch_wait finding, and slow_rank: the ranks' batch waits `d` (of
// `ranks` ranks) where the slowest (on `host`; empty: not known) waited
// twice the median or more.
void LoopWaitFindings(const Verdict& v, const RankDistribution& d, size_t ranks,
                      const std::string& host, std::vector<Finding>* out);
// The data_stall finding: the GPU idle with data I/O outstanding a tenth
// of its window or more.
void DataStallFinding(const Verdict& v, std::vector<Finding>* out);
// The checkpoint finding: the loop stopped a tenth of it or more for
// saves; `data_read` the data set's reads (bytes and time in the calls),
// whose rate the saves' is held against.
void CheckpointFinding(const Verdict& v, uint64_t data_read_bytes, uint64_t data_read_ns,
                       std::vector<Finding>* out);
// v->findings: `found` less those worth under 1 % of the loop, the batch
// wait's first and those that explain its cause next where the job waits
// for data, then by cost; at most kMaxFindings.
void KeepFindings(std::vector<Finding> found, Verdict* v);

// The batch_wait finding (`share`: the wait's per mille of the loop), which
// names the wait's cause and advises for it where the split was measured;
// and whether a rule's finding explains a cause (it then follows the
// batch_wait finding). verdict_wait.cc.
Finding BatchWaitFinding(const Verdict& v, uint64_t share);
bool ExplainsCause(const std::string& rule, WaitCause c);

// The findings about data read through memory maps (verdict_maps.cc):
// `mapped_random`, and `maps_each_step` where a loop of steps' wait is not
// measured for its live maps but its calls making and tearing them down
// were.
void MapFindings(const Summary& s, const Verdict& v, std::vector<Finding>* out);
// The preprocessing's part `name` (0 without): a loop of steps' calls
// making and tearing down its data files' maps, RankFigures::kMappingPart;
// its copies out of the maps it made for its batches, kMapCopiesPart.
uint64_t PartNs(const Verdict& v, const char* name);
// The workers' start-up: its finding (a tenth of the batch wait or more),
// what to try, and its passes as text ("pass 1 384.0 ms, pass 2 52.0 ms").
void WorkerStartupFinding(const Verdict& v, std::vector<Finding>* out);
// Batches held up behind a slow one (a tenth of the batch wait or more).
void HeadOfLineFinding(const Verdict& v, std::vector<Finding>* out);
// " (of the workers' preprocessing ...: GaussianBlur 74.0 %, decode 12.0 %)".
std::string PartsText(const Verdict& v);
// What to try for a hand-over, by its measured cause.
std::string HandoverAdvice(const Verdict& v);
// "loader 0 at train.py:42" (where the program made it, when told), or
// "unnamed": a loader as the wait by loader names it.
std::string LoaderText(const LoaderWait& w);
std::string WorkerStartupAdvice(const Verdict& v);
std::string PassStartupText(const Verdict& v);

// The "verdict" object of the summary's JSON (verdict_json.cc).
std::string VerdictJson(const Verdict& v);
// Its "findings" array.
std::string VerdictFindingsJson(const std::vector<Finding>& findings);
// The verdict's "checkpoint": {"ns", "writes", "bytes", "blocking_ns",
// "background_ns", "per_mille", "write_ns", "write_bytes_per_s"}, or null.
std::string CheckpointJson(const Verdict& v);

// Shares as whole per mille, so that renderers print the same numbers.
inline uint64_t PerMille(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0
                    : static_cast<uint64_t>(static_cast<unsigned __int128>(part) * 1000 / whole);
}

// A bandwidth: `bytes` over `ns` (the time in the calls that moved them), in
// bytes per second; 0 without time.
inline uint64_t BytesPerSecond(uint64_t bytes, uint64_t ns) {
  if (ns == 0) return 0;
  const unsigned __int128 r = static_cast<unsigned __int128>(bytes) * 1000000000u / ns;
  return r > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(r);
}

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_VERDICT_H_
