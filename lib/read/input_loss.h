// What of a job's input could not be decoded, counted once from what
// reading its traces found: dlprof-dump's stderr line and exit status say
// it, and so does the summary (its "input"), so that a report kept without
// its stderr does not pass partial figures off as whole.
#ifndef DLPROF_LIB_READ_INPUT_LOSS_H_
#define DLPROF_LIB_READ_INPUT_LOSS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "lib/read/trace_set.h"

namespace dlprof::read {

struct InputLoss {
  uint64_t inputs_without_traces = 0;  // inputs naming no trace (a directory holding none)
  uint64_t unreadable_traces = 0;      // traces whose header could not be read
  uint64_t damaged_blocks = 0;         // blocks skipped (and damaged rings sidecars)
  uint64_t events_lost = 0;            // as the damaged blocks' intact headers count them
  uint64_t uncounted_blocks = 0;       // damaged blocks whose events nobody can count
  // Events the tracer itself dropped while recording, as its blocks count
  // them (DLPROF_ON_FULL=drop, CUPTI's or the kernel's lost records, the
  // table of paths full): decoded input, but not the whole run.
  uint64_t events_dropped = 0;

  // Whether some input could not be decoded (dlprof-dump's exit status).
  bool any() const {
    return inputs_without_traces > 0 || unreadable_traces > 0 || damaged_blocks > 0;
  }
  // Whether the figures are short of the run: that, or events dropped.
  bool incomplete() const { return any() || events_dropped > 0; }
  // Another group's (summaries merge group by group).
  void Add(const InputLoss& o) {
    inputs_without_traces += o.inputs_without_traces;
    unreadable_traces += o.unreadable_traces;
    damaged_blocks += o.damaged_blocks;
    events_lost += o.events_lost;
    uncounted_blocks += o.uncounted_blocks;
    events_dropped += o.events_dropped;
  }
};

// `input_errors`: the inputs that named no trace (Job::input_errors);
// `traces`: what decoding each trace found. A trace deleted after it was
// listed (a bounded trace's old segment) is not unreadable.
InputLoss InputLossOf(const std::vector<std::string>& input_errors,
                      const std::vector<ProcessTrace>& traces);

// "2 traces unreadable, 1 damaged block (4781 events lost), 2416 events
// dropped while tracing"; "" when nothing was lost.
std::string InputLossText(const InputLoss& loss);
// Of the damaged blocks: "4781 events lost", "at least 4781 events lost",
// "events lost not known".
std::string EventsLostText(const InputLoss& loss);

}  // namespace dlprof::read

#endif  // DLPROF_LIB_READ_INPUT_LOSS_H_
