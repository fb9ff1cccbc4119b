// What a stream event's file is by its path alone (file_classes.h, rules 1
// and 2): code, the system's, or neither (the data set, its metadata, the
// job's outputs), looked up once per (process, string id) and remembered,
// so that a meter asks per event at the cost of a hash lookup, and a loop
// on one file at the cost of a compare.
#ifndef DLPROF_LIB_ANALYSIS_PATH_CLASSES_H_
#define DLPROF_LIB_ANALYSIS_PATH_CLASSES_H_

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "lib/read/event_source.h"

namespace dlprof::analysis {
using namespace dlprof::read;

class PathClasses {
 public:
  explicit PathClasses(const std::vector<ProcessTrace>& processes) : processes_(processes) {}

  // Whether the event's file is neither code nor the system's by its path:
  // the job's own files (data read, outputs written). False without a path.
  bool IsJobFile(const StreamEvent& e) {
    const uint64_t key = ProcessStringKey(e.process, e.event->file);
    return key == last_key_ ? last_answer_ : LookUp(key, e);
  }

 private:
  bool LookUp(uint64_t key, const StreamEvent& e);

  const std::vector<ProcessTrace>& processes_;
  std::unordered_map<uint64_t, bool> job_files_;
  uint64_t last_key_ = UINT64_MAX;  // the key looked up last, and its answer
  bool last_answer_ = false;
};

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_PATH_CLASSES_H_
