// One trace file's strings (paths, names) as FileStream decodes its blocks
// (file_stream.cc).
#ifndef DLPROF_LIB_READ_FILE_STRINGS_H_
#define DLPROF_LIB_READ_FILE_STRINGS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "lib/format/trace_file.h"
#include "lib/read/trace_set.h"

namespace dlprof::read {

// One file's strings (paths, names) into ProcessTrace::strings, bounded by
// its share of kMaxStringBytesPerFile, and the events that name a path
// never defined.
class FileStrings {
 public:
  FileStrings(ProcessTrace* p, size_t max_bytes) : p_(p), max_bytes_(max_bytes) {}

  void Add(format::DecodedBlock* block);

  // Counts the events of `block` (the file's `k`th) whose path has no
  // string (yet), and remembers the first few such paths for the warning.
  void CountUndefined(const format::DecodedBlock& block, uint32_t k);
  uint64_t undefined() const { return undefined_; }

  // What the warning says of the paths missing when their events were
  // decoded: each one's events, the first one's kind and block, and whether
  // its string came in a later block after all (the writer's order broken)
  // or never.
  std::string DescribeUndefined(size_t blocks) const;

 private:
  ProcessTrace* p_;
  const size_t max_bytes_;
  size_t bytes_ = 0;
  bool warned_ = false;
  uint64_t undefined_ = 0;
  uint32_t last_known_file_ = 0;
  struct Missing {
    uint64_t events;
    uint16_t first_kind;
    uint32_t block;
  };
  static constexpr size_t kMissingNamed = 3;
  std::map<uint32_t, Missing> missing_;  // by file id
  bool more_missing_ = false;
};

}  // namespace dlprof::read

#endif  // DLPROF_LIB_READ_FILE_STRINGS_H_
