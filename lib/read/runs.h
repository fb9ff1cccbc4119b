// The runs (jobs) of a set of traces. Each trace header names its run
// (docs/FORMAT.md, run_id); traces of different runs in one directory are
// never merged silently: a reader keeps one run, by default the latest, and
// says which others are there.
#ifndef DLPROF_LIB_READ_RUNS_H_
#define DLPROF_LIB_READ_RUNS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/read/trace_catalog.h"

namespace dlprof::dump {

struct RunInfo {
  std::string id;           // "" for traces of writers that recorded none
  size_t traces = 0;
  uint64_t start_real_ns = 0;  // wall clock when its first trace was opened
};

// The runs of `catalog`'s readable traces, latest (by start) first.
std::vector<RunInfo> ListRuns(const TraceCatalog& catalog);

// Keeps the traces of run `id` in `catalog` (unreadable traces stay, so that
// their errors are reported); an empty `id` keeps the latest run. When the
// catalog held other runs, `note` names them. False, with `error` set, when
// no trace belongs to run `id`.
bool SelectRun(TraceCatalog* catalog, const std::string& id, std::string* note,
               std::string* error);

// How a run is named to users ("(no run id)" for the empty one).
std::string RunName(const std::string& id);

}  // namespace dlprof::dump

#endif  // DLPROF_LIB_READ_RUNS_H_
