// The run's bound on a bounded trace (DLPROF_KEEP): each process deletes its
// own segments older than DURATION (trace_segments.cc), but a process that
// has ended deletes nothing more, so a run whose processes come and go (a
// DataLoader's workers forked anew each epoch) kept every ended process's
// last DURATION for ever. Here a live process of the run, when it rotates
// and when it ends, deletes the segments of the run's ended processes on its host that lie
// wholly before its horizon (now - DURATION): the run's disk then holds the
// last DURATION of the run, and of each ended process its counters file
// (the whole run's figures) and one empty segment that names it.
//
// The processes to look at are those noted in HOST_DIR/.ended (NoteEnded,
// at each clean end) and not yet settled: a sweep's cost follows the
// processes that ended within about DURATION, not every process the run
// ever had (a run forking 4 workers an epoch for 500 epochs read each of
// its 2,000 ended processes' files at each worker's end).
//
// Only segments it can prove finished are touched: the process's newest
// segment ends with a clean shutdown's final block and the process is gone
// (its pid does not name a process of the same start), in the same run, on
// the same clock (boot id and time namespace); windows kept whole (its own
// keep records, the run's: KeepRunWindow) stay. docs/FORMAT_BOUNDED.md,
// "Ended processes".
#ifndef DLPROF_LIB_CORE_TRACE_SEGMENTS_RUN_H_
#define DLPROF_LIB_CORE_TRACE_SEGMENTS_RUN_H_

#include <cstdint>
#include <string>
#include <vector>

namespace dlprof::core {

// Notes, at this process's clean end (its final block written), that its
// segments `segment_paths` (oldest first, the last the one it wrote last)
// are the run's to delete: HOST_DIR/.ended/DUE.STEM_NAME lists their
// numbers, DUE (16 hex digits) the time before which none of them may go
// (`due_ns`: the oldest with events' last block; 0 where none has events).
// docs/FORMAT_BOUNDED.md. A sweep removes the note once the process is
// settled: its segments past every horizon deleted, but those of windows
// kept whole and the end segment.
void NoteEnded(const std::vector<std::string>& segment_paths, uint64_t due_ns);

// The name of segment `n` of the trace whose first segment is STEM.dlprof
// (STEM.kN.dlprof; 0: STEM.dlprof).
std::string SegmentPath(const std::string& stem, uint32_t n);

// Deletes, in the directory of `own_path` (this process's segment being
// written), the segments of the ended processes noted there (NoteEnded) of
// the run that `own_header` (this process's file header) names, whose
// events all ended before
// `now_ns` - `keep_ns` (CLOCK_MONOTONIC_RAW). Where a process's newest
// segment goes, an empty segment with a final block takes its place first,
// so that readers still find its counters. Returns how many files it
// deleted. Runs where a block is written (under the sink's lock): never
// where a traced call records.
int SweepEndedSegments(const std::string& own_path, const std::vector<uint8_t>& own_header,
                       uint64_t now_ns, uint64_t keep_ns);

// A window this process keeps whole (TraceSink::KeepWindow, [from, to]):
// the ended processes' segments with events in it stay too. A loader's
// worker that lived less than the flusher's half second between looks at
// `dlprof keep`'s request never recorded the window itself (the request's
// time, RUN_DIR/dlprof.keep's, is taken as one as well), and one rule's
// window is the whole run's.
void KeepRunWindow(uint64_t from_ns, uint64_t to_ns);

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_TRACE_SEGMENTS_RUN_H_
