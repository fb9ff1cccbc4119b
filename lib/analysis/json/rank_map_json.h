// The ranks of a large job in the summary's JSON: past `top` ranks (and
// without --details) the document lists the `top` ranks that waited the
// longest and, for all ranks, a map of a bounded size, so that a job of ten
// thousand ranks gives a summary of a few hundred KB and a report that draws
// a heat map rather than ten thousand bars (issue 37). docs/ANALYSIS_TABLES.md
// ("Ranks", "A job of thousands of ranks") names the keys.
#ifndef DLPROF_LIB_ANALYSIS_RANK_MAP_JSON_H_
#define DLPROF_LIB_ANALYSIS_RANK_MAP_JSON_H_

#include <cstddef>
#include <string>
#include <vector>

#include "lib/analysis/summary/rank_figures.h"

namespace dlprof::analysis {

// The map's bounds: rows of consecutive ranks (one rank a row up to
// kRankMapRows ranks), columns of consecutive steps, bins of the timeline,
// and bins of the histograms.
constexpr size_t kRankMapRows = 64;
constexpr size_t kRankMapStepColumns = 100;
constexpr size_t kRankMapTimeBins = 120;
constexpr size_t kRankHistogramBins = 20;

// The ranks to list (indices into `ranks`, at most `top`): by batch wait,
// then I/O time, then bytes read, longest first, ties by rank.
std::vector<size_t> ListedRanks(const std::vector<RankFigures>& ranks, size_t top);

// `"rank_map":{...}` over every rank (in the order of `ranks`: by rank, then
// host), `rows` rows at most:
//   "ranks": N, "rows": [[first rank, last rank, ranks], ...],
//   "step_columns": [[first step, last step], ...],
//   "batch_wait_ns", "data_stall_ns": a row per row of cells, a cell per
//     step column: the most any rank of the row waited in those steps;
//   "timeline": {"bin_s": K, "read_bytes", "gpu_busy_ns"}: a row per row, a
//     cell per K seconds, the row's ranks added up;
//   "histograms": {"batch_wait_ns", "data_stall_ns", "straggler_loss_ns",
//     "io_ns", "read_bytes": {"bin": W, "counts": [...]}}: how many ranks had
//     [i*W, (i+1)*W) (the last bin holds the maximum).
std::string RankMapJson(const std::vector<RankFigures>& ranks, size_t rows = kRankMapRows);

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_RANK_MAP_JSON_H_
