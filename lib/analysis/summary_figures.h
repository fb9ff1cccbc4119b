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

#include "lib/analysis/analysis.h"

namespace dlprof::dump {

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
std::vector<std::pair<std::string, const IoStats*>> FilesByBytes(const Summary& s);

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

// MPI-IO bytes of the rank that moved the most, and that over the mean of
// the ranks (1: balanced; 0: no rank).
struct MpiBalance {
  uint64_t max_bytes = 0;
  double imbalance = 0;
};
MpiBalance MpiImbalance(const Summary& s);

}  // namespace dlprof::dump

#endif  // DLPROF_LIB_ANALYSIS_SUMMARY_FIGURES_H_
