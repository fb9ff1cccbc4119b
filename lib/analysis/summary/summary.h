// The summary's model: the numbers behind `dlprof-dump --summary`
// (docs/ANALYSIS.md defines each), for the whole run, per rank, per process
// and per file, and how one level's I/O figures merge with another's.
//
// The meters (lib/analysis/meters) fill it in one pass over a stream, a
// partial summary per group of traces (partial_summary.h) merges with the
// others', and lib/analysis/summarize.h makes it from a job's traces.
#ifndef DLPROF_LIB_ANALYSIS_SUMMARY_SUMMARY_H_
#define DLPROF_LIB_ANALYSIS_SUMMARY_SUMMARY_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "lib/analysis/summary/call_sites.h"
#include "lib/analysis/summary/collective_waits.h"
#include "lib/analysis/summary/rank_figures.h"
#include "lib/read/clock_domains.h"
#include "lib/read/regions.h"
#include "lib/read/input_loss.h"
#include "lib/read/regions.h"

namespace dlprof::analysis {
using namespace dlprof::read;

// Darshan's access-size bins.
constexpr int kSizeBins = 10;
int SizeBin(uint64_t bytes);
const char* SizeBinName(int bin);

// Bounds the common sizes and strides kept per level.
constexpr size_t kMaxDistinctSizes = 4096;

// Darshan's bin limits: a size is in bin i when it is at or above i of them.
inline constexpr uint64_t kSizeBinLimits[kSizeBins - 1] = {
    100, 1024, 10 * 1024, 100 * 1024, 1 << 20, 4 << 20, 10 << 20, 100 << 20, 1 << 30};

// Sizes from 2^k up to 2^(k+1) reach the same limits but at most one: the
// bin is the limits at or below 2^k, plus one if the size reaches the limit
// strictly inside that range. Two loads and a compare per access.
struct SizeBinTable {
  uint8_t base[64] = {};
  uint64_t inner_limit[64] = {};
  constexpr SizeBinTable() {
    for (int k = 0; k < 64; ++k) {
      const uint64_t low = uint64_t{1} << k;
      inner_limit[k] = UINT64_MAX;
      for (uint64_t limit : kSizeBinLimits) {
        if (limit <= low) ++base[k];
        if (limit > low && (k == 63 || limit < low << 1)) inner_limit[k] = limit;
      }
    }
  }
};
inline constexpr SizeBinTable kSizeBinTable;

inline int SizeBinOf(uint64_t bytes) {
  const int k = 63 - __builtin_clzll(bytes | 1);
  return kSizeBinTable.base[k] + (bytes >= kSizeBinTable.inner_limit[k]);
}

// Operations below this size count as small I/O.
constexpr uint64_t kSmallIoBytes = 64 * 1024;

// The classes the summary counts, in print order.
enum class OpGroup : uint8_t { Open, Read, Write, Seek, Meta, Sync, Mmap, Other, Count };
constexpr int kOpGroups = static_cast<int>(OpGroup::Count);
const char* OpGroupName(OpGroup g);

// Reads or writes at one level.
struct AccessStats {
  uint64_t ops = 0;
  uint64_t bytes = 0;  // bytes really moved
  uint64_t time_ns = 0;
  // Calls that moved data asking for under 64 KiB, and their time. A call
  // that moved nothing (`empty_ops`: the end of file, an error) is no small
  // one whatever it asked: Python's f.read() ends each file with a 1-byte
  // read that returns 0 (half of a whole-file loop's reads "small").
  uint64_t small_ops = 0, small_time_ns = 0;
  uint64_t empty_ops = 0;
  std::array<uint64_t, kSizeBins> histogram{};
  std::unordered_map<uint64_t, uint64_t> sizes;    // access size -> ops
  uint64_t consecutive = 0;  // started exactly where the previous one ended
  uint64_t sequential = 0;   // started at or after that (consecutive included)
  uint64_t first = 0;        // first access of a process to a file: not classified
  std::unordered_map<int64_t, uint64_t> strides;   // gap to the previous end -> ops

