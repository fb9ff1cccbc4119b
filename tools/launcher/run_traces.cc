// The traces a `dlprof run` wrote, listed and added up (run_traces.h).
#include "tools/launcher/run_traces.h"

#include "lib/format/counters.h"
#include "lib/format/trace_file.h"
#include "lib/format/trace_layout.h"

namespace dlprof::launcher {
namespace {

// 12345 -> "12,345", as the summary writes counts.
std::string Grouped(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

std::set<std::string> TraceFiles(const std::string& dir) {
  std::vector<std::string> files, errors;  // a directory not made yet holds none
  format::FindTraceFiles(dir, &files, &errors);
  return std::set<std::string>(files.begin(), files.end());
}

TraceTally TallyTraces(const std::vector<std::string>& files, bool count_dropped, pid_t root,
                       const std::string& host) {
  struct Opened {
    format::ProcessInfo info;
    uint64_t events = 0, dropped = 0;
    std::string stem;  // a bounded trace's, shared by its segments; else empty
  };
  TraceTally tally;
  std::vector<Opened> traces;
  std::vector<int32_t> unreadable;  // their names' pids
  for (const std::string& f : files) {
    format::TraceReader reader;
    std::string error;
    if (!reader.Open(f, &error)) {
      unreadable.push_back(format::TraceFilePid(f, host));
      continue;
    }
    Opened o;
    o.info = reader.process();
    if (o.info.flags & kHeaderFlagSegment) o.stem = format::CountersPathOf(f);
    if (count_dropped) {
      format::DecodedBlock block;
      for (;;) {
        const format::TraceReader::Status s = reader.Next(&block, &error);
        if (s == format::TraceReader::Status::kEnd) break;
        if (s != format::TraceReader::Status::kBlock) continue;  // damage: skipped
        o.events += block.events.size();
        o.dropped += block.info.dropped_events;
      }
    } else {
      format::BlockLocation where;
      for (;;) {
        const format::TraceReader::Status s = reader.NextLocation(&where, &error);
        if (s == format::TraceReader::Status::kEnd) break;
        if (s == format::TraceReader::Status::kBlock) o.events += where.event_count;
      }
    }
    traces.push_back(std::move(o));
  }
  // The process tree of `root`: a trace joins once its parent's is in.
  std::set<int32_t> tree;
  if (root > 0) tree.insert(static_cast<int32_t>(root));
  std::vector<bool> counted(traces.size(), false);
  std::set<std::string> stems;
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t i = 0; i < traces.size(); ++i) {
      const format::ProcessInfo& p = traces[i].info;
      if (counted[i] || (root > 0 && (p.host != host || (!tree.count(p.pid) &&
                                                          !tree.count(p.ppid))))) {
        continue;
      }
      counted[i] = grew = true;
      tree.insert(p.pid);
      if (traces[i].stem.empty() || stems.insert(traces[i].stem).second) ++tally.traces;
      if (!traces[i].stem.empty()) ++tally.segments;
      tally.events += traces[i].events;
      tally.dropped += traces[i].dropped;
    }
  }
  // A file without a header yet may be another rank's, just created: one
  // counts where its name says it is one of the tree's.
  for (int32_t pid : unreadable) {
    if (root <= 0 || tree.count(pid)) ++tally.unreadable;
  }
  return tally;
}

std::string TallyText(const TraceTally& t, bool dropped_counted) {
  std::string s = Grouped(t.traces) + (t.traces == 1 ? " trace" : " traces");
  if (t.segments > 0) {
    s += " (" + Grouped(t.segments) + (t.segments == 1 ? " segment file)" : " segment files)");
  }
  s += ", " + Grouped(t.events) + (t.events == 1 ? " event" : " events");
  if (t.segments > 0) s += " kept";
  if (dropped_counted) s += ", " + Grouped(t.dropped) + " dropped";
  if (t.unreadable > 0) s += "; " + Grouped(t.unreadable) + " unreadable";
  return s;
}

}  // namespace dlprof::launcher
