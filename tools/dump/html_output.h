// --format html: the summary as one self-contained HTML page. The page embeds
// the summary JSON (lib/analysis/json/summary_json.h: the same figures as
// `--summary --format json`), the charting library and a page script that
// draws the plots and tables from that JSON; it loads nothing when opened.
#ifndef DLPROF_TOOLS_DUMP_HTML_OUTPUT_H_
#define DLPROF_TOOLS_DUMP_HTML_OUTPUT_H_

#include <string>

namespace dlprof::dump {

// Whether this dlprof-dump was built with the charting library; if not,
// `why` says what is missing and how to install it.
bool HtmlReportAvailable(std::string* why);

// JSON text made safe inside <script type="application/json">: "<", ">" and
// "&" (which JSON has only inside strings) as \u escapes, so that no
// "</script" or "<!--" can end or confuse the element, and U+2028/U+2029 too.
std::string JsonForScriptElement(const std::string& json);

// The report page around `summary_json`. `title` names the input (e.g. the
// trace directory), `generator` the program and version that wrote it. Call
// only when HtmlReportAvailable().
// With `whole_run` (a bounded trace's summary, which has "whole_run"), the
// page also draws the whole run's counters first (report_whole_run.js);
// other reports are exactly what they were.
std::string HtmlReport(const std::string& summary_json, const std::string& title,
                       const std::string& generator, bool whole_run = false);

// The report of --compare: the same template around the comparison's JSON
// (lib/analysis/compare/compare.h, ComparisonJson), drawn by compare.js.
std::string HtmlCompareReport(const std::string& comparison_json, const std::string& title,
                              const std::string& generator);

}  // namespace dlprof::dump

#endif  // DLPROF_TOOLS_DUMP_HTML_OUTPUT_H_
