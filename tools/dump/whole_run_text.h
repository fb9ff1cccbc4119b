// The whole run of a bounded trace (DLPROF_KEEP) as text: what --summary
// prints before the summary of the kept windows (whole_run_text.cc).
#ifndef DLPROF_TOOLS_DUMP_WHOLE_RUN_TEXT_H_
#define DLPROF_TOOLS_DUMP_WHOLE_RUN_TEXT_H_

#include <cstddef>
#include <string>

#include "lib/analysis/whole_run.h"
#include "lib/read/kept_stretches.h"

namespace dlprof::dump {

// "" when the run has no counters (a trace written without DLPROF_KEEP).
// `kept`: which stretches of the run the kept events cover.
std::string WholeRunText(const analysis::WholeRun& w, const read::KeptStretches& kept,
                         size_t rows);
// Without the stretches (a summary that has no catalog to find them in).
inline std::string WholeRunText(const analysis::WholeRun& w, size_t rows) {
  return WholeRunText(w, read::KeptStretches{}, rows);
}

}  // namespace dlprof::dump

#endif  // DLPROF_TOOLS_DUMP_WHOLE_RUN_TEXT_H_
