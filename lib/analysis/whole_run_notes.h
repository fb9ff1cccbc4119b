// What a reader must say of a bounded trace's counters beside the whole
// run's sums (whole_run.h): the events its segments lost to a full disk
// (the counters' lost records, docs/FORMAT_BOUNDED.md, record 9: the
// counts have them, the kept events do not), and a bounded trace whose
// counters are missing or unreadable, whose figures then cover the kept
// stretch only, not the run.
#ifndef DLPROF_LIB_ANALYSIS_WHOLE_RUN_NOTES_H_
#define DLPROF_LIB_ANALYSIS_WHOLE_RUN_NOTES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "lib/analysis/whole_run.h"
#include "lib/read/clock_domains.h"
#include "lib/read/trace_catalog.h"

namespace dlprof::analysis {

// One process's stretch of lost trace blocks, on the job's time base.
struct LostStretch {
  std::string host;
  int32_t pid = 0;
  uint64_t from_ns = 0, to_ns = 0;
  uint64_t events = 0, blocks = 0;
  uint32_t error = 0;
};

struct CountersNotes {
  bool bounded = false;           // some trace of the catalog is a segment
  uint64_t unreadable = 0;        // its counters files missing or unreadable
  uint64_t counters = 0;          // its counters files read
  std::vector<LostStretch> lost;  // in the order read
};

CountersNotes ReadCountersNotes(const read::TraceCatalog& catalog,
                                const read::ClockAlignment& clocks);

// Adds to `w`'s messages what `notes` says: the lost stretches (times from
// `w`'s start where it has one), and, where no counters were read of a
// bounded trace, that its figures cover the kept stretch only.
void AddCountersNotes(const CountersNotes& notes, WholeRun* w);

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_WHOLE_RUN_NOTES_H_
