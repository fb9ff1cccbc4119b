// Who a summary row of processes is: its identity (Summary::ProcessId) and
// the key that names it, "[host: ]pid N (exe)[ forked]".
#ifndef DLPROF_LIB_ANALYSIS_PROCESS_ROWS_H_
#define DLPROF_LIB_ANALYSIS_PROCESS_ROWS_H_

#include <string>
#include <vector>

#include "lib/analysis/summary/summary.h"
#include "lib/read/trace_catalog.h"
#include "lib/read/trace_set.h"

namespace dlprof::analysis {
using namespace dlprof::read;

// Whether a command line runs a Python interpreter with -I, -E or -S
// (PYTHONPATH or site ignored: the PyTorch bootstrap cannot load).
bool PythonIsolated(const std::string& cmdline);

// Who a process is; a process that exec'ed is the same whatever image a
// trace is of: its last program, forked if its first image was.
Summary::ProcessId IdOf(const ProcessTrace& p, const ProcessImage& image);

// "pid N (exe)", "pid N (sh -> dd)" for a process that exec'ed, after
// "host: " when the run spans several hosts (pids of different hosts
// collide), and " forked" for a fork child.
std::string ProcessKey(const Summary::ProcessId& id, const ProcessImage& image, bool with_host);

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_PROCESS_ROWS_H_
