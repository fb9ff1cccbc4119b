// The whole run of a bounded trace (DLPROF_KEEP), from its counters: while
// the trace segments hold only the last DURATION of events (and the windows
// a rule or `dlprof keep` kept), each process's counters stream
// (lib/format/counters.h) covers every interval of the run. This sums them
// into the run's figures -- exact I/O calls, bytes and time by class and
// kind, batch waits, their causes and steps, GPU busy time and data stall,
// the files most time went to, the same per rank and over time -- and says
// which windows the full events cover, so that a summary can tell the two
// apart (docs/ANALYSIS_RUNS.md, "Bounded traces").
#ifndef DLPROF_LIB_ANALYSIS_WHOLE_RUN_H_
#define DLPROF_LIB_ANALYSIS_WHOLE_RUN_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lib/analysis/summary/rank_figures.h"
#include "lib/analysis/whole_run_causes.h"
#include "lib/analysis/whole_run_points.h"
#include "lib/format/counters.h"
#include "lib/read/clock_domains.h"
#include "lib/read/regions.h"
#include "lib/read/trace_catalog.h"

namespace dlprof::analysis {

struct WholeRunRegion {
  uint64_t count = 0, ns = 0, max_ns = 0;
  uint64_t no_batch = 0;  // of count, requests no batch came out of (RegionRow's)
  uint64_t first_start_ns = UINT64_MAX, last_end_ns = 0;
};

struct WholeRunFile {
  std::string path;
  uint8_t cls = 0;
  format::IoTotals io;
};

struct KeptWindow {
  std::string host;
  int32_t pid = 0;
  uint64_t from_ns = 0, to_ns = 0;  // on the job's time base (its hosts' clocks aligned)
  std::string reason;               // "last 5 s" for the trailing window
};

// The loop's length and its batch waits from the regions (`batch_region`
// and "loader_iter", iter(loader), and "optimizer_step" for the steps): as
// docs/ANALYSIS.md measures the loop, first batch request to the end of the
// last step. `batches`: the `batch_region` regions, but those that found a
// pass over or raised (no batch came out of them). The batch waits split
// by cause (whole_run_causes.h).
struct WholeRunLoop {
  uint64_t loop_ns = 0, batch_wait_ns = 0, batches = 0, steps = 0;
  uint64_t loop_start_ns = 0, loop_end_ns = 0;  // its window (none: both 0)
  // A loop without a DataLoader: its "batches" are its optimizer steps, its
  // wait the reading before each (docs/ANALYSIS.md).
  bool loop_of_steps = false;
  // Its waits' blind spots (the full events' RankFigures, for the verdict's
  // "not measured"): work between reads far apart, other threads' data
  // I/O, and time with a data file's map live (counters.h, StepRecord).
  uint64_t steps_unjoined_ns = 0, other_threads_io_ns = 0, steps_map_live_ns = 0;
  // Of its preprocessing, the calls making and tearing down data maps and
  // the copies out of the batches' maps (StepRecord's parts).
  uint64_t steps_mapping_ns = 0, steps_map_copy_ns = 0;
  WholeRunCauses causes;
  // GPU work (the counters' GPU records; `gpu` where any): its busy time
  // inside the loop's window (each record's busy time in the part of its
  // span inside it; the whole run's without a loop), and the GPU's window,
  // its first record's start to its last one's end.
  bool gpu = false;
  uint64_t gpu_busy_ns = 0, gpu_first_ns = 0, gpu_last_ns = 0;
  // The data stall (the counters' data stall records; `data_stall` where
  // any: 0 is a figure, a writer from before them has none): the time I/O
  // was outstanding in the rank and none of its GPU work ran, inside the
  // GPU's window and the loop's (each record's stall in the part of its
  // stretch inside them; whole_run_gpu.h).
  bool data_stall = false;
  uint64_t data_stall_ns = 0;
  // Checkpoint saves (the counters' saves records; `has_checkpoint` where
  // any save counted): the full events' figures where the counters hold
  // their inputs (whole_run_saves.h).
  bool has_checkpoint = false;
  CheckpointFigures checkpoint;
};

// One rank's processes (those whose counters carry the rank, its loader
// workers among them), their loop and its waits.
struct WholeRunRank : WholeRunLoop {
  int32_t rank = -1;
  uint64_t processes = 0;
  format::IoTotals io;
};

struct WholeRun : WholeRunLoop {
  bool present = false;     // some trace of the run had counters
  std::string batch_region = read::kDefaultBatchRegion;  // ReadWholeRun's
  uint64_t processes = 0;   // counters files read
  uint64_t intervals = 0;
  uint64_t start_ns = UINT64_MAX, end_ns = 0;
  uint64_t events = 0;
  format::IoTotals total;
  format::IoTotals classes[format::kCounterClasses];
  std::map<uint32_t, format::KindRow> kinds;         // by kind code
  std::map<std::string, WholeRunRegion> regions;     // by name
  std::vector<WholeRunFile> files;                   // by time, most first
  std::vector<KeptWindow> kept;                      // windows kept whole
  uint64_t kept_event_ns = 0;  // union of the segments' spans, all processes
  WholeRunPoints points;              // over time (whole_run_points.h)
  std::vector<std::string> messages;  // torn or damaged counters
  // How its loader workers (processes that fetched batches) started: a
  // fork of the loop's process, or an image exec'd (spawn, forkserver).
  bool workers_forked = false, workers_execed = false;
  // Some worker made the first fetches of two passes: it outlived a pass.
  bool workers_persistent = false;
  std::vector<WholeRunRank> ranks;   // by rank; none in a job without ranks
};

// The counters of the traces of `catalog` (each trace's CountersPathOf),
// summed. `batch_region` names the batch waits' region.
// `clocks`: how the catalog's traces map onto the job's time base (its
// hosts' clocks, lib/read/clock_domains.h); the counters' times follow.
WholeRun ReadWholeRun(const read::TraceCatalog& catalog, const read::ClockAlignment& clocks,
                      const std::string& batch_region);

// "data", "code", "outputs", "system", "other".
const char* CounterClassName(uint8_t cls);

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_WHOLE_RUN_H_
