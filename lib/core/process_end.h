// How a process ends, as the last record of its trace: an `exit` record
// with the status it gave exit(), _exit(), _Exit() or quick_exit(), or a
// `signal` record with the signal whose default action ends it
// (include/dlprof/catalogue.h). The summary names a job's processes that
// ended with a non-zero status or by a signal (a rank that failed, the
// ranks its launcher then ended), where without them each trace read as a
// run that finished.
#ifndef DLPROF_LIB_CORE_PROCESS_END_H_
#define DLPROF_LIB_CORE_PROCESS_END_H_

#include <cstdint>

#include "dlprof/format.h"

namespace dlprof::core {

// Records it on the calling thread, before the final pass. Safe in a
// signal handler on top of anything the thread was doing: a thread that has
// no ring yet, or is in the middle of recording, records nothing (no
// allocation, no slot taken twice).
void RecordProcessEnd(EventKind kind, int64_t ret, uint64_t aux);

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_PROCESS_END_H_
