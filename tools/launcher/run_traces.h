// The traces a `dlprof run` wrote: finding them under the trace directory,
// and adding up what their block headers say, for the launcher's one line
// ("dlprof: 3 traces, 12,345 events in DIR") that stands for its processes'
// own lines, which it silences (DLPROF_QUIET=1).
#ifndef DLPROF_TOOLS_LAUNCHER_RUN_TRACES_H_
#define DLPROF_TOOLS_LAUNCHER_RUN_TRACES_H_

#include <sys/types.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace dlprof::launcher {

// The trace files under `dir` (a run's directory: DLPROF_DIR/<run>/, whose
// traces lie in <host>/, lib/format/trace_layout.h).
std::set<std::string> TraceFiles(const std::string& dir);

struct TraceTally {
  uint64_t traces = 0;      // readable traces counted (a bounded trace's segments: one)
  uint64_t segments = 0;    // of which, files of bounded traces (DLPROF_KEEP)
  uint64_t events = 0;      // events their block headers announce
  uint64_t dropped = 0;     // events the runtime dropped (when counted)
  uint64_t unreadable = 0;  // files that are no readable trace
};

// Adds up `files`. With `count_dropped`, every block is decoded for the
// events the runtime dropped (drop mode); else only headers are read. With
// `root` > 0, only the traces of that process and its descendants on host
// `host` count (the pid and parent pid their headers hold): in a job of
// several ranks, the traces of this launcher's rank, and of the files that
// are no readable trace (yet: another rank's, just created), those whose
// names hold one of the tree's pids (format::TraceFilePid).
TraceTally TallyTraces(const std::vector<std::string>& files, bool count_dropped, pid_t root,
                       const std::string& host);

// "3 traces, 12,345 events" (", 7 dropped" when counted, "; 1 unreadable");
// bounded traces: "3 traces (7 segment files), 12,345 events kept".
std::string TallyText(const TraceTally& t, bool dropped_counted);

}  // namespace dlprof::launcher

#endif  // DLPROF_TOOLS_LAUNCHER_RUN_TRACES_H_
