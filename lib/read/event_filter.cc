// The --from/--to/--pid/--rank/--host/--path selection applied to a stream
// of events.
#include "lib/read/event_filter.h"

#include <fnmatch.h>

#include <algorithm>

#include "dlprof/catalogue.h"
#include "lib/format/event_rules.h"

namespace dlprof::read {

size_t EventFilter::Next(StreamEvent* out, size_t max) {
  const bool active = selection_.active();
  for (;;) {
    const size_t got = inner_->Next(out, max);
    if (got == 0) return 0;
    if (selection_.progress != nullptr) CountProgress(out, got);
    if (!active) {
      for (EventObserver* o : observers_) {
        for (size_t i = 0; i < got; ++i) o->Add(out[i], true);
      }
      passed_ += got;
      return got;
    }
    size_t kept = 0;
    for (size_t i = 0; i < got; ++i) {
      const bool keep = Keep(out[i]);
      for (EventObserver* o : observers_) o->Add(out[i], keep);
      if (keep) out[kept++] = out[i];
    }
    if (kept > 0) {
      passed_ += kept;
      return kept;
    }
  }
}

namespace {

// Whether events of this kind name a file in their `file` field (traced
// calls: POSIX, STDIO, MPI; asynchronous requests); other kinds keep string
// ids of their own there (kernel and region names).
bool NamesFile(uint16_t kind) { return RulesFor(kind).traced_call || RulesFor(kind).async; }

// `path` matches `glob`, or lies below it as a directory.
bool Matches(const std::string& glob, const std::string& path) {
  if (fnmatch(glob.c_str(), path.c_str(), 0) == 0) return true;
  std::string below = glob;
  while (below.size() > 1 && below.back() == '/') below.pop_back();
  below += "/*";
  return fnmatch(below.c_str(), path.c_str(), 0) == 0;
}

}  // namespace

bool EventSelection::KeepsPath(const std::string& path) const {
  auto any = [&path](const std::vector<std::string>& globs) {
    return std::any_of(globs.begin(), globs.end(),
                       [&path](const std::string& g) { return Matches(g, path); });
  };
  return (paths.empty() || any(paths)) && !any(exclude_paths);
}

bool EventSelection::KeepsProcess(const format::ProcessInfo& info, int32_t rank) const {
  auto listed = [](const auto& v, const auto& x) {
    return v.empty() || std::find(v.begin(), v.end(), x) != v.end();
  };
  return listed(pids, info.pid) && listed(ranks, rank) && listed(hosts, info.host);
}

bool EventFilter::KeepFile(const StreamEvent& r) {
  const uint32_t file = r.event->file;
  // No file: not the path globs' business.
  if (file == 0 || !NamesFile(r.event->kind)) return true;
  if (KeepFileId(r.process, file)) return true;
  // A copy (sendfile, copy_file_range) is on two files: kept for either,
  // its destination's string id in aux.
  const uint64_t dest = r.event->aux;
  return RulesFor(r.event->kind).copy && dest != 0 && dest != file && dest <= UINT32_MAX &&
         KeepFileId(r.process, static_cast<uint32_t>(dest));
}

bool EventFilter::KeepFileId(uint32_t process, uint32_t file) {
  const uint64_t key = static_cast<uint64_t>(process) << 32 | file;
  auto it = file_kept_.find(key);
  if (it != file_kept_.end()) return it->second;
  const auto& strings = processes()[process].strings;
  auto name = strings.find(file);
  // A file whose path is not known (yet: a damaged trace) is judged as ""
  // and not remembered, so that its path decides once it comes.
  if (name == strings.end()) return selection_.KeepsPath(std::string());
  const bool keep = selection_.KeepsPath(name->second);
  file_kept_.emplace(key, keep);
  return keep;
}

void EventFilter::CountProgress(const StreamEvent* batch, size_t n) {
  ReadProgress& progress = *selection_.progress;
  if (trace_progress_.empty()) {
    for (const ProcessTrace& p : processes()) {
      auto it = progress.traces.find(p.path);
      TraceProgress t;
      if (it != progress.traces.end()) {
        t.events = it->second.events;
        t.bytes = it->second.bytes;
      }
      trace_progress_.push_back(t);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const uint32_t p = batch[i].process;
    if (p >= trace_progress_.size()) continue;
    TraceProgress& t = trace_progress_[p];
    ++t.seen;
    if (!t.touched) {
      t.touched = true;
      touched_.push_back(p);
    }
  }
  uint64_t bytes = 0, finished = 0;
  for (uint32_t p : touched_) {
    TraceProgress& t = trace_progress_[p];
    t.touched = false;
    const uint64_t seen = std::min(t.seen, t.events);
    const uint64_t done = t.events == 0 ? 0
                          : static_cast<uint64_t>(static_cast<unsigned __int128>(t.bytes) * seen /
                                                  t.events);
    bytes += done - t.published;
    t.published = done;
    finished += t.events > 0 && t.seen == t.events;
  }
  touched_.clear();
  progress.events_done.fetch_add(n, std::memory_order_relaxed);
  if (bytes > 0) progress.bytes_done.fetch_add(bytes, std::memory_order_relaxed);
  if (finished > 0) progress.traces_done.fetch_add(finished, std::memory_order_relaxed);
}

bool EventFilter::Keep(const StreamEvent& r) {
  const EventSelection& s = selection_;
  // An event before the base (a damaged file merged out of order) is at 0.
  const uint64_t start = r.event->start_ns;
  const uint64_t t = start > s.base_ns ? start - s.base_ns : 0;
  if ((s.has_from && t < s.from_ns) || (s.has_to && t >= s.to_ns)) return false;
  return s.KeepsProcess(processes()[r.process].info, r.rank) &&
         ((s.paths.empty() && s.exclude_paths.empty()) || KeepFile(r));
}

}  // namespace dlprof::read
