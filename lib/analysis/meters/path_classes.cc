// PathClasses (path_classes.h).
#include "lib/analysis/meters/path_classes.h"

#include "lib/analysis/summary/file_classes.h"

namespace dlprof::analysis {

bool PathClasses::LookUp(uint64_t key, const StreamEvent& e) {
  auto [it, added] = job_files_.try_emplace(key, false);
  if (added && e.process < processes_.size()) {
    const auto& strings = processes_[e.process].strings;
    auto s = strings.find(e.event->file);
    it->second = e.event->file != 0 && s != strings.end() &&
                 ClassOfPath(s->second) == FileClass::kOther;
  }
  last_key_ = key;
  last_answer_ = it->second;
  return it->second;
}

}  // namespace dlprof::analysis
