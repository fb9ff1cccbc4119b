// Loader workers: what a rank's workers did per batch, and what more of them
// would give (docs/ANALYSIS_LOADER.md, "Loader workers: what more would give").
//
// WorkerFigures is measured from a rank's merged stream by a WorkerMeter
// (worker_meter.h): the workers' batch fetches (the PyTorch bootstrap's
// `fetch_batch` regions), the I/O calls inside them, how many workers were
// fetching at once and how the reads' time per byte changed with the number
// of reads in flight. EstimateWorkers turns them, with the rank's loop and
// batch wait, into the batch wait expected with more workers, and says what
// would stop more workers from helping: the storage (reads did not speed up
// with concurrency) or the rank's CPUs (all busy). Integer nanoseconds and
// per-mille ratios throughout, as every figure of the summary.
#ifndef DLPROF_LIB_ANALYSIS_WORKER_ESTIMATE_H_
#define DLPROF_LIB_ANALYSIS_WORKER_ESTIMATE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace dlprof::analysis {

// What one rank's loader workers did (all of the rank's fetches).
struct WorkerFigures {
  // Processes that fetched batches: every pass's own with non-persistent
  // workers (WorkersAtOnce is the loader's count).
  uint64_t workers = 0;
  uint64_t fetches = 0, fetch_ns = 0;  // batch fetches and their summed length
  // Inside the fetches: every I/O call's time (summed), and the reads.
  uint64_t fetch_io_ns = 0;
  uint64_t read_ops = 0, read_bytes = 0, read_ns = 0;
  // busy_ns[k]: time during which k + 1 workers were fetching at once.
  std::vector<uint64_t> busy_ns;
  // The most processes that sent batches of one pass of one iterator (the
  // bootstrap's batch flows carry the pass's tag): the loader's
  // num_workers, the largest where loaders differ; 0 where no flow said.
  uint64_t workers_per_pass = 0;
  // Reads inside fetches by the number of worker reads in flight when each
  // started, itself included (index k: k + 1 in flight): calls, bytes, time.
  std::vector<uint64_t> level_ops, level_bytes, level_ns;
  uint64_t cpus = 0;  // CPUs the rank's main process may run on (0: unknown)
  // The workers' CPU time in their fetches (the bootstrap's fetch_cpu
  // counters) and how many fetches said it.
  uint64_t fetch_cpu_ns = 0, cpu_fetches = 0;
};

// The loader's workers (its num_workers; W in the model): workers_per_pass
// where the flows told it; else the most fetching at once for a tenth of
// the time any did or more (busy_ns), at most `workers`; `workers` where no
// sweep measured it.
uint64_t WorkersAtOnce(const WorkerFigures& w);

// Adds `from` to `into` (one rank measured in parts).
void MergeWorkerFigures(WorkerFigures* into, const WorkerFigures& from);

// What bounds the loader at a number of workers.
enum class WorkerLimit : uint8_t {
  kNone,     // the workers themselves: more of them would help
  kStorage,  // the reads did not speed up with concurrency
  kCpu,      // the rank's CPUs are all busy
};
const char* WorkerLimitName(WorkerLimit l);  // "", "storage", "cpu"

struct WorkerPoint {
  uint64_t workers = 0;
  uint64_t batch_wait_ns = 0;  // over the rank's batch waits, like its batch_wait_ns
  WorkerLimit bound = WorkerLimit::kNone;  // what sets the wait there
};

// The model's inputs, worked out once (per batch and per step).
struct WorkerModel {
  bool valid = false;  // workers fetched and the loop waited
  uint64_t workers = 0, steps = 0, cpus = 0;
  uint64_t fetch_ns = 0;    // T: a fetch's mean length
  uint64_t io_ns = 0;       // R: of it, in I/O calls
  // P: the workers' CPU work a fetch, as measured (fetch_cpu), else T - R;
  // the rest of a fetch beyond R and P (`idle_ns`) is waiting (the network,
  // a sleep, the interpreter lock), which more workers hide as they hide
  // reads and which takes no CPU.
  uint64_t cpu_ns = 0, idle_ns = 0;
  uint64_t compute_ns = 0;  // C: the loop's time per step outside the batch wait
  uint64_t wait_ns = 0;     // the measured batch wait, over all steps
  uint64_t model_wait_ns = 0;  // the model's wait at today's count, over all steps
  // The workers' start-up, as the wait split measured it (the waits' parts
  // before the workers' first fetches of each pass, and iter(loader)): left
  // out of the model's wait per step. It grows with the workers, which
  // start together and share the CPUs meanwhile (the first wait of a loop
  // on 2 CPUs: 137, 261 and 461 ms with 1, 2 and 4 workers).
  uint64_t startup_ns = 0;
  // Of it, the later passes of persistent workers: resuming them is no
  // start, and stays as measured with more.
  uint64_t resumed_startup_ns = 0;
  uint64_t busy_per_mille = 0;  // fetch time / (workers at once x loop)
  // Storage: a read's time per byte at the lowest and highest number of
  // reads in flight at its start (ps per byte), its growth per extra read
  // in flight (per mille of the lowest's), and the concurrency a read saw
  // on average today (per mille).
  uint64_t read_levels = 0;  // concurrency levels with enough reads to compare
  uint64_t low_level = 0, high_level = 0, low_ps_per_byte = 0, high_ps_per_byte = 0;
  uint64_t slowdown_per_mille = 0;
  uint64_t concurrency_per_mille = 1000;
  bool storage_saturated = false;  // the reads did not speed up with concurrency
};

// The inputs from a rank's figures: its workers, its loop's length, its
// batch wait, the batches it waited for and its workers' start-up (of it,
// the passes that resumed persistent workers).
WorkerModel MakeWorkerModel(const WorkerFigures& w, uint64_t loop_ns, uint64_t batch_wait_ns,
                            uint64_t steps, uint64_t worker_startup_ns = 0,
                            uint64_t resumed_startup_ns = 0);

// The batch wait (over all steps) with `workers` workers.
WorkerPoint EstimateWait(const WorkerModel& m, uint64_t workers);

// The estimates for `factors` times today's workers.
std::vector<WorkerPoint> EstimateWorkers(const WorkerModel& m,
                                         const std::vector<uint64_t>& factors = {2, 4});

// The point of `points` with the least wait (the first of equals).
const WorkerPoint& LeastWait(const std::vector<WorkerPoint>& points);

// "2 workers<per> the wait would fall to about X, with 4 grow to about Y
// (their start-up grows with their number)." against today's `wait_ns`:
// each count's way said again where it changes.
std::string EstimateText(const std::vector<WorkerPoint>& points, uint64_t wait_ns,
                         const std::string& per);

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_WORKER_ESTIMATE_H_
