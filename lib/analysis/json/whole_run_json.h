// The whole run of a bounded trace (lib/analysis/whole_run.h) as JSON: the
// "whole_run" object of `dlprof-dump --summary --format json`, which the
// HTML report and the Python package read too (docs/ANALYSIS_RUNS.md, "Bounded
// traces").
#ifndef DLPROF_LIB_ANALYSIS_JSON_WHOLE_RUN_JSON_H_
#define DLPROF_LIB_ANALYSIS_JSON_WHOLE_RUN_JSON_H_

#include <string>

#include "lib/analysis/whole_run.h"

namespace dlprof::analysis {

std::string WholeRunJson(const WholeRun& w);

// `summary_json` (an object) with "whole_run" as its first key; unchanged
// when the run has no counters, so that a trace written without DLPROF_KEEP
// reads exactly as before.
std::string WithWholeRun(const std::string& summary_json, const WholeRun& w);

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_JSON_WHOLE_RUN_JSON_H_
