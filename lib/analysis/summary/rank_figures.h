// The per-rank figures of the summary (docs/ANALYSIS_TABLES.md, "Ranks"): what
// each rank group (a rank's processes on its host and the devices its GPU
// work ran on) waited for, and the job's figures that span ranks.
//
// A RankMeter (rank_meter.h) measures one group's RankFigures while its
// group is read; partial summaries carry them (one per group, so merging
// is concatenation) and FinishRankFigures works out, once every group is
// in, what needs all ranks at once: the straggler loss (one rank's
// communication while another waits) and the distributions over ranks.
#ifndef DLPROF_LIB_ANALYSIS_RANK_FIGURES_H_
#define DLPROF_LIB_ANALYSIS_RANK_FIGURES_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lib/analysis/summary/worker_estimate.h"

namespace dlprof::analysis {

// The hand-over's causes (lib/analysis/meters/handover.h's HandoverCause).
constexpr size_t kHandoverCauseSlots = 5;

// Disjoint half-open intervals [start, end) in order of start.
using IntervalList = std::vector<std::pair<uint64_t, uint64_t>>;

// What the loop asked the loader for in a batch wait: a batch; to start a
// pass (iter(loader): forking or resuming its workers, the loader_iter
// region); or a batch when the pass was over (the request that ends an
// epoch, where the loader shuts non-persistent workers down: its batch
// region holds an "end" mark); or a batch it did not get, next() raising
// (a "raised" mark: a worker's exception, a timeout, a worker killed).
enum class StepRequest : uint8_t { kBatch, kIter, kEnd, kRaised };
const char* StepRequestName(StepRequest r);  // "batch", "iter", "end", "raised"

// The waits of a rank (or a job) for one loader: their time and the
// batches they received (docs/ANALYSIS.md, "batch wait": `loaders`).
struct LoaderWait {
  int64_t loader = -1;  // the process's L (in first-use order); -1: unknown
  uint64_t ns = 0;
  uint64_t batches = 0;
  // Where the program made it ("train.py:42", the bootstrap's mark `loader L
  // site=...`); empty: not told (annotate_loader's, a list).
  std::string site{};
  // Of ns, what persistent_workers=True would save of this loader: its
  // workers' start-ups after its first pass and their shut-downs at its
  // passes' ends (RankFigures' startup_after_first_pass_ns and
  // pass_end_shutdown_ns, by loader), for the advice to name it.
  uint64_t persistent_save_ns = 0;
  // Of ns, what its persistent workers cost because the program made the
  // DataLoader anew each pass (RankFigures::rebuilt_persistent_ns, by
  // loader), for the advice to name it.
  uint64_t rebuilt_ns = 0;
  // Of persistent_save_ns, the start-ups of its passes whose non-persistent
  // DataLoader was made anew for each (RankMeter's PassMark::anew):
  // persistent_workers=True alone saves none of it, one DataLoader kept
  // across the passes would.
  uint64_t made_anew_ns = 0;
};

// Adds a wait of `ns` for `loader` (a batch received: `batches` 1) to
// `waits`, kept in order of loader; `site` names it where it had no name.
void AddLoaderWait(std::vector<LoaderWait>* waits, int64_t loader, uint64_t ns,
                   uint64_t batches, const std::string& site = std::string(),
                   uint64_t persistent_save_ns = 0, uint64_t rebuilt_ns = 0,
                   uint64_t made_anew_ns = 0);

// One step of a rank: one batch wait, numbered in order of start from 1.
// The step runs from this batch wait's start to the next one's.
struct RankStep {
  uint64_t step = 0;
  uint64_t start_ns = 0;
  uint64_t batch_wait_ns = 0;
  uint64_t batch_wait_gpu_idle_ns = 0;  // of it, inside the GPU window with the GPU idle
  uint64_t straggler_loss_ns = 0;       // communication while another rank waited
  uint64_t data_stall_ns = 0;           // the rank's data stall in this step
  // The batch wait split by what the loader did meanwhile (wait_causes.h);
  // the four add up to batch_wait_ns.
  uint64_t reading_ns = 0, preprocessing_ns = 0, handover_ns = 0, worker_startup_ns = 0;
  // The pass over the loader it waited in: loader_iter regions (iterators
  // started, persistent workers resumed) begun before it, in the rank's
  // processes; 0 where none was recorded.
  uint64_t pass = 0;
  StepRequest request = StepRequest::kBatch;
  // Of the wait, the part before its batch was made during which a later
  // batch of the same iterator already was (in-order hand-over): orthogonal
  // to the four parts above.
  uint64_t head_of_line_ns = 0;
  // Waiting for other ranks in collective MPI-IO calls, taken out of the
  // wait's reading (and so of batch_wait_ns): no data was waited for
  // (collective_waits.h). Set at FinishSummary.
  uint64_t collective_wait_ns = 0;
};

// A sample a worker made (fetch_parts.h's SampleRecord, as the summary keeps
// it): dataset[index] and what it took.
struct SlowSample {
  int64_t index = -1;   // -1: unknown
  uint64_t ns = 0;
  uint64_t pass = 0;    // its loader's pass, from 1 (loader_passes.h)
  int32_t pid = 0;      // the worker
  std::vector<std::string> files;  // data files it read
  // Of the rank's kept slowest samples, in how many of its loader's passes
  // this index of that loader was among them: every pass, a slow sample;
  // once, a slow read.
  uint64_t slow_passes = 0;
  // Its loader's number L (the passes' `epoch loader=L` marks, as the wait
  // by loader numbers them): -1 where unknown. A loader made anew elsewhere
  // starts its passes at 1 again: (loader, pass) tells its samples apart.
  int64_t loader = -1;
};

// A batch the loop waited for while a later one was made: how long, and
// the slowest sample of its fetch (what held it up; empty, ns 0, where it
// took under a quarter of head_of_line_ns and no part held it up either).
struct LateBatch {
  uint64_t head_of_line_ns = 0;
  SlowSample slowest;
  // Where its slowest sample is not half its fetch, the fetch's largest
  // part, its reading one ("reading", "collate", "transform Resize"), but
  // the dataset's own code, and its time, where that is a quarter of
  // head_of_line_ns or more: what held the batch up, rather than one
  // sample. Empty otherwise.
  std::string held_by;
  uint64_t held_by_ns = 0;
};

// A rank's checkpoints (checkpoint_meter.h): the saves in its loop, and the
// restore before it.
struct CheckpointFigures {
  uint64_t saves = 0;          // checkpoints written in the loop
  uint64_t bytes = 0;          // their bytes
  uint64_t ns = 0;             // their time (the union of the saves)
  uint64_t blocking_ns = 0;    // on the threads that ran the loop: the loop stopped
  uint64_t background_ns = 0;  // on other threads or processes
  uint64_t write_ns = 0;       // in their write calls (the storage's write bandwidth)
  uint64_t restore_ns = 0, restore_bytes = 0;  // restoring one before the loop
  // Another rank's, summed (each its own unions).
  void Add(const CheckpointFigures& o) {
    saves += o.saves;
    bytes += o.bytes;
    ns += o.ns;
    blocking_ns += o.blocking_ns;
    background_ns += o.background_ns;
    write_ns += o.write_ns;
    restore_ns += o.restore_ns;
    restore_bytes += o.restore_bytes;
  }
};

struct RankFigures {
  int32_t rank = -1;
  std::string host;
  uint64_t processes = 0;       // the rank process and its workers
  // The training loop (docs/ANALYSIS.md, "The loop"): from the first batch
  // request to the end of the last step (an optimizer step, else a batch
  // wait). Without batch waits, `loop` is false and the verdict falls back
  // on the GPU's window. `startup_ns` is the time before it, from the
  // group's first recorded event; its I/O is `startup_io_*`.
  bool loop = false;
  // No DataLoader: the loop is the optimizer steps, each batch wait the
  // stepping thread's data I/O between two of them (step_loop.h).
  bool loop_of_steps = false;
  // Such a loop's figures that tell when its batch wait is not measured
  // (StepLoop::Result): the steps' windows' work between reads further apart
  // than the reading's join, and the data I/O during the loop of threads
  // that never stepped (a prefetcher's); and the loop's time in which a
  // stepping process held a data file's map (StepLoop::Result::map_live_ns).
  uint64_t steps_unjoined_ns = 0, other_threads_io_ns = 0, steps_map_live_ns = 0;
  uint64_t loop_start_ns = 0, loop_end_ns = 0;
  uint64_t optimizer_steps = 0;  // optimizer steps (region "optimizer_step") in the loop
  uint64_t first_ns = 0;         // the group's first recorded event
  uint64_t startup_io_ns = 0, startup_io_ops = 0, startup_read_bytes = 0;
  // Of the start-up's I/O time and bytes, page faults on mapped files (a
  // checkpoint through safetensors or torch.load(mmap=True)); the faults
  // are no ops.
  uint64_t startup_map_ns = 0, startup_map_bytes = 0;
  uint64_t gpu_busy_before_loop_ns = 0;  // of gpu_busy_ns, before the loop's start
  // A job without ranks in which `loops` processes (2 or more) waited for
  // batches, each running a loop of its own (process_loops.h), or a rank
  // whose processes did so one after another (restarted: torchrun's elastic
  // restarts): the loop is their windows summed (`loops_ns`), its start-up
  // theirs (`loops_startup_ns`, each from its process's first event), as a
  // job's ranks add up; the window above spans them all (and the time
  // between a rank's attempts). 0 or 1: one loop, the window.
  uint64_t loops = 0;
  uint64_t loops_ns = 0, loops_startup_ns = 0;
  // Of the loop's window (the loops' windows), the time with no event of
  // its processes on disk: a bounded trace's segments deleted between the
  // windows it kept (kept_spans.h). Not the loop's: its figures are about
  // the kept windows only (docs/ANALYSIS_RUNS.md). loops_ns is less it.
  uint64_t loop_unkept_ns = 0;
  uint64_t loop_ns() const {
    if (!loop) return 0;
    if (loops > 1) return loops_ns;
    const uint64_t window = loop_end_ns - loop_start_ns;
    return window - std::min(window, loop_unkept_ns);
  }
  uint64_t startup_ns() const {
    if (loop && loops > 1) return loops_startup_ns;
    return loop && loop_start_ns > first_ns ? loop_start_ns - first_ns : 0;
  }
  // The loop's steps: its optimizer steps, else the batches it received.
  uint64_t loop_steps() const { return optimizer_steps > 0 ? optimizer_steps : batches(); }
  // Its batch waits that received a batch (not a pass's start or end).
  uint64_t batches() const;
  // Its batch waits that raised instead (StepRequest::kRaised).
  uint64_t raised() const;
  std::vector<int32_t> devices;  // the devices its GPU work ran on
  // Batch wait: the rank's main process inside the batch region.
  uint64_t batch_wait_ns = 0;
  uint64_t batch_wait_gpu_idle_ns = 0;
  // The steps' splits summed (RankStep): they add up to batch_wait_ns.
  uint64_t reading_ns = 0, preprocessing_ns = 0, handover_ns = 0, worker_startup_ns = 0;
  // Of reading_ns, page faults on mapped data files (wait_causes.h), and of
  // those, the ones while a made batch waited to be sent.
  uint64_t reading_faults_ns = 0, handover_faults_ns = 0;
  // The workers' start-up by pass (index: RankStep::pass), summed over the
  // pass's steps: what the loop waited for workers to start each time.
  std::vector<uint64_t> pass_worker_startup_ns;
  // The batch wait by loader (the L of the marks in its waits: `batch`,
  // `end` and `epoch loader=L`; -1 for waits with none), by L.
  std::vector<LoaderWait> loader_waits;
  uint64_t head_of_line_ns = 0;  // the steps' summed
  // The batch wait had the loader handed each batch over as soon as it was
  // made (in_order=False; out_of_order.h, pass by pass).
  uint64_t out_of_order_wait_ns = 0;
  // The hand-over in parts (handover.h), adding up to handover_ns, and by
  // cause (index: HandoverCause; 0: none measured).
  uint64_t handover_in_worker_ns = 0, handover_in_transit_ns = 0, handover_rebuild_ns = 0;
  std::array<uint64_t, kHandoverCauseSlots> handover_cause_ns = {};
  uint64_t passes = 0;           // loader_iter regions: passes over its loaders
  // Inside the fetches the loop waited for (fetch_parts.h): their
  // preprocessing by part (a transform's class name, "decode", "collate",
  // "dataset"), largest first; the rank's slowest samples (at most
  // kKeptSlowSamples, slowest first) and the late batches with the most
  // head-of-line time (at most kKeptLateBatches). A loop without a
  // DataLoader that maps its data has parts too: kMappingPart, its calls
  // making and tearing down maps; kMapCopiesPart, its work while a map made
  // for the batch was open (StepLoop::Step::map_copy_ns: slicing, copying
  // out of it); kBetweenReadsPart, the rest of its work between joined
  // calls.
  static constexpr const char* kMappingPart = "mapping";
  static constexpr const char* kMapCopiesPart = "copies out of maps";
  static constexpr const char* kBetweenReadsPart = "work between reads";
  std::vector<std::pair<std::string, uint64_t>> preprocessing_parts;  // PreprocessingParts
  std::vector<SlowSample> slowest_samples;
  std::vector<LateBatch> late_batches;
  // Of worker_startup_ns, the passes of a loader after its first: what
  // persistent_workers=True would save of the start-ups.
  uint64_t startup_after_first_pass_ns = 0;
  // Of handover_ns, the requests that found a pass of non-persistent
  // workers over (StepRequest::kEnd): torch shuts the workers down there,
  // which persistent_workers=True would save too. Left out of
  // handover_cause_ns: it is no batch's hand-over.
  uint64_t pass_end_shutdown_ns = 0;
  // Of that, the part of passes left early that waited for the batches
  // their workers were still fetching, where a later pass of the same
  // DataLoader followed: persistent workers would finish those fetches at
  // its start, so it is no saving (WaitSplit::leftover_ns).
  uint64_t pass_end_leftover_ns = 0;
  // Of worker_startup_ns, the later passes of persistent workers (their
  // `epoch` mark's " persistent=1"): resumed, not started, so not what more
  // workers would multiply (worker_estimate.h).
  uint64_t resumed_startup_ns = 0;
  // Of the batch wait, persistent workers started and shut down again
  // because the DataLoader was made anew each pass: the start-up of a
  // loader's pass that its `epoch` mark says is a first pass of persistent
  // workers (pass=0 persistent=1) where the same L (a DataLoader made
  // again at one site) had a pass before, and the shut-down of persistent
  // workers at a pass's end (kEnd: the bootstrap records one only where
  // the loop went on without their DataLoader). persistent_workers=True
  // saved none of it; one DataLoader kept across the passes would.
  uint64_t rebuilt_persistent_ns = 0;
  // I/O of any of its processes outstanding while none of its devices was
  // busy, inside its GPU window and, where there is a loop, inside the loop.
  uint64_t data_stall_ns = 0;
  // GPU: the union of its kernels, copies and memsets over its window,
  // split so the parts add up: communication kernels first, then other
  // kernels (compute), then copies and memsets (memory).
  bool gpu = false;
  uint64_t gpu_first_ns = 0, gpu_last_ns = 0;
  uint64_t gpu_busy_ns = 0;
  uint64_t gpu_compute_ns = 0, gpu_communication_ns = 0, gpu_memory_ns = 0;
  uint64_t gpu_idle_ns() const {
    const uint64_t window = gpu_last_ns - gpu_first_ns;
    return window > gpu_busy_ns ? window - gpu_busy_ns : 0;
  }
  // I/O of its processes: time in the calls (summed), ops, bytes read.
  uint64_t io_ns = 0, io_ops = 0, read_bytes = 0;
  // Waiting for other ranks in collective MPI-IO calls (collective_waits.h,
  // set at FinishSummary): taken out of io_ns; of it, out of the loop's
  // batch wait (the steps' collective_wait_ns). And the waiting of other
  // ranks in operations it entered last: what it held them up.
  uint64_t collective_wait_ns = 0, collective_wait_loop_ns = 0, collective_late_ns = 0;
  uint64_t straggler_loss_ns = 0;
  // Its loader workers' fetches (worker_meter.h), for what more would give.
  WorkerFigures workers;
  CheckpointFigures checkpoint;
  std::vector<RankStep> steps;
  // Over time, a bin per second of the summary's timeline (per_second's):
  // bytes its processes read (by call start) and its GPU busy ns.
  std::vector<uint64_t> read_per_second, gpu_busy_per_second;

