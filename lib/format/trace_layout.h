// Where traces lie in a trace directory, for the writer and every reader:
//
//   DLPROF_DIR/<run id>/<host>/<exe>-<host>-<pid>-<clock hex>.dlprof
//
// The runtime writes each process's trace there (lib/core/trace_sink.cc),
// the launcher looks in its run's directory for what the run wrote
// (tools/launcher), and readers list the traces below any directory they
// are given (lib/read/trace_set.cc). A job of thousands of processes
// creates its files in one directory per host, not all in one
// (docs/USER_GUIDE.md); a reader accepts traces at any depth, so that a
// directory copied or rearranged by hand still reads.
#ifndef DLPROF_LIB_FORMAT_TRACE_LAYOUT_H_
#define DLPROF_LIB_FORMAT_TRACE_LAYOUT_H_

#include <cstdint>
#include <string>
#include <vector>

namespace dlprof::format {

// What every trace file's name ends with.
inline constexpr char kTraceSuffix[] = ".dlprof";

// A run id or host name as one directory name: characters other than
// [A-Za-z0-9._-] become '_', a leading '.' too; `fallback` for an empty one.
std::string LayoutName(const std::string& s, const char* fallback);

// DIR/<run id>: every trace of one run lies below it.
std::string RunDirectory(const std::string& dir, const std::string& run_id);

// DIR/<run id>/<host>: the traces of one run's processes on one host.
std::string HostDirectory(const std::string& dir, const std::string& run_id,
                          const std::string& host);

// The file name of a process's trace in its host directory: the basename
// of its executable ("process" when none), its host, its pid and the
// monotonic clock when it opened the trace (so an exec'ed image, with the
// same pid, writes a file of its own).
std::string TraceFileName(const std::string& exe, const std::string& host, int32_t pid,
                          uint64_t clock_mono_ns);

// A trace file's path less kTraceSuffix and, for a bounded trace's later
// segment (NAME.kN.dlprof), its ".kN": the name its segments and counters
// share.
std::string TraceStemOf(const std::string& trace_path);

// The pid in the name of a trace file that TraceFileName named on `host`
// (a bounded trace's later segments, NAME.kN.dlprof, included), or -1
// where the name is not one of that host's: a file too new to have a
// header still says whose it is.
int32_t TraceFilePid(const std::string& path, const std::string& host);

// The regular files whose names end in kTraceSuffix below `dir`, at any
// depth (symbolic links to directories are not followed), appended to
// `found` sorted. Lines for stderr go to `errors`: a directory that cannot
// be listed, or one that holds no trace.
void FindTraceFiles(const std::string& dir, std::vector<std::string>* found,
                    std::vector<std::string>* errors);

}  // namespace dlprof::format

#endif  // DLPROF_LIB_FORMAT_TRACE_LAYOUT_H_