  uint64_t random() const { return ops - sequential - first; }
  void Merge(const AccessStats& o);
};

// Reading through memory maps (major_fault and map_wait events, docs/
// ANALYSIS_TABLES.md "Reading through memory maps"): no call, so apart from
// the calls' figures.
struct MapReads {
  uint64_t faults = 0;
  uint64_t waits = 0;       // minor faults that waited for a page being read ahead
  uint64_t bytes = 0;       // the pages brought in
  uint64_t time_ns = 0;     // the time the faults and waits held their threads
  uint64_t sequential = 0;  // at or after the end of the process's previous fault's page
  uint64_t first = 0;       // a process's first fault on a file: not classified
  uint64_t random() const { return faults - sequential - first; }
  // Read through a map: its faults, or only the read-ahead of its mapping
  // or advice (MAP_POPULATE, MADV_WILLNEED: bytes with no fault).
  bool any() const { return faults > 0 || bytes > 0; }
  void Merge(const MapReads& o) {
    faults += o.faults, waits += o.waits, bytes += o.bytes, time_ns += o.time_ns;
    sequential += o.sequential, first += o.first;
  }
};

struct IoStats {
  std::array<uint64_t, kOpGroups> ops{};
  std::array<uint64_t, kOpGroups> time_ns{};
  AccessStats read, write;
  uint64_t first_ns = UINT64_MAX;
  uint64_t last_ns = 0;
  uint64_t errors = 0;
  // MPI-IO data calls.
  uint64_t mpi_collective_ops = 0, mpi_collective_bytes = 0;
  uint64_t mpi_independent_ops = 0, mpi_independent_bytes = 0;
  // Files: opens that succeeded, largest offset reached by a read (to spot
  // re-reads).
  uint64_t opens = 0;
  uint64_t read_extent = 0;
  MapReads maps;
  // Of read.ops, in-kernel copies out of the file into a traced one
  // (shutil.copyfile of a checkpoint to model_best): no reading of data
  // where the job wrote the file (ClassifyFile).
  uint64_t copied_out_ops = 0;
  // Of the collective MPI-IO calls' time, waiting for other ranks to enter
  // (collective_waits.h): taken out of time_ns at FinishSummary.
  uint64_t mpi_collective_wait_ns = 0;

  uint64_t io_time_ns() const;
};

// Merges the I/O figures of one level (run, rank, process or file).
void MergeIoStats(IoStats* into, const IoStats& from);

struct SlowOp {
  uint64_t dur_ns, start_ns;
  int64_t offset;
  uint64_t size;
  int32_t pid, tid;
  std::string name, path;
};

struct GpuDevice {
  std::string host;  // devices of different hosts are different devices
  int32_t device = 0;
  uint64_t kernels = 0, copies = 0, memsets = 0;
  uint64_t copy_bytes = 0;
  uint64_t first_ns = 0, last_ns = 0;
  uint64_t busy_ns = 0;  // union of kernel, copy and memset intervals
  uint64_t stall_ns = 0;  // I/O outstanding while this device was idle
  // Saturating: a device id of several hosts adds up their busy time (each
  // rank group measures its own) within one window.
  uint64_t idle_ns() const {
    const uint64_t window = last_ns - first_ns;
    return window > busy_ns ? window - busy_ns : 0;
  }
};

struct StallShare {
  std::string what;  // a path or "pid N (exe)"
  uint64_t stall_ns;
};

// Figures of one region name (every instance together: name your regions
// "epoch 3" to get one row per epoch).
struct RegionStats {
  std::string name;
  bool outside = false;  // the row of calls outside every region (name "")
  uint64_t instances = 0;
  uint64_t region_ns = 0;     // summed length of those instances
  uint64_t io_ops = 0;        // read, write, open, meta... calls not nested in another
  uint64_t io_ns = 0;         // their summed duration
  uint64_t read_ops = 0, write_ops = 0;
  uint64_t read_bytes = 0, write_bytes = 0;  // bytes really moved
  uint64_t io_busy_ns = 0;    // length of the union of those calls' intervals
  uint64_t stall_ns = 0;      // of which no GPU was busy (within the GPU window)
};

struct Summary {
  uint64_t processes = 0, events = 0, nested_events = 0;
  uint64_t run_start_ns = 0, run_end_ns = 0;
  IoStats run;
  std::map<int32_t, IoStats> ranks;     // only when some process has a rank
  std::map<std::string, IoStats> processes_stats;  // key "[host: ]pid N (exe)"
  // Who each processes_stats row is (the first process of that key).
  struct ProcessId {
    std::string host;
    int32_t pid = 0, ppid = 0, rank = -1;
    std::string exe;      // the program it ran last (basename)
    bool forked = false;  // a traced process's fork child (its first image)
    bool execed = false;  // it ran more than one image (exec'ed another program)
    // What it did, for its role (docs/ANALYSIS.md, "Roles"): batches it
    // waited for (the batch region), batches it fetched as a loader worker,
    // its optimizer steps and GPU records. Summed over its traces.
    uint64_t batch_waits = 0, batch_fetches = 0, optimizer_steps = 0, gpu_records = 0;
    // A Python interpreter run with -I, -E or -S, which keep the PyTorch
    // bootstrap out (PYTHONPATH or site ignored).
    bool python_isolated = false;
    // How it ended, where its trace says (lib/core/process_end.h): the
    // status it gave exit() or main's return, or the signal that ended it
    // and who sent it (0: the kernel, or none recorded).
    bool exit_seen = false;
    int32_t exit_status = 0, end_signal = 0, signal_sender = 0;
    // One of its traces has no end marker (the reader's saw_final): with no
    // end record either, it was killed outright (SIGKILL: the OOM killer)
    // or was still running when read. (An image that exec'd another wrote
    // its end marker then.)
    bool trace_unfinished = false;
  };
  std::map<std::string, ProcessId> process_ids;
  std::map<std::string, IoStats> files;
  std::vector<SlowOp> slowest;          // longest first
  // Per-second bytes read and written, from run_start_ns.
  std::vector<std::pair<uint64_t, uint64_t>> per_second;
  // The same bytes in bins of fine_bin_ns (1 ms, doubled as the run grows:
  // at most kFineBins of them, intervals.h) from per_second's second 0,
  // timeline_base_ns: what the loop's timeline is binned from.
  uint64_t timeline_base_ns = 0, fine_bin_ns = 0;
  std::vector<std::pair<uint64_t, uint64_t>> fine_bins;
  // Per second of the same timeline, GPU busy ns: per rank group (a rank's
  // devices; the whole run without ranks) the union of its kernels, copies
  // and memsets, summed over the groups (so up to N s in a second for N
  // ranks busy throughout); empty without GPU work.
  std::vector<uint64_t> gpu_busy_per_second;

