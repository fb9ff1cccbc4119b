// Rendering of Analyze()'s Summary.
#ifndef DLPROF_TOOLS_DUMP_SUMMARY_OUTPUT_H_
#define DLPROF_TOOLS_DUMP_SUMMARY_OUTPUT_H_

#include <string>

#include "lib/analysis/analysis.h"

namespace dlprof::dump {

// Readable report; lists (files, never-read files) stop after `max_rows`.
std::string SummaryText(const Summary& s, size_t max_rows = 20);
// One JSON object with every figure (docs/ANALYSIS.md names the keys).
std::string SummaryJson(const Summary& s);

}  // namespace dlprof::dump

#endif  // DLPROF_TOOLS_DUMP_SUMMARY_OUTPUT_H_
