// File classes (file_classes.h): the rules of docs/ANALYSIS.md, "File
// classes", and the figures of each class.
#include "lib/analysis/summary/file_classes.h"

#include "lib/format/path_class.h"

namespace dlprof::analysis {

static_assert(static_cast<uint8_t>(FileClass::kCode) == format::kPathCode &&
                  static_cast<uint8_t>(FileClass::kSystem) == format::kPathSystem &&
                  static_cast<uint8_t>(FileClass::kOther) == format::kPathByUse &&
                  static_cast<uint8_t>(FileClass::kData) == format::kPathData &&
                  static_cast<uint8_t>(FileClass::kOutputs) == format::kPathOutputs,
              "format::PathClassOf answers in FileClass's values");

const char* FileClassName(FileClass c) {
  static const char* const kNames[kFileClasses] = {"data", "code", "outputs", "system", "other"};
  return kNames[static_cast<int>(c)];
}

FileClass ClassOfPath(std::string_view path) {
  // The path rules are the format library's, shared with the runtime's
  // counters (lib/format/path_class.h); its values are FileClass's.
  return static_cast<FileClass>(format::PathClassOf(path));
}

FileClass ClassifyFile(std::string_view path, const IoStats& stats) {
  const FileClass by_path = ClassOfPath(path);
  if (by_path != FileClass::kOther) return by_path;
  // Read by calls or through a memory map (its page faults or read-ahead).
  // Read only by copies out of it into traced files, a file the job wrote
  // is an output copied (a checkpoint copied to model_best.pth.tar: its
  // copy's read made it a data file, the "data set" it was read at 1.9
  // GiB/s); one it did not write is data (a data set staged to a local disk).
  const bool copied_only = stats.read.ops <= stats.copied_out_ops;
  if ((stats.read.ops > 0 && (!copied_only || stats.write.ops == 0)) || stats.maps.any()) {
    return FileClass::kData;
  }
  if (stats.write.ops > 0) return FileClass::kOutputs;
  return FileClass::kOther;
}

std::array<FileClassTotals, kFileClasses> TotalsByClass(const Summary& s) {
  std::array<FileClassTotals, kFileClasses> totals;
  for (const auto& [path, stats] : s.files) {
    FileClassTotals& t = totals[static_cast<int>(ClassifyFile(path, stats))];
    ++(IsDirectoryOfFiles(s.files, path) ? t.directories : t.files);
    MergeIoStats(&t.io, stats);
  }
  return totals;
}

bool IsDirectoryOfFiles(const std::map<std::string, IoStats>& files, const std::string& path) {
  // Keys below "/a/b" sort from "/a/b/" on, though not right after "/a/b"
  // ("/a/b.txt" comes between): one look-up.
  const std::string dir = path.empty() || path.back() != '/' ? path + "/" : path;
  auto it = files.lower_bound(dir);
  return it != files.end() && it->first.size() > dir.size() &&
         it->first.compare(0, dir.size(), dir) == 0;
}

}  // namespace dlprof::analysis
