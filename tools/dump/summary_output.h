// The summary as text (its JSON is lib/analysis/summary_json.h).
#ifndef DLPROF_TOOLS_DUMP_SUMMARY_OUTPUT_H_
#define DLPROF_TOOLS_DUMP_SUMMARY_OUTPUT_H_

#include <string>

#include "lib/analysis/analysis.h"
#include "lib/analysis/summary_json.h"

namespace dlprof::dump {

// Readable report; lists (files, never-read files) stop after `max_rows`.
std::string SummaryText(const Summary& s, size_t max_rows = 20);

}  // namespace dlprof::dump

#endif  // DLPROF_TOOLS_DUMP_SUMMARY_OUTPUT_H_
