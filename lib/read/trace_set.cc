// Input expansion (directories to trace files) and whole traces held in memory.
#include "lib/read/trace_set.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <utility>

#include "lib/format/trace_layout.h"
#include "lib/read/file_stream.h"

namespace dlprof::read {

bool TraceSet::clean() const {
  if (!input_errors.empty()) return false;
  for (const auto& p : processes) {
    if (!p.clean()) return false;
  }
  return true;
}

std::vector<std::string> ExpandInputs(const std::vector<std::string>& inputs,
                                      std::vector<std::string>* errors,
                                      std::vector<bool>* files_listed) {
  std::vector<std::string> expanded;
  std::vector<bool> listed;  // found in a directory, not named
  for (const auto& in : inputs) {
    struct stat st;
    const bool dir = stat(in.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    if (dir) {
      format::FindTraceFiles(in, &expanded, errors);
    } else {
      expanded.push_back(in);
    }
    listed.resize(expanded.size(), dir);
  }
  // A directory and a file inside it may both be named. A file listed and
  // gone by now was deleted since (a bounded trace's sweep drops old
  // segments as the job runs): as if listed a moment later.
  std::set<std::pair<dev_t, ino_t>> seen;
  std::vector<std::string> files;
  if (files_listed != nullptr) files_listed->clear();
  for (size_t i = 0; i < expanded.size(); ++i) {
    struct stat st;
    if (stat(expanded[i].c_str(), &st) != 0) {
      if (listed[i] && errno == ENOENT) continue;
    } else if (!seen.insert({st.st_dev, st.st_ino}).second) {
      continue;
    }
    files.push_back(std::move(expanded[i]));
    if (files_listed != nullptr) files_listed->push_back(listed[i]);
  }
  return files;
}

TraceSet LoadTraceSet(const std::vector<std::string>& files, size_t max_events,
                      unsigned threads) {
  TraceSet set;
  FileStream stream(files, threads);
  // The stream's own processes fill in (strings, messages) as it goes, so
  // the events go to a side table first.
  std::vector<ProcessTrace> held(files.size());
  StreamEvent batch[256];
  for (size_t n; !set.truncated && (n = stream.Next(batch, 256)) > 0;) {
    for (size_t i = 0; i < n; ++i) {
      if (set.merged.size() == max_events) {
        set.truncated = true;
        break;
      }
      const StreamEvent& e = batch[i];
      ProcessTrace& p = held[e.process];
      p.events.push_back(*e.event);
      p.tids.push_back(e.tid);
      p.ranks.push_back(e.rank);
      set.merged.push_back(e.ref());
    }
  }
  set.processes = stream.processes();
  for (size_t i = 0; i < files.size(); ++i) {
    set.processes[i].events = std::move(held[i].events);
    set.processes[i].tids = std::move(held[i].tids);
    set.processes[i].ranks = std::move(held[i].ranks);
  }
  return set;
}

}  // namespace dlprof::read
