// Time inside collective MPI-IO calls spent waiting for other ranks
// (docs/MPI.md, "Waiting for other ranks"): not reading, not the storage's.
//
// A collective call on a file (MPI_File_read_at_all, _open, _close,
// _set_view, ...) returns on no rank before every rank of the file's
// communicator has entered it: a rank that enters early waits for the last
// one (two ranks sat 471 and 461 ms in MPI_File_read_at_all while a third
// computed; the reads underneath took 1.6 ms). MPI requires the ranks of the
// communicator to make the same collective calls on a file in the same
// order, so the k-th collective call on a file in each rank is one
// operation; on the job's one time base a rank's part of it from its own
// entry until the last rank entered (at most its duration) is waiting for
// other ranks.
//
// Each group of traces records its collective calls (CollectiveMeter) in
// its partial summary; the partials merge (concatenation), and
// ApplyCollectiveWaits, once, before the ranks' figures are finished,
// matches them and takes the waiting out of the I/O time of the run, the
// ranks, the processes and the files, out of the start-up's I/O and out of
// the batch waits of loops without a DataLoader (whose waits are their data
// calls: step_loop.h), each put apart as its own figure.
//
// Matching: calls grouped by (file, k, communicator size as recorded); a
// group is matched only where it holds exactly that many calls of as many
// processes, else its calls are left as they were (a communicator of other
// ranks on the same file, a rank not traced, calls past the cap).
#ifndef DLPROF_LIB_ANALYSIS_SUMMARY_COLLECTIVE_WAITS_H_
#define DLPROF_LIB_ANALYSIS_SUMMARY_COLLECTIVE_WAITS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dlprof::analysis {

struct Summary;

// One collective MPI-IO call of a process (not nested, not a non-blocking
// i..._all form, whose call does not wait), on a file of a communicator of
// two or more ranks.
struct CollectiveCall {
  uint64_t entry_ns = 0, dur_ns = 0;
  uint32_t k = 0;          // its process's k-th such call on the file, from 0
  uint32_t comm_size = 0;  // the file's communicator's size (the event's fd)
  uint32_t file = 0;       // index into CollectiveCalls::files
  uint32_t process = 0;    // index into CollectiveCalls::processes
  int32_t rank = -1;       // its block's rank
  uint8_t group = 0;       // its OpGroup: where its time was counted
  bool counted = false;    // the selection kept it (its time is in the figures)
};

// Of a partial summary: its groups' collective calls, as they came.
struct CollectiveCalls {
  std::vector<std::string> files;      // paths
  std::vector<std::string> processes;  // process keys (Summary::processes_stats)
  std::vector<CollectiveCall> calls;
  // Calls past a process's cap (kept_per_process), not kept: their k-th
  // calls match no group, and are counted as they were.
  uint64_t not_kept = 0;
  uint64_t kept_per_process = 0;  // the cap where any call was not kept (the lowest)
};

// At most this many calls are kept over the job (a process keeps its share:
// CollectiveCallsPerProcess); about 40 bytes each.
constexpr uint64_t kMaxCollectiveCalls = uint64_t{1} << 21;
uint64_t CollectiveCallsPerProcess(size_t traces);

// Adds `from`'s calls to `into`'s, its indices into the tables remapped.
void MergeCollectiveCalls(CollectiveCalls* into, CollectiveCalls&& from);

// What the summary says of it (Summary::collective_waits).
struct CollectiveWaitFigures {
  uint64_t calls = 0;    // collective calls recorded (kept), counted ones
  uint64_t matched = 0;  // of them, matched with every rank's part of the operation
  uint64_t wait_ns = 0;  // their waiting for other ranks: out of the I/O time
  uint64_t loop_wait_ns = 0;  // of it, out of loops' batch waits (RankStep::collective_wait_ns)
  uint64_t startup_wait_ns = 0;  // of it, out of the ranks' start-up I/O
  uint64_t not_kept = 0, kept_per_process = 0;  // CollectiveCalls'
  // The ranks the others waited for: per rank, the waiting of every rank
  // that entered before it in operations it entered last (ties: the lowest
  // rank), largest first (at most kTopLateRanks).
  std::vector<std::pair<int32_t, uint64_t>> late_ranks;
  static constexpr size_t kTopLateRanks = 5;
  bool any() const { return calls > 0 || not_kept > 0; }
};

// Matches `calls` and takes the waiting out of `s`'s figures (before
// FinishRankFigures: the slowest loader and the lockstep read the corrected
// batch waits), filling s->collective_waits.
void ApplyCollectiveWaits(CollectiveCalls&& calls, Summary* s);

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_SUMMARY_COLLECTIVE_WAITS_H_
