// --compare BEFORE AFTER: two runs side by side (lib/analysis/compare), as
// text, JSON or an HTML report. compare_run.cc opens each run and makes its
// summary as --summary does; compare_text.cc and the report's compare.js
// render what lib/analysis/compare computed.
#ifndef DLPROF_TOOLS_DUMP_COMPARE_OUTPUT_H_
#define DLPROF_TOOLS_DUMP_COMPARE_OUTPUT_H_

#include <cstddef>
#include <string>
#include <vector>

#include "lib/analysis/compare/compare.h"
#include "lib/read/event_filter.h"
#include "lib/read/regions.h"

namespace dlprof::dump {

// What `dlprof-dump --compare BEFORE AFTER [TRACE_OR_DIR...]` asked for.
// Without TRACE_OR_DIR, BEFORE and AFTER are each a trace directory (or
// file) whose latest run is read; with them, BEFORE and AFTER are two run
// ids of those inputs, as --run takes them (a bare batch job id too).
struct CompareRequest {
  std::string before, after;
  std::vector<std::string> inputs;
  std::string format = "text";  // text, json, html
  std::string output;           // empty or "-": standard output
  dlprof::read::EventSelection selection;  // applied to both runs alike
  dlprof::read::RegionPick region_pick = dlprof::read::RegionPick::kOutermost;
  size_t top = 0;  // --top: rows of each list; 0 for the defaults
  bool details = false;
  std::string batch_region;
  unsigned threads = 0;
  std::string generator;  // "dlprof-dump VERSION", for the HTML report
};

// Runs the comparison; returns the exit status (0, or 1 when a run is
// missing, holds no trace, or did not decode cleanly).
int RunCompare(const CompareRequest& request);

// The comparison as text; the rank and host lists stop after `rows`.
std::string CompareText(const dlprof::analysis::Comparison& c, const std::string& before,
                        const std::string& after, size_t rows);

}  // namespace dlprof::dump

#endif  // DLPROF_TOOLS_DUMP_COMPARE_OUTPUT_H_