  // GPU: empty when no GPU activity was recorded.
  std::vector<GpuDevice> gpus;
  uint64_t gpu_first_ns = 0, gpu_last_ns = 0;
  uint64_t gpu_busy_ns = 0;     // any device busy
  uint64_t io_outstanding_ns = 0;  // within the GPU window
  uint64_t data_stall_ns = 0;   // I/O outstanding, every device idle
  std::vector<StallShare> stall_by_file, stall_by_process;  // largest first
  // How many files and processes had some stall: the lists keep the top.
  size_t stall_files = 0, stall_processes = 0;

  // With annotations (docs/ANNOTATIONS.md): I/O per outermost region, and
  // the call sites that did the I/O (DLPROF_STACKS=1).
  std::vector<RegionStats> regions;
  RegionPick region_pick = RegionPick::kOutermost;  // which region a call counts in
  std::vector<CallSiteStats> sites_by_time, sites_by_bytes, sites_by_module;
  size_t site_functions = 0, site_modules = 0;  // sites in all: the lists keep the top

  // How the clock domains (hosts) were put on one time base; empty when the
  // traces share one clock.
  std::vector<DomainMap> clock_domains;

  // Per rank group, by rank (rank_figures.h, docs/ANALYSIS_TABLES.md "Ranks"), and
  // the job's figures over them; empty when no process has a rank.
  std::vector<RankFigures> rank_figures;
  RankJobFigures rank_job;
  // Where no process has a rank: the job's processes measured as one group
  // (its loop, batch wait and data stall; rank -1), when their events
  // interact (GPU work or regions); its loop is the loops of the processes
  // that waited for batches summed, where there are two or more (loops).
  bool has_unranked_group = false;
  RankFigures unranked_group;

  // What of the input could not be decoded (input_loss.h): the figures
  // above are of the rest.
  InputLoss input;

  // The region whose instances are the batch waits (dlprof-dump
  // --batch-region): the advice that asks for one names it.
  std::string batch_region = read::kDefaultBatchRegion;

  // Waiting for other ranks in collective MPI-IO calls (set by FinishSummary).
  CollectiveWaitFigures collective_waits;
};

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_SUMMARY_SUMMARY_H_
