// The per-rank section of the text summary: the ranks' batch wait, data
// stall, GPU split and straggler loss (lib/analysis/summary/rank_figures.h),
// formatted.
#ifndef DLPROF_TOOLS_DUMP_SUMMARY_RANKS_TEXT_H_
#define DLPROF_TOOLS_DUMP_SUMMARY_RANKS_TEXT_H_

#include <cstddef>
#include <string>

#include "lib/analysis/summary/summary.h"

namespace dlprof::dump {
using namespace dlprof::analysis;

// Appends the section to `out`; nothing when no process had a rank. The
// table stops after `max_rows` ranks.
void TextRanks(const Summary& s, size_t max_rows, std::string* out);

}  // namespace dlprof::dump

#endif  // DLPROF_TOOLS_DUMP_SUMMARY_RANKS_TEXT_H_
