// The files of the HTML report (tools/dump/report), embedded into dlprof-dump
// at build time by cmake/DlprofReportAssets.cmake, which generates their
// definitions. Each array holds its file's bytes; kReportLibrary holds the
// charting library's files one after the other.
#ifndef DLPROF_TOOLS_DUMP_REPORT_ASSETS_H_
#define DLPROF_TOOLS_DUMP_REPORT_ASSETS_H_

#include <cstddef>

namespace dlprof::dump {

extern const unsigned char kReportTemplate[];  // report.html, with @@...@@ slots
extern const size_t kReportTemplateSize;
extern const unsigned char kReportStyle[];  // report.css
extern const size_t kReportStyleSize;
extern const unsigned char kReportScript[];  // report.js: builds the page from the JSON
extern const size_t kReportScriptSize;
extern const unsigned char kWholeRunScript[];  // report_whole_run.js: a bounded trace's counters
extern const size_t kWholeRunScriptSize;
extern const unsigned char kCompareScript[];  // compare.js: the --compare report's
extern const size_t kCompareScriptSize;
extern const unsigned char kReportLibrary[];  // Chart.js and its plugins
extern const size_t kReportLibrarySize;
// The library files that were not installed when dlprof-dump was configured
// ("" when all were).
extern const char kReportLibraryMissing[];

}  // namespace dlprof::dump

#endif  // DLPROF_TOOLS_DUMP_REPORT_ASSETS_H_
