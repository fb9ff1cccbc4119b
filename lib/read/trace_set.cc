// Input expansion (directories to trace files) and whole traces held in memory.
#include "lib/read/trace_set.h"

#include <sys/stat.h>

#include <algorithm>
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
                                      std::vector<std::string>* errors) {
  std::vector<std::string> expanded;
  for (const auto& in : inputs) {
    struct stat st;
    if (stat(in.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      format::FindTraceFiles(in, &expanded, errors);
    } else {
      expanded.push_back(in);
    }
  }
  // A directory and a file inside it may both be named.
  std::set<std::pair<dev_t, ino_t>> seen;
  std::vector<std::string> files;
  for (auto& f : expanded) {
    struct stat st;
    if (stat(f.c_str(), &st) == 0 && !seen.insert({st.st_dev, st.st_ino}).second) continue;
    files.push_back(std::move(f));
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
