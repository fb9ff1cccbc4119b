// What dlprof-dump says of a bounded run (DLPROF_KEEP) beside what it shows:
// the stretch of the run the kept events cover (lib/read/kept_stretches.h).
// The text, jsonl and timeline outputs show only those events: once on
// stderr, and in the Chrome JSON's otherData, the reader learns which
// seconds they are; the summary lists the same stretches.
#ifndef DLPROF_TOOLS_DUMP_BOUNDED_NOTE_H_
#define DLPROF_TOOLS_DUMP_BOUNDED_NOTE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "lib/read/kept_stretches.h"

namespace dlprof::dump {

// "a bounded trace (DLPROF_KEEP): the events cover 9.10 s - 12.01 s of the
// run (...)"; "" when the run is not bounded. One line.
std::string BoundedSummaryLine(const read::KeptStretches& k);
// The stretches, a line each ("pid 12 on node1: 9.10 s - 12.01 s"), times
// from `origin_ns`, each line after `indent`; at most `rows` of them and a
// line for the rest, and one for the processes with only counters left.
// "" when they do not differ (one stretch, or all alike) and none is left so.
std::string StretchLines(const read::KeptStretches& k, uint64_t origin_ns, const char* indent,
                         size_t rows);
// Seconds from `origin_ns` to `t`: "9.10 s".
std::string SecondsFrom(uint64_t origin_ns, uint64_t t);

}  // namespace dlprof::dump

#endif  // DLPROF_TOOLS_DUMP_BOUNDED_NOTE_H_
