// The runs (jobs) of a set of traces. Each trace header names its run
// (docs/FORMAT.md, run_id); traces of different runs in one directory are
// never merged silently: a reader keeps one run and says which others are
// there.
//
// The run kept by default is the latest job, not merely the run that
// started last: a process that lost the job's run id (a program that
// scrubs its children's environment, a container entered anew) starts a
// run of its own, a few events long, inside the job. So: of the runs whose
// time spans overlap the span of the run that started last, the one with
// the most events (then the most traces, then the later start). Runs one
// after another in one directory do not overlap, and the latest is kept.
//
// A run that a trace names as its parent run (docs/FORMAT.md,
// parent_run_id: a traced mpirun's, whose ranks took the launcher's job id)
// is part of the run that names it, when only one does: one job, one run,
// whatever the order in which the ids became known.
#ifndef DLPROF_LIB_READ_RUNS_H_
#define DLPROF_LIB_READ_RUNS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/read/trace_catalog.h"

namespace dlprof::read {

struct RunInfo {
  std::string id;           // "" for traces of writers that recorded none
  size_t traces = 0;
  uint64_t events = 0;         // what the block headers announce
  uint64_t start_real_ns = 0;  // wall clock when its first trace was opened
  uint64_t end_real_ns = 0;    // wall clock of its last event's end (start if none)
};

// The runs of `catalog`'s readable traces, latest (by start) first.
std::vector<RunInfo> ListRuns(const TraceCatalog& catalog);

// The run kept when none is named (above): an index into `runs` (as
// ListRuns orders them); 0 when `runs` is empty.
size_t DefaultRun(const std::vector<RunInfo>& runs);

// Keeps the traces of run `id` in `catalog` (unreadable traces stay, so that
// their errors are reported); an empty `id` keeps DefaultRun's. When the
// catalog held other runs, `note` names them. False, with `error` set, when
// no trace belongs to run `id`.
bool SelectRun(TraceCatalog* catalog, const std::string& id, std::string* note,
               std::string* error);

// How a run is named to users ("(no run id)" for the empty one).
std::string RunName(const std::string& id);

}  // namespace dlprof::read

#endif  // DLPROF_LIB_READ_RUNS_H_
