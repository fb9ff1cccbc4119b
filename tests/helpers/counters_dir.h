// Counters files of made-up processes in a temporary directory, and the
// catalog of the segments beside which they lie (a catalog's entry is all
// the whole run's reader looks at): for tests of lib/analysis/whole_run.h.
#ifndef DLPROF_TESTS_HELPERS_COUNTERS_DIR_H_
#define DLPROF_TESTS_HELPERS_COUNTERS_DIR_H_

#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "dlprof/format.h"
#include "lib/analysis/whole_run.h"
#include "lib/format/counters.h"
#include "lib/read/trace_catalog.h"

namespace dlprof::testing {

class CountersDir {
 public:
  // /tmp/NAMEXXXXXX; empty() where it could not be made.
  explicit CountersDir(const std::string& name) {
    std::string dir = "/tmp/" + name + "XXXXXX";
    if (mkdtemp(dir.data()) != nullptr) dir_ = dir;
  }
  ~CountersDir() {
    Clear();
    if (!dir_.empty()) rmdir(dir_.c_str());
  }
  // No file, no process: as made.
  void Clear() {
    for (const std::string& p : written_) unlink(p.c_str());
    written_.clear();
    catalog_ = read::TraceCatalog();
  }
  bool empty() const { return dir_.empty(); }

  // The counters file of the process `info` says (its stem the exe's name,
  // host and pid): its header, then `records`.
  void Add(const format::ProcessInfo& info, const std::vector<uint8_t>& records) {
    std::vector<uint8_t> bytes = format::EncodeFileHeader(info);
    bytes.insert(bytes.end(), records.begin(), records.end());
    const std::string exe = info.exe.substr(info.exe.rfind('/') + 1);
    const std::string stem = dir_ + "/" + exe + "-" + info.host + "-" + std::to_string(info.pid);
    written_.push_back(stem + format::kCountersSuffix);
    std::ofstream(written_.back(), std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    read::CatalogEntry t;
    t.path = stem + ".dlprof";
    t.opened = true;
    t.info = info;
    catalog_.Add(std::move(t));
  }

  analysis::WholeRun Read(const std::string& batch_region = "load_batch") const {
    return analysis::ReadWholeRun(catalog_, read::ClockAlignment(), batch_region);
  }

 private:
  std::string dir_;
  std::vector<std::string> written_;
  read::TraceCatalog catalog_;
};

// A segment's process on node1: its pid and executable.
inline format::ProcessInfo SegmentProcess(int32_t pid, const std::string& exe) {
  format::ProcessInfo info;
  info.pid = pid;
  info.host = "node1";
  info.exe = exe;
  info.flags = kHeaderFlagSegment;
  return info;
}

}  // namespace dlprof::testing

#endif  // DLPROF_TESTS_HELPERS_COUNTERS_DIR_H_
