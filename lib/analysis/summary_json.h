// The summary as one JSON object: what `dlprof-dump --summary --format json`
// prints, the C ABI's dlprof_summary_json returns and the Python binding
// parses. docs/ANALYSIS.md names the keys.
#ifndef DLPROF_LIB_ANALYSIS_SUMMARY_JSON_H_
#define DLPROF_LIB_ANALYSIS_SUMMARY_JSON_H_

#include <string>

#include "lib/analysis/analysis.h"

namespace dlprof::dump {

std::string SummaryJson(const Summary& s);

}  // namespace dlprof::dump

#endif  // DLPROF_LIB_ANALYSIS_SUMMARY_JSON_H_
