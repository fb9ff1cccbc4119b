// The events a user asked for: a time window (--from/--to, from the first
// event of the traces), lists of hosts, pids and ranks, and the files
// (--path, --exclude-path). Every output, the summary included, sees events
// through one EventFilter, so all apply it alike.
//
// Path globs are fnmatch(3) patterns without FNM_PATHNAME ('*' matches '/'
// too, so "*.npz" matches every .npz file); a pattern also matches
// everything below it as a directory ("/data" keeps /data/a/b.npz). They
// judge only events on a file: events that name none (GPU work, regions,
// MPI_Init, marks) always pass, so timelines and the data stall keep their
// context. A file kept by --path and matched by --exclude-path is left out.
// A copy between files (sendfile, copy_file_range) is kept when either its
// source or its destination is, and then counts on both in every output.
#ifndef DLPROF_LIB_READ_EVENT_FILTER_H_
#define DLPROF_LIB_READ_EVENT_FILTER_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lib/read/event_source.h"

namespace dlprof::read {

// Work done so far, for a progress display (tools/dump/progress.h): the
// filters of one dlprof-dump run add to it as events pass, a batch at a time
// and from any thread (relaxed atomics; no lock on the decode path).
struct ReadProgress {
  struct Trace {
    uint64_t events = 0;  // what its block headers announce
    uint64_t bytes = 0;   // its file size
  };
  // By trace path; filled before reading, read-only while filters run.
  std::unordered_map<std::string, Trace> traces;
  // A trace's bytes count as done in proportion to its events that passed;
  // a trace is done when all it announced have (a damaged one never is).
  std::atomic<uint64_t> events_done{0}, bytes_done{0}, traces_done{0};
};

struct EventSelection {
  bool has_from = false, has_to = false;
  uint64_t from_ns = 0, to_ns = 0;  // after `base_ns`
  std::vector<int32_t> pids, ranks;  // empty: all
  std::vector<std::string> hosts;    // empty: all
  std::vector<std::string> paths;          // --path globs; empty: every file
  std::vector<std::string> exclude_paths;  // --exclude-path globs
  uint64_t base_ns = 0;              // the first event of the traces
  ReadProgress* progress = nullptr;  // counts the work when set; not a filter

  bool active() const {
    return has_from || has_to || !pids.empty() || !ranks.empty() || !hosts.empty() ||
           !paths.empty() || !exclude_paths.empty();
  }
  // Whether the path globs keep a file of this path.
  bool KeepsPath(const std::string& path) const;
  // Whether --pid, --rank and --host keep this process (of rank `rank`).
  bool KeepsProcess(const format::ProcessInfo& info, int32_t rank) const;
  // Where second 0 of a timeline of the selection starts.
  uint64_t window_start_ns() const { return base_ns + (has_from ? from_ns : 0); }
};

// Passes on the events of `inner` that `selection` keeps, and counts them.
// Observers see every event: a region left out by the filter still holds the
// calls kept.
class EventFilter : public EventSource {
 public:
  EventFilter(EventSource* inner, const EventSelection& selection,
              std::vector<EventObserver*> observers = {})
      : inner_(inner), selection_(selection), observers_(std::move(observers)) {}

  const std::vector<ProcessTrace>& processes() const override { return inner_->processes(); }
  size_t Next(StreamEvent* out, size_t max) override;
  uint64_t passed() const { return passed_; }

 private:
  bool Keep(const StreamEvent& r);
  bool KeepFile(const StreamEvent& r);
  bool KeepFileId(uint32_t process, uint32_t file);  // the path globs keep it
  void CountProgress(const StreamEvent* batch, size_t n);

  EventSource* inner_;
  const EventSelection& selection_;
  std::vector<EventObserver*> observers_;
  uint64_t passed_ = 0;
  // (process, file id) -> KeepsPath: fnmatch once per file, not per event.
  std::unordered_map<uint64_t, bool> file_kept_;
  // Progress, per process of the source: its trace's totals and what passed.
  struct TraceProgress {
    uint64_t events = 0, bytes = 0;  // announced; its file size
    uint64_t seen = 0;               // events passed so far
    uint64_t published = 0;          // of its bytes, added to progress
    bool touched = false;            // seen in the current batch
  };
  std::vector<TraceProgress> trace_progress_;
  std::vector<uint32_t> touched_;  // processes seen in the current batch
};

}  // namespace dlprof::read

#endif  // DLPROF_LIB_READ_EVENT_FILTER_H_
