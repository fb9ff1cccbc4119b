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

// Records it on the calling thread, before the final pass. `maybe_in_handler`
// (a fatal signal's handler; _exit and its like, which a handler may call on
// top of anything the thread was doing, free() included): a thread that has
// no ring yet does not get one (no allocation). Else (exit(), main's return)
// a thread that recorded nothing before (the I/O on other threads) gets its
// ring as a traced call would. A thread in the middle of recording (a
// SIGTERM inside a traced write's bookkeeping: no slot taken twice), and one
// in a handler without a ring, park it for the final pass instead.
void RecordProcessEnd(EventKind kind, int64_t ret, uint64_t aux, bool maybe_in_handler);

// The final pass (TraceSink): the parked end record, if any, and its
// thread; once.
bool TakeParkedProcessEnd(Event* e, int32_t* tid);

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_PROCESS_END_H_
