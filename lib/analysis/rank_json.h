// The per-rank figures (rank_figures.h) in the summary's JSON: the fields
// each rank's object of `ranks` adds, and the job's keys over the ranks.
// docs/ANALYSIS.md ("Ranks") names them.
#ifndef DLPROF_LIB_ANALYSIS_RANK_JSON_H_
#define DLPROF_LIB_ANALYSIS_RANK_JSON_H_

#include <string>

#include "lib/analysis/rank_figures.h"

namespace dlprof::dump {

// `"rank":R,"host":H,...,"steps":[...]` without braces, to open a rank's
// object in `ranks`.
std::string RankFieldsJson(const RankFigures& r);

// `,"rank_distribution":{...},"rank_hosts":[...],"slowest_loader_rank":R,
// "slowest_loader_per_step":[...]`, to follow the other top-level keys.
std::string RankJobJson(const RankJobFigures& job);

}  // namespace dlprof::dump

#endif  // DLPROF_LIB_ANALYSIS_RANK_JSON_H_
