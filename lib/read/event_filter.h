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
#ifndef DLPROF_LIB_READ_EVENT_FILTER_H_
#define DLPROF_LIB_READ_EVENT_FILTER_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lib/read/event_source.h"

namespace dlprof::dump {

struct EventSelection {
  bool has_from = false, has_to = false;
  uint64_t from_ns = 0, to_ns = 0;  // after `base_ns`
  std::vector<int32_t> pids, ranks;  // empty: all
  std::vector<std::string> hosts;    // empty: all
  std::vector<std::string> paths;          // --path globs; empty: every file
  std::vector<std::string> exclude_paths;  // --exclude-path globs
  uint64_t base_ns = 0;              // the first event of the traces

  bool active() const {
    return has_from || has_to || !pids.empty() || !ranks.empty() || !hosts.empty() ||
           !paths.empty() || !exclude_paths.empty();
  }
  // Whether the path globs keep a file of this path.
  bool KeepsPath(const std::string& path) const;
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

  EventSource* inner_;
  const EventSelection& selection_;
  std::vector<EventObserver*> observers_;
  uint64_t passed_ = 0;
  // (process, file id) -> KeepsPath: fnmatch once per file, not per event.
  std::unordered_map<uint64_t, bool> file_kept_;
};

}  // namespace dlprof::dump

#endif  // DLPROF_LIB_READ_EVENT_FILTER_H_
