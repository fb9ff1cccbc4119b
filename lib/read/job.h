// A job opened for reading: the traces its inputs name, the one run kept of
// them, every clock domain mapped onto the job's time base, and second 0 on
// that base. dlprof-dump, the summary, the rank meters and the reader's C
// ABI open traces through it, and make their event streams from it, so that
// each of these steps is taken in one place and in one order:
//
//   inputs --ExpandInputs--> files --CatalogTraces--> catalog (headers only)
//     --SelectRun--> one run --AlignClocks, MapCatalog--> the job's time base
//
// Second 0 is when the job's first event started, on the time base: --from
// and --to count from it, and the summary's timelines start there.
#ifndef DLPROF_LIB_READ_JOB_H_
#define DLPROF_LIB_READ_JOB_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lib/read/clock_domains.h"
#include "lib/read/event_filter.h"
#include "lib/read/file_stream.h"
#include "lib/read/trace_catalog.h"

namespace dlprof::read {

class Job {
 public:
  // Reads the header of every trace that `inputs` name (a directory stands
  // for the traces below it). Inputs that name no trace are in
  // input_errors(); a trace that cannot be read is in the catalog, with its
  // error.
  explicit Job(const std::vector<std::string>& inputs);

  // Keeps the traces of run `run` ("": the latest job, runs.h) and puts
  // every clock domain onto the job's time base. False, with `error` set,
  // when no trace belongs to run `run`.
  bool KeepRun(const std::string& run, std::string* error);

  // Lines for stderr about inputs that named no trace at all.
  const std::vector<std::string>& input_errors() const { return input_errors_; }
  // The other runs of the input, when it held several ("" when not).
  const std::string& note() const { return note_; }
  const TraceCatalog& catalog() const { return catalog_; }
  const ClockAlignment& clocks() const { return clocks_; }
  // Whether any trace's header could be read.
  bool AnyReadable() const;

  // Second 0: when the job's first event started, on the time base (0 when
  // no trace holds an event).
  uint64_t second_zero_ns() const { return catalog_.base_ns(); }
  // `selection` (--from, --to, ...) with its window counted from second 0.
  EventSelection Select(EventSelection selection) const;

  // The traces `traces` (indices into the catalog) merged into one stream
  // on the job's time base; their blocks decode on `threads` threads.
  std::unique_ptr<FileStream> Stream(const std::vector<size_t>& traces, unsigned threads) const;
  // Every trace of the job as one stream.
  std::unique_ptr<FileStream> StreamAll(unsigned threads) const;

 private:
  std::vector<std::string> input_errors_;
  TraceCatalog catalog_;
  ClockAlignment clocks_;
  std::string note_;
};

// The stream of Job::Stream for a catalog and its alignment (null: every
// trace on its own clock): for the summary, which reads a catalog a group at
// a time whether or not it was opened as a job.
std::unique_ptr<FileStream> OpenStream(const TraceCatalog& catalog,
                                       const ClockAlignment* clocks,
                                       const std::vector<size_t>& traces, unsigned threads);

}  // namespace dlprof::read

#endif  // DLPROF_LIB_READ_JOB_H_
