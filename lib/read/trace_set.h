// A set of trace files (one per process) with every event held in memory, in
// merged time order. dlprof-dump itself streams (file_stream.h); this is for
// the tests and the annotation inspector, where the whole-trace region
// assignment and stack index (regions.h, stacks.h) are the reference the
// streaming meters and labels are checked against.
#ifndef DLPROF_LIB_READ_TRACE_SET_H_
#define DLPROF_LIB_READ_TRACE_SET_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "dlprof/format.h"
#include "lib/format/trace_file.h"

namespace dlprof::read {

// One trace file: one process (or one exec'ed image of it).
struct ProcessTrace {
  std::string path;
  format::ProcessInfo info;
  // Held by a TraceSet only (FileStream leaves them empty), in merged order.
  std::vector<Event> events;
  std::vector<int32_t> tids;    // thread of events[i]
  std::vector<int32_t> ranks;   // rank of events[i]: its block's, else the header's
  // Strings of all blocks: ids are process-wide, and a string may arrive in an
  // earlier block than the events that use it.
  std::unordered_map<uint32_t, std::string> strings;

  // What loading found.
  bool opened = false;        // the header was read; false: nothing decoded
  // Its header read by the catalog (or listed from a directory), then gone
  // before the stream opened it: a bounded trace's sweep deletes old
  // segments while the job runs (docs/FORMAT_BOUNDED.md). Said in a note,
  // not an error.
  bool vanished = false;
  bool saw_final = false;     // the process shut down cleanly
  uint64_t blocks = 0;        // decoded blocks
  uint64_t damaged_blocks = 0;
  // Of those, the events lost as the blocks' headers count them, and the
  // blocks without a sound header, whose events are not known.
  uint64_t lost_events = 0;
  uint64_t uncounted_damage = 0;
  uint64_t dropped_events = 0;
  // Page faults the runtime could not watch (maps_untracked and
  // faults_unwatched records, catalogue.h): mappings its map table did not
  // hold, and threads refused a fault buffer, known to read through maps
  // (readers) or watched in case (others).
  uint64_t maps_untracked = 0;
  uint64_t unwatched_readers = 0, unwatched_others = 0;
  // Minor-fault records the threads' buffers could not hold
  // (map_waits_lost records): waits for pages read ahead among them unseen.
  uint64_t map_waits_lost = 0;
  // Lines for stderr, each starting "error: ", "warning: " or "note: ".
  std::vector<std::string> messages;

  bool clean() const { return opened && damaged_blocks == 0; }
};

struct EventRef {
  uint32_t process;  // index into TraceSet::processes
  uint32_t index;    // index into that process's events
};

struct TraceSet {
  std::vector<std::string> input_errors;  // inputs that named no trace at all
  bool truncated = false;                 // LoadTraceSet stopped at its limit
  std::vector<ProcessTrace> processes;    // in input order
  std::vector<EventRef> merged;           // every event, by (start_ns, pid, tid)

  const Event& event(const EventRef& r) const { return processes[r.process].events[r.index]; }
  bool clean() const;
};

// Replaces each directory in `inputs` by the regular files ending in .dlprof
// below it (sorted, recursively); other paths pass through unchanged, so that
// a missing file is reported by the reader. A file named twice is read once.
// `listed` (optional), one per file returned: found in a directory, not
// named (CatalogTraces: one gone by the time it is read was deleted since).
std::vector<std::string> ExpandInputs(const std::vector<std::string>& inputs,
                                      std::vector<std::string>* errors,
                                      std::vector<bool>* listed = nullptr);

// Defined with FileStream: one fewer than the processors.
unsigned DefaultDecodeThreads();

// Events LoadTraceSet holds at most (about 1.2 GB).
constexpr size_t kMaxInMemoryEvents = size_t{16} << 20;

// Reads every event of `files` into memory, in FileStream's order (so an
// EventRef means the same event in both); stops after `max_events` with
// `truncated` set.
TraceSet LoadTraceSet(const std::vector<std::string>& files,
                      size_t max_events = kMaxInMemoryEvents,
                      unsigned threads = DefaultDecodeThreads());

}  // namespace dlprof::read

#endif  // DLPROF_LIB_READ_TRACE_SET_H_