  // Kept until FinishRankFigures, which needs every rank's: when the rank
  // waited (batch waits and data-stall time) and when its GPU ran
  // communication kernels. Empty afterwards.
  IntervalList waiting, communication;
};

// What a rank's summary keeps of its slowest samples and late batches.
constexpr size_t kKeptSlowSamples = 64;
constexpr size_t kKeptLateBatches = 16;

// A figure over the ranks: the total, its distribution and the ranks with
// the most (largest first, ties by rank; at most kTopRanks). The median of
// an even count is the lower of the two middle values.
struct RankDistribution {
  uint64_t total_ns = 0, min_ns = 0, median_ns = 0, max_ns = 0;
  std::vector<std::pair<int32_t, uint64_t>> top;  // (rank, ns)
};
constexpr size_t kTopRanks = 5;
// The distribution of (rank, ns) pairs, in any order.
RankDistribution DistributionOf(std::vector<std::pair<int32_t, uint64_t>> values);

// For step N: the rank whose batch wait was longest (ties: the lowest rank)
// among the ranks that had an N-th batch wait.
struct SlowestLoader {
  uint64_t step = 0;
  int32_t rank = -1;
  std::string host;
  uint64_t batch_wait_ns = 0;
  uint64_t median_batch_wait_ns = 0;  // over the ranks that had step N
};

// A host's ranks added up (their time figures are sums over the ranks).
struct HostRanks {
  std::string host;
  uint64_t ranks = 0;
  uint64_t batch_wait_ns = 0, data_stall_ns = 0, straggler_loss_ns = 0;
  uint64_t gpu_busy_ns = 0, gpu_compute_ns = 0, gpu_communication_ns = 0, gpu_memory_ns = 0;
  uint64_t gpu_idle_ns = 0;
  uint64_t io_ns = 0, read_bytes = 0;
};

struct RankJobFigures {
  RankDistribution batch_wait, data_stall, straggler_loss;
  std::vector<HostRanks> hosts;  // by host name
  bool gpu = false;              // some rank had GPU work
  std::vector<SlowestLoader> slowest_loader_per_step;
  // The rank with the most batch wait over the run (-1: no batch wait).
  int32_t slowest_loader_rank = -1;
};

// Whether a kernel's name is a collective's (NCCL/RCCL and the like):
// nccl, AllReduce, Broadcast, ReduceScatter, AllGather, AllToAll, ...,
// in any case, with or without underscores.
bool IsCommunicationKernel(const std::string& name);

// Adds `from` to `into`: a group's figures join the list; the figures of
// one (rank, host) measured apart (traces read one at a time, which
// summarize.h does only when none holds GPU work or regions) add up.
void MergeRankFigures(std::vector<RankFigures>* into, std::vector<RankFigures>&& from);

// Adds the time in [lo, hi) to `field` of the steps it falls in (`steps` in
// order of start; a step runs from its batch wait's start to the next one's,
// the last to the end; time before the first step is in none).
void AddToSteps(uint64_t lo, uint64_t hi, uint64_t RankStep::*field,
                std::vector<RankStep>* steps);

// Orders `ranks` by (rank, host), adds the straggler loss to every rank and
// step, drops the interval lists, and computes the job's figures.
void FinishRankFigures(std::vector<RankFigures>* ranks, RankJobFigures* job);

// A preprocessing's parts, by name (RankFigures::preprocessing_parts).
using PreprocessingParts = std::vector<std::pair<std::string, uint64_t>>;
// Adds `parts` to `into`, those of one name summed, largest first.
void AddPreprocessingParts(const PreprocessingParts& parts, PreprocessingParts* into);
// A loop of steps' preprocessing by part, where it mapped its data (added
// to `into`; nothing where `mapping` and `copies` are 0): the calls making
// and tearing down maps (kMappingPart), the copies out of the batches'
// maps (kMapCopiesPart), and the rest of `preprocessing`, the work between
// its reads (kBetweenReadsPart). The full events' and the counters' alike.
void AddStepLoopParts(uint64_t preprocessing, uint64_t mapping, uint64_t copies,
                      PreprocessingParts* into);

// The part of `a` that `b` covers (both disjoint and sorted).
uint64_t OverlapLength(const IntervalList& a, const IntervalList& b);

// The union of two lists (disjoint and sorted), disjoint and sorted.
IntervalList UnionOf(const IntervalList& a, const IntervalList& b);

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_RANK_FIGURES_H_
