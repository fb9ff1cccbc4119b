// dlprof-dump: decodes dlprof traces and prints their events.
//
// Exit status: 0 when every input decoded cleanly, 1 when an input was
// missing, unreadable or damaged (the rest is still printed), 2 for a usage
// error.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <memory>
#include <vector>

#include "dlprof/format.h"
#include "lib/analysis/meters/job_rank_meters.h"
#include "lib/analysis/summarize.h"
#include "lib/read/event_filter.h"
#include "lib/read/event_labels.h"
#include "lib/read/input_loss.h"
#include "lib/read/job.h"
#include "lib/read/kept_stretches.h"
#include "lib/read/trace_set.h"
#include "tools/dump/bounded_note.h"
#include "tools/dump/compare_output.h"
#include "tools/dump/html_output.h"
#include "tools/dump/options.h"
#include "tools/dump/output.h"
#include "tools/dump/progress.h"
#include "tools/dump/perfetto_output.h"
#include "tools/dump/summary_output.h"
#include "tools/dump/whole_run_text.h"
#include "lib/analysis/json/whole_run_json.h"
#include "lib/analysis/whole_run_notes.h"

namespace dlprof::dump {
using namespace dlprof::read;
using namespace dlprof::analysis;
namespace {

// A selection (--from, --to, --pid, --rank, --host, --path, --exclude-path)
// that kept no event of traces that hold some is said: the output is empty
// (or a summary of nothing) for that reason, not for want of events.
void NoteEmptySelection(const EventSelection& selection, const Job& job, uint64_t kept) {
  uint64_t held = 0;
  for (const CatalogEntry& t : job.catalog().traces) held += t.events;
  if (!selection.active() || kept > 0 || held == 0) return;
  fprintf(stderr, "dlprof-dump: note: the traces hold events, and none matched the selection "
                  "(--from/--to, --pid, --rank, --host, --path, --exclude-path)\n");
}

// Prints what went wrong and returns whether everything decoded cleanly.
bool ReportInput(const std::vector<std::string>& input_errors,
                 const std::vector<ProcessTrace>& processes, uint64_t events) {
  for (const auto& m : input_errors) fprintf(stderr, "%s\n", m.c_str());
  uint64_t blocks = 0;
  for (const auto& p : processes) {
    for (const auto& m : p.messages) fprintf(stderr, "%s\n", m.c_str());
    blocks += p.blocks;
  }
  const InputLoss loss = InputLossOf(input_errors, processes);
  if (!loss.any()) return true;
  std::string s = "dlprof-dump: not all input decoded:";
  const char* sep = " ";
  auto part = [&](uint64_t n, const char* what) {
    if (n == 0) return;
    s += sep + std::to_string(n) + what;
    sep = ", ";
  };
  part(loss.inputs_without_traces, " input(s) without traces");
  part(loss.unreadable_traces, " trace(s) unreadable");
  part(loss.damaged_blocks, " damaged block(s) skipped");
  if (loss.damaged_blocks > 0) s += " (" + EventsLostText(loss) + ")";
  s += "; decoded " + std::to_string(blocks) + " blocks, " + std::to_string(events) +
       " events from " + std::to_string(processes.size() - loss.unreadable_traces) +
       " trace(s)";
  fprintf(stderr, "%s\n", s.c_str());
  return false;
}

// The events, in the format asked for; `source` carries each event's region
// and stack (EventLabels) where the trace has them.
// `ranks` observes the same stream (the timelines' data-stall tracks).
// `bounded`: the stretch of a bounded run the events cover (null: not one).
void WriteEvents(const Options& o, const Job& job, EventSource& source, OutBuffer* out,
                 JobRankMeters* ranks, const std::string* bounded) {
  if (o.format == "jsonl") {
    WriteJsonl(source, out);
  } else if (o.format == "chrome") {
    WriteChrome(source, out, EventContext{nullptr, nullptr, bounded}, ranks);
  } else if (o.format == "perfetto") {
    WritePerfetto(source, out, {}, o.compression, ranks);
  } else {
    EventContext context;
    context.time_zero_ns = job.second_zero_ns();
    WriteText(source, out, context);
  }
}

// Where no trace of the input can be read, says so and returns true: every
// output format then writes nothing (a summary of nothing would be made up),
// and an output file is not even created.
bool NothingToDecode(const Job& job) {
  if (job.AnyReadable()) return false;
  const TraceCatalog& catalog = job.catalog();
  for (const auto& m : job.input_errors()) fprintf(stderr, "%s\n", m.c_str());
  for (const CatalogEntry& t : catalog.traces) fprintf(stderr, "error: %s\n", t.error.c_str());
  fprintf(stderr, "dlprof-dump: nothing to decode: %s\n",
          catalog.traces.empty() ? "the input holds no dlprof trace"
                                 : "no input is a readable dlprof trace");
  return true;
}

// The trace files the job reads (which -o must not name).
std::vector<std::string> TraceFiles(const Job& job) {
  std::vector<std::string> files;
  for (const CatalogEntry& t : job.catalog().traces) files.push_back(t.path);
  return files;
}

// Progress on a terminal, fed by the filters' counters (progress.h), or
// null. Not while event lines stream to the same terminal: they would tear it.
std::unique_ptr<ProgressDisplay> StartProgress(const Options& o, const Job& job, int fd,
                                               ReadProgress* progress,
                                               EventSelection* selection) {
  const bool listing_on_terminal = !o.summary && fd == STDOUT_FILENO && isatty(fd) == 1;
  if (listing_on_terminal || !ShowProgressOn(STDERR_FILENO, o.quiet)) return nullptr;
  const TraceCatalog& catalog = job.catalog();
  for (const CatalogEntry& t : catalog.traces) progress->traces[t.path] = {t.events, t.bytes};
  selection->progress = progress;
  return std::make_unique<ProgressDisplay>(progress, catalog.traces.size(), catalog.bytes,
                                           STDERR_FILENO);
}

// --summary (text, json or the HTML report); returns whether all decoded.
bool WriteSummary(const Options& o, const Job& job, const EventSelection& selection,
                  ProgressDisplay* display, OutBuffer* out) {
  SummarizeOptions options = JobSummarizeOptions(job, selection);
  options.threads = o.threads;
  options.region_pick = o.region_pick;
  if (o.top > 0) options.slowest_count = o.top;
  options.batch_region = o.batch_region;
  SummarizeResult r = Summarize(job.catalog(), options);
  r.summary.input.inputs_without_traces = job.input_errors().size();
  if (display) display->Stop();  // its line goes before the summary and any message
  SummaryJsonOptions lists;  // the JSON's and the report's lists: --top, --details
  if (o.top > 0) lists.top = o.top;
  lists.details = o.details;
  // A bounded trace (DLPROF_KEEP): the whole run from its counters, then
  // the kept windows' full events; nothing more for other traces.
  WholeRun whole = ReadWholeRun(job.catalog(), job.clocks(), o.batch_region);
  AddCountersNotes(ReadCountersNotes(job.catalog(), job.clocks()), &whole);
  if (o.format == "html") {
    std::string title;
    for (const auto& in : o.inputs) title += (title.empty() ? "" : " ") + in;
    out->Append(HtmlReport(WithWholeRun(SummaryJson(r.summary, lists), whole), title,
                           std::string("dlprof-dump ") + DLPROF_VERSION, whole.present));
  } else if (o.format == "json") {
    out->Append(WithWholeRun(SummaryJson(r.summary, lists), whole) + "\n");
  } else {
    // What could not be decoded, before any figure (the verdict's too).
    out->Append(InputText(r.summary));
    out->Append(WholeRunText(whole, FindKeptStretches(job.catalog(), job.clocks()),
                             o.top > 0 ? o.top : 5));
    if (o.details) {
      // Every row, as the JSON's --details, unless --top says how many.
      out->Append(VerdictText(r.summary) + "\n" +
                  SummaryText(r.summary, o.top > 0 ? o.top : SIZE_MAX));
    } else {
      out->Append(CompactSummaryText(r.summary, o.top > 0 ? o.top : 5));
    }
  }
  NoteEmptySelection(selection, job, r.events);
  return ReportInput(job.input_errors(), r.traces, r.events);
}

// Every event, in the format asked for; returns whether all decoded.
bool WriteEventList(const Options& o, const Job& job, const EventSelection& selection,
                    ProgressDisplay* display, OutBuffer* out, const std::string& bounded) {
  std::unique_ptr<FileStream> stream = job.StreamAll(o.threads);
  const uint32_t flags = stream->block_flags();
  // The event exporters name each call's region and stack as they stream.
  std::unique_ptr<EventLabels> labelled;
  std::unique_ptr<StackTable> stacks;
  EventSource* events = stream.get();
  if (flags & (kBlockFlagRegions | kBlockFlagStacks)) {
    RegionOptions regions;
    regions.pick = o.region_pick;
    if (flags & kBlockFlagRegions) {
      std::vector<std::string> files;
      for (const CatalogEntry& t : job.catalog().traces) files.push_back(t.path);
      regions.source = ChooseRegionSource(files);
    }
    if (flags & kBlockFlagStacks) {
      // A stack is symbolised against every module its process described,
      // before or after it: a first pass over the files finds them.
      stacks = std::make_unique<StackTable>(BuildStackTable(stream->processes()));
    }
    labelled = std::make_unique<EventLabels>(
        stream.get(), (flags & kBlockFlagRegions) ? &regions : nullptr, stacks.get());
    events = labelled.get();
  }
  // The timelines show each rank's data stall: measured beside the
  // export, as the summary measures it.
  std::unique_ptr<JobRankMeters> ranks;
  std::vector<EventObserver*> observers;
  if (o.format == "perfetto" || o.format == "chrome") {
    ranks = std::make_unique<JobRankMeters>(job.catalog(), stream->processes(),
                                            selection.window_start_ns());
    if (ranks->empty()) {
      ranks.reset();
    } else {
      observers.push_back(ranks.get());
    }
  }
  EventFilter source(events, selection, std::move(observers));
  WriteEvents(o, job, source, out, ranks.get(), bounded.empty() ? nullptr : &bounded);
  if (display) display->Stop();
  NoteEmptySelection(selection, job, source.passed());
  return ReportInput(job.input_errors(), source.processes(), source.passed());
}

// The files of a job are open only while the merge is among their blocks
// (lib/read/file_stream.h), yet more than 1,024 processes may overlap in
// time: the soft limit on open files goes up to the hard one, as a program
// may do for itself (the reader library leaves its caller's limit alone).
void RaiseFileLimit() {
  struct rlimit lim;
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
}

int Run(const Options& o) {
  RaiseFileLimit();
  if (o.compare) {
    return RunCompare({o.before, o.after, o.inputs, o.format, o.output, o.selection,
                       o.region_pick, o.top, o.details, o.batch_region, o.threads,
                       std::string("dlprof-dump ") + DLPROF_VERSION});
  }
  std::string no_report;
  if (o.format == "html" && !HtmlReportAvailable(&no_report)) {
    fprintf(stderr, "dlprof-dump: --format html: %s\n", no_report.c_str());
    return 1;
  }
  Job job(o.inputs);
  if (NothingToDecode(job)) return 1;
  const int fd = OpenOutput(o.output, TraceFiles(job));
  if (fd < 0) return 1;
  // One run: the latest, or the one --run names; the others are named.
  std::string error;
  if (!job.KeepRun(o.run, &error)) {
    fprintf(stderr, "dlprof-dump: %s\n", error.c_str());
    return 1;
  }
  if (!job.note().empty()) fprintf(stderr, "dlprof-dump: %s\n", job.note().c_str());
  OutBuffer out(fd);
  EventSelection selection = job.Select(o.selection);  // --from and --to count from second 0
  // The events of a bounded run are a stretch of it: said once, before any.
  std::string bounded;
  if (!o.summary) {
    const KeptStretches kept = FindKeptStretches(job.catalog(), job.clocks());
    bounded = BoundedSummaryLine(kept);
    if (!bounded.empty()) {
      // (The Chrome JSON's otherData holds the same lines: "below" too.)
      bounded += "\n" + StretchLines(kept, kept.run_start_ns, "  ", 8);
      while (bounded.back() == '\n') bounded.pop_back();
      fprintf(stderr, "dlprof-dump: note: %s\n", bounded.c_str());
    }
  }
  ReadProgress progress;
  std::unique_ptr<ProgressDisplay> display = StartProgress(o, job, fd, &progress, &selection);
  const bool clean = o.summary ? WriteSummary(o, job, selection, display.get(), &out)
                               : WriteEventList(o, job, selection, display.get(), &out, bounded);
  int status = clean ? 0 : 1;
  if (!out.Flush() || (fd != STDOUT_FILENO && close(fd) != 0)) {
    int err = out.error() ? out.error() : errno;
    fprintf(stderr, "error: %s: write failed: %s\n",
            o.output.empty() ? "standard output" : o.output.c_str(), strerror(err));
    status = 1;
  }
  return status;
}

}  // namespace
}  // namespace dlprof::dump

int main(int argc, char** argv) {
  dlprof::dump::Options options;
  int status = dlprof::dump::ParseArgs(argc, argv, &options);
  if (status >= 0) return status;
  return dlprof::dump::Run(options);
}
