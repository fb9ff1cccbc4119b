// What the C ABI's entry points share (include/dlprof/reader.h): the
// handles behind its opaque types, and how a call reports an error or what
// it decoded. reader_c_api.cc has the traces, their events and regions;
// reader_summary_c_api.cc the summaries.
#ifndef DLPROF_LIB_CAPI_READER_HANDLES_H_
#define DLPROF_LIB_CAPI_READER_HANDLES_H_

#include <exception>
#include <memory>
#include <new>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dlprof/reader.h"
#include "lib/analysis/summarize.h"
#include "lib/analysis/summary/partial_summary.h"
#include "lib/format/trace_file.h"
#include "lib/read/job.h"
#include "lib/read/trace_set.h"

namespace dlprof::capi {

// Keeps `message` for dlprof_last_error (the calling thread's) and returns
// `status`.
dlprof_status Fail(dlprof_status status, std::string message);

// Runs `body`, which returns a status; C++ exceptions become statuses.
template <typename Body>
inline dlprof_status Guarded(Body&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return Fail(DLPROF_ERROR_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return Fail(DLPROF_ERROR_INTERNAL, e.what());
  } catch (...) {
    return Fail(DLPROF_ERROR_INTERNAL, "unknown error");
  }
}

// One trace opened for reading events: its reader, its blocks' locations
// and the strings its decoded blocks defined.
struct OpenTrace {
  std::unique_ptr<dlprof::format::TraceReader> reader;
  std::vector<dlprof::format::BlockLocation> blocks;
  // Damage found while listing the blocks: (index of the block after it,
  // message); reported by the reads whose range reaches it.
  std::vector<std::pair<size_t, std::string>> damage;
  std::unordered_map<uint32_t, std::string> strings;
  size_t string_bytes = 0;
};

// What decoding a group found (DecodeStatus, reader_c_api.cc): OK, or the
// first trace that was not clean.
dlprof_status DecodeStatus(const std::vector<dlprof::read::ProcessTrace>& decoded);

// `text` in a malloc'd buffer for the caller (dlprof_free).
dlprof_status GiveText(const std::string& text, char** out, size_t* length);

}  // namespace dlprof::capi

struct dlprof_traces {
  explicit dlprof_traces(const std::vector<std::string>& inputs) : job(inputs) {}
  dlprof::read::Job job;  // the traces, the run kept, the job's time base
  const dlprof::read::TraceCatalog& catalog = job.catalog();
  const dlprof::read::ClockAlignment& clocks = job.clocks();
  std::vector<std::vector<size_t>> groups;
  dlprof::analysis::JobTraceFacts facts;  // the catalog's, for every group's summary
  // Opened on first use. A trace's reader holds a file descriptor and a
  // decoder, so at most kMaxOpen stay open (a Dask task reads a few).
  std::vector<std::unique_ptr<dlprof::capi::OpenTrace>> open;
  std::vector<size_t> open_order;
  static constexpr size_t kMaxOpen = 16;
  // Each trace's command line as reader.h gives it, every argument ended by
  // a NUL (the header stores them separated, the last one without); made on
  // first use, kept as long as the handle.
  std::vector<std::unique_ptr<std::string>> cmdlines;
};

struct dlprof_summary {
  dlprof::analysis::PartialSummary partial;
};

#endif  // DLPROF_LIB_CAPI_READER_HANDLES_H_
