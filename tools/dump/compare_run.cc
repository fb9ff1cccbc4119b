// --compare BEFORE AFTER: opens each run as --summary would (lib/read/job.h:
// its inputs, the run it keeps, its time base), makes its summary with the
// same options, and writes the comparison (lib/analysis/compare) in the
// format asked for. Every figure is the analysis's; this file only finds
// the two runs and reports what went wrong with them, naming the side.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "lib/analysis/summarize.h"
#include "lib/read/job.h"
#include "tools/dump/compare_output.h"
#include "tools/dump/html_output.h"
#include "tools/dump/out_buffer.h"

namespace dlprof::dump {
using namespace dlprof::read;
using namespace dlprof::analysis;
namespace {

// One side: its name as typed, and what it reads.
struct Side {
  const char* which;  // "before", "after"
  std::string name;
  std::vector<std::string> inputs;
  std::string run;  // "": the latest run of `inputs`
};

// The summary of one side; false, with what went wrong on stderr, when the
// side names no run or none of its traces can be read. `clean`: whether
// every trace decoded cleanly (what did is still summarised). `files`
// gains the side's trace files.
bool SummaryOf(const CompareRequest& r, const Side& side, Summary* out, bool* clean,
               std::vector<std::string>* files) {
  Job job(side.inputs);
  for (const CatalogEntry& t : job.catalog().traces) files->push_back(t.path);
  for (const auto& m : job.input_errors()) fprintf(stderr, "%s\n", m.c_str());
  if (!job.AnyReadable()) {
    for (const CatalogEntry& t : job.catalog().traces) {
      fprintf(stderr, "error: %s\n", t.error.c_str());
    }
    fprintf(stderr, "dlprof-dump: --compare: %s (%s): no readable dlprof trace\n", side.which,
            side.name.c_str());
    return false;
  }
  std::string error;
  if (!job.KeepRun(side.run, &error)) {
    fprintf(stderr, "dlprof-dump: --compare: %s (%s): %s\n", side.which, side.name.c_str(),
            error.c_str());
    return false;
  }
  // Which run a directory's latest is, and the others it holds; not where
  // the run was named.
  if (side.run.empty() && !job.note().empty()) {
    fprintf(stderr, "dlprof-dump: %s (%s): %s\n", side.which, side.name.c_str(),
            job.note().c_str());
  }
  SummarizeOptions options = JobSummarizeOptions(job, job.Select(r.selection));
  options.threads = r.threads;
  options.region_pick = r.region_pick;
  if (r.top > 0) options.slowest_count = r.top;
  if (!r.batch_region.empty()) options.batch_region = r.batch_region;
  SummarizeResult result = Summarize(job.catalog(), options);
  *out = std::move(result.summary);
  bool intact = job.input_errors().empty();
  for (const ProcessTrace& p : result.traces) {
    for (const auto& m : p.messages) fprintf(stderr, "%s\n", m.c_str());
    intact &= p.opened && p.damaged_blocks == 0;
  }
  if (!intact) {
    fprintf(stderr, "dlprof-dump: %s (%s): not all input decoded; the comparison covers the rest\n",
            side.which, side.name.c_str());
  }
  *clean &= intact;
  return true;
}

}  // namespace

int RunCompare(const CompareRequest& r) {
  std::string why;
  if (r.format == "html" && !HtmlReportAvailable(&why)) {
    fprintf(stderr, "dlprof-dump: --format html: %s\n", why.c_str());
    return 1;
  }
  // Two directories, or two runs of the inputs.
  Side sides[2] = {{"before", r.before, {}, ""}, {"after", r.after, {}, ""}};
  for (Side& s : sides) {
    if (r.inputs.empty()) {
      s.inputs = {s.name};
    } else {
      s.inputs = r.inputs;
      s.run = s.name;
    }
  }
  Summary summaries[2];
  bool clean = true;
  std::vector<std::string> files;
  for (int i = 0; i < 2; ++i) {
    if (!SummaryOf(r, sides[i], &summaries[i], &clean, &files)) return 1;
  }
  const Comparison c = Compare(summaries[0], summaries[1]);
  SummaryJsonOptions lists;
  if (r.top > 0) lists.top = r.top;
  lists.details = r.details;
  const int fd = OpenOutput(r.output, files);
  if (fd < 0) return 1;
  OutBuffer out(fd);
  if (r.format == "json") {
    out.Append(ComparisonJson(summaries[0], summaries[1], c, lists) + "\n");
  } else if (r.format == "html") {
    out.Append(HtmlCompareReport(ComparisonJson(summaries[0], summaries[1], c, lists),
                                 r.before + " \u2192 " + r.after, r.generator));
  } else {
    out.Append(CompareText(c, r.before, r.after, r.top > 0 ? r.top : 10));
  }
  int status = clean ? 0 : 1;
  if (!out.Flush() || (fd != STDOUT_FILENO && close(fd) != 0)) {
    const int err = out.error() ? out.error() : errno;
    fprintf(stderr, "error: %s: write failed: %s\n",
            r.output.empty() ? "standard output" : r.output.c_str(), strerror(err));
    status = 1;
  }
  return status;
}

}  // namespace dlprof::dump
