// File classes: which files are the data set, which are code, outputs or
// the system's, so that figures about "the data" leave the rest out.
//
// A training job opens far more than its data: Python sources and bytecode,
// shared libraries, MPI's session and shared-memory files, /proc and /sys.
// The rules (docs/ANALYSIS.md, "File classes"), first match wins:
//   1. code     by name: .py .pyc .pyo .pyd .pyi .pth .so .so.N[.N...] .a .o
//               .jar .class, or a directory site-packages, dist-packages,
//               __pycache__, *.dist-info, *.egg-info, lib/pythonX[.Y];
//   2. system   not a path (pipe:[..], socket:[..], anon_inode:..), or under
//               /proc /sys /dev (/dev/shm: MPI's shared memory) /etc /run
//               /var/run /var/lib /boot /bin /sbin /lib /lib64 /usr (not
//               /usr/local, but /usr/local/lib /usr/local/bin
//               /usr/local/share), or an MPI or launcher file: a name that
//               starts with ompi. prte. openmpi-sessions pmix- pmix.
//               .openmpi or .pmix (session directories, per-user settings),
//               or anything below one, or ROMIO's files beside a data file
//               (.NAME.shfp.N, the shared file pointer; NAME.locktest.N),
//               or a runtime's cache or scratch directory: ~/.nv (CUDA's
//               JIT cache), ~/.triton, ~/.cache/torch, /tmp/pymp-*
//               (multiprocessing's; torch's shared memory is in /dev/shm);
//   3. data     read by the job (written too, when the job made its data
//               set before reading it, as the quickstart does);
//   4. outputs  written and never read (checkpoints, logs, results), but
//               by copies out of it into traced files (a checkpoint
//               copied to model_best);
//   5. other    opened, looked up or closed only: no byte moved.
// The rules see only the path and what the job did with the file; a data
// set kept under /usr or named *.so would be misclassed, and --path picks
// files by name instead.
#ifndef DLPROF_LIB_ANALYSIS_FILE_CLASSES_H_
#define DLPROF_LIB_ANALYSIS_FILE_CLASSES_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "lib/analysis/summary/summary.h"

namespace dlprof::analysis {

enum class FileClass : uint8_t { kData, kCode, kOutputs, kSystem, kOther };
constexpr int kFileClasses = 5;

// "data", "code", "outputs", "system", "other".
const char* FileClassName(FileClass c);

// What the path alone says: kCode, kSystem, or kOther when the file's use
// decides (rules 1 and 2).
FileClass ClassOfPath(std::string_view path);

// The class of a file (rules 1 to 5), from its path and its figures.
FileClass ClassifyFile(std::string_view path, const IoStats& stats);

struct FileClassTotals {
  uint64_t files = 0;        // paths that are no directory of others
  uint64_t directories = 0;  // paths with other paths of the summary below them
  IoStats io;  // the figures of both merged (MergeIoStats)
};

// The files of `s` by class, indexed by FileClass.
std::array<FileClassTotals, kFileClasses> TotalsByClass(const Summary& s);

// Whether `path`, a key of `files`, has other keys below it ("/a/b" of
// "/a/b/c"): a directory that was opened to list it or looked up (Python's
// imports stat and open every directory on their path), which no list of
// files shows as a row. Its calls stay in its class's totals.
bool IsDirectoryOfFiles(const std::map<std::string, IoStats>& files, const std::string& path);

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_FILE_CLASSES_H_
