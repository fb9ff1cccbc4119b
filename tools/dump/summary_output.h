// The summary as text (its JSON is lib/analysis/json/summary_json.h).
#ifndef DLPROF_TOOLS_DUMP_SUMMARY_OUTPUT_H_
#define DLPROF_TOOLS_DUMP_SUMMARY_OUTPUT_H_

#include <string>
#include <vector>

#include "lib/analysis/summary/summary.h"
#include "lib/analysis/findings/verdict.h"
#include "lib/analysis/json/summary_json.h"

namespace dlprof::dump {
using namespace dlprof::analysis;

// Readable report; lists (files, never-read files) stop after `max_rows`.
std::string SummaryText(const Summary& s, size_t max_rows = 20);

// What of the input could not be decoded (Summary::input), one line: ""
// when it all decoded. --summary prints it first.
std::string InputText(const Summary& s);

// How the clock domains were aligned ("" for one domain): two lines.
std::string ClocksText(const Summary& s);

// The verdict (lib/analysis/findings/verdict.h) as text (verdict_text.cc): what
// --summary prints first.
std::string VerdictText(const Summary& s);
// The verdict and compact tables (ranks by batch wait, top data files,
// `rows` each): the default --summary, one screen whatever the job.
std::string CompactSummaryText(const Summary& s, size_t rows = 5);

// The verdict's headline ("the training loop waited for data 62.0 % of the
// loop; of that wait, reading 81.0 %"), and its findings as numbered lines,
// each with its "try:" line, indented by `indent` (verdict_text.cc): the
// whole run's verdict prints them too (whole_run_text.cc).
std::string VerdictHeadline(const Verdict& v);
// "  checkpoints  41.0 % of the loop stopped for 3 saves ...\n" (empty:
// none).
std::string CheckpointLine(const Verdict& v);
std::string FindingLines(const std::vector<Finding>& findings, const char* indent);

}  // namespace dlprof::dump

#endif  // DLPROF_TOOLS_DUMP_SUMMARY_OUTPUT_H_
