// The summary as one JSON object: what `dlprof-dump --summary --format json`
// prints, the C ABI's dlprof_summary_json returns and the Python binding
// parses. docs/ANALYSIS.md, ANALYSIS_RUNS.md and ANALYSIS_TABLES.md name the keys.
#ifndef DLPROF_LIB_ANALYSIS_SUMMARY_JSON_H_
#define DLPROF_LIB_ANALYSIS_SUMMARY_JSON_H_

#include <string>

#include "lib/analysis/summary/summary.h"

namespace dlprof::analysis {

// How long the lists are. By default every list holds its top `top`
// entries and "left_out" counts the rest, so that the document's size does
// not grow with the files a job opened (a torch import opens thousands);
// `details` lists every file, never-read file and re-read file.
struct SummaryJsonOptions {
  size_t top = 20;  // --top
  bool details = false;  // --details
};

std::string SummaryJson(const Summary& s, const SummaryJsonOptions& options = {});

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_SUMMARY_JSON_H_
