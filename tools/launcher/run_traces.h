// The traces a `dlprof run` wrote: finding them under the trace directory.
#ifndef DLPROF_TOOLS_LAUNCHER_RUN_TRACES_H_
#define DLPROF_TOOLS_LAUNCHER_RUN_TRACES_H_

#include <set>
#include <string>

namespace dlprof::launcher {

// The trace files under `dir`, at any depth up to 4 (DLPROF_DIR/<run>/<host>/).
std::set<std::string> TraceFiles(const std::string& dir);

}  // namespace dlprof::launcher

#endif  // DLPROF_TOOLS_LAUNCHER_RUN_TRACES_H_
