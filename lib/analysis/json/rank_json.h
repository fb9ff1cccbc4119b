// The per-rank figures (rank_figures.h) in the summary's JSON: the fields
// each rank's object of `ranks` adds, and the job's keys over the ranks.
// docs/ANALYSIS_TABLES.md ("Ranks") names them.
#ifndef DLPROF_LIB_ANALYSIS_RANK_JSON_H_
#define DLPROF_LIB_ANALYSIS_RANK_JSON_H_

#include <string>

#include "lib/analysis/summary/collective_waits.h"
#include "lib/analysis/summary/rank_figures.h"

namespace dlprof::analysis {

// `"rank":R,"host":H,...,"steps":[...],"timeline":{...}` without braces, to
// open a rank's object in `ranks`. The timeline sums `bin_s` seconds a bin:
// {"bin_s":K,"read_bytes":[...],"gpu_busy_ns":[...]}. Without `series`, no
// steps and no timeline (a large job's listed ranks: the rank map has them).
std::string RankFieldsJson(const RankFigures& r, uint64_t bin_s, bool series = true);

// The bin of the ranks' timelines: whole seconds, so that the longest has at
// most kRankTimelineBins bins (a job of a thousand ranks stays a few MB).
constexpr uint64_t kRankTimelineBins = 240;
uint64_t RankTimelineBin(const std::vector<RankFigures>& ranks);

// `,"rank_distribution":{...},"rank_hosts":[...],"slowest_loader_rank":R,
// "slowest_loader_per_step":[...]`, to follow the other top-level keys.
std::string RankJobJson(const RankJobFigures& job);
// ",\"collective_waits\":{...}": waiting for other ranks in collective
// MPI-IO calls (collective_waits.h).
std::string CollectiveWaitsJson(const CollectiveWaitFigures& c);

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_RANK_JSON_H_
