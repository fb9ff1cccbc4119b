// Figures derived from a finished Summary, for every renderer alike: the
// common values of a table, files by bytes moved, re-read files, the MPI-IO
// balance between ranks, files never read.
#ifndef DLPROF_LIB_ANALYSIS_SUMMARY_FIGURES_H_
#define DLPROF_LIB_ANALYSIS_SUMMARY_FIGURES_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lib/analysis/summary/summary.h"

namespace dlprof::analysis {

// The `n` most common keys of a count table, most common first (ties by key).
template <typename Map>
std::vector<std::pair<typename Map::key_type, uint64_t>> TopCounts(const Map& m, size_t n) {
  std::vector<std::pair<typename Map::key_type, uint64_t>> v(m.begin(), m.end());
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (v.size() > n) v.resize(n);
  return v;
}

// Every file, most bytes moved (read + written) first, ties by path.
// Directories of other files (file_classes.h, IsDirectoryOfFiles) are no
// rows of this nor of any list below.
std::vector<std::pair<std::string, const IoStats*>> FilesByBytes(const Summary& s);

// The files a summary lists (the JSON's "files"): every file with
// `details`, else, for each file class, its `top` files by bytes moved and
// its `top` by I/O time (ties by path), so that the top files of the whole
// run by either are among them and the data set has its rows whatever the
// imports did; a file with nothing of either is listed only with its whole
// class. By path; `left_out` counts the files not listed.
struct ListedFile {
  const std::string* path;
  const IoStats* io;
  int file_class;  // a FileClass
};
std::vector<ListedFile> ListedFiles(const Summary& s, size_t top, bool details,
                                    size_t* left_out);

// The processes a summary lists (its per-process rows): every one with
// `details`, else the top `top` by I/O time and the top `top` by bytes
// moved (a job of ten thousand processes keeps a summary of a few dozen
// rows). Keys of processes_stats, in key order; `left_out` gets how many
// were not listed.
std::vector<const std::string*> ListedProcesses(const Summary& s, size_t top, bool details,
                                                size_t* left_out);

// Files of the data set a run read again and again (epochs): bytes read
// over the extent read, for data files read at least twice over; most
// re-read first, ties by path. Code (dlprof's own package, say) is not the
// data set.
std::vector<std::pair<std::string, double>> Rereads(const Summary& s);

// The files opened (successfully) at least once and neither read nor
// written, by path: not code (imports open and close their directories)
// nor the system's (multiprocessing's /tmp/pymp-*), and not what the run
// wrote (a checkpoint is an output).
std::vector<std::string> NeverReadFiles(const Summary& s);

// NeverReadFiles with their opens, most opened first (ties by path).
std::vector<std::pair<std::string, uint64_t>> NeverReadByOpens(const Summary& s);

// Bytes read and written over the training loop (from the first rank's
// loop start to the last one's end; the run where no rank has a loop) in
// at most `max_bins` bins, each a whole number of the summary's fine bins
// (intervals.h): a loop of a second gets bins of milliseconds however long
// the start-up before it. `start_ns` is on the summary's time base.
struct LoopTimeline {
  bool loop = false;  // false: the run's window
  uint64_t start_ns = 0, end_ns = 0, bin_ns = 0;
  std::vector<std::pair<uint64_t, uint64_t>> bytes;  // (read, written) per bin
};
LoopTimeline TimelineOfLoop(const Summary& s, size_t max_bins = 240);

// MPI-IO bytes of the rank that moved the most, and that over the mean of
// the ranks (1: balanced; 0: no rank).
struct MpiBalance {
  uint64_t max_bytes = 0;
  double imbalance = 0;
};
MpiBalance MpiImbalance(const Summary& s);

// The job's slowest samples (fetch_parts.h), over its ranks (or its one
// group), slowest first, with their rank; `total` gets how many the ranks
// kept (what the list, cut to `n`, left out is the rest).
struct RankedSample {
  int32_t rank = -1;
  SlowSample sample;
};
std::vector<RankedSample> SlowestSamples(const Summary& s, size_t n, size_t* total = nullptr);

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_SUMMARY_FIGURES_H_
