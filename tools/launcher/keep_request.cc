// `dlprof keep DIR` (keep_request.h). The request is the modification
// time of RUN_DIR/dlprof.keep: each traced process's flusher looks at it
// about every half second (lib/core/trace_segments.cc) and, when it moved,
// keeps its window -- DURATION before and after -- whole, with the reason
// "dlprof keep" in its counters. A file and its time, not a signal: the
// processes may run on many hosts that share the trace directory, under
// other users, and a signal could reach a process that is not traced.
//
// Only a run's directory with bounded traces is marked: a file anywhere
// else reaches no process, and saying it was asked for would be false (the
// DLPROF_DIR given for the run directory in it said so, exited 0 and left a
// stray dlprof.keep). DIR may also be the trace directory (DLPROF_DIR) or a
// host's directory of the run: the run meant is found from there.
#include "tools/launcher/keep_request.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "lib/core/trace_sink.h"
#include "lib/format/counters.h"
#include "lib/format/trace_file.h"
#include "lib/format/trace_layout.h"

namespace dlprof::launcher {
namespace {

bool EndsWith(const std::string& s, const char* tail) {
  const size_t n = std::strlen(tail);
  return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}

// The entries of `dir` that are directories (`want_dirs`) or regular files,
// as full paths; none where it cannot be listed.
std::vector<std::string> Entries(const std::string& dir, bool want_dirs) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = dir + "/" + name;
    struct stat st;
    if (lstat(path.c_str(), &st) != 0) continue;
    if (want_dirs ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode)) out.push_back(path);
  }
  closedir(d);
  return out;
}

// What the traces of one directory level are.
struct Found {
  bool traces = false;        // any trace file
  bool bounded = false;       // a bounded trace's file (DLPROF_KEEP)
  struct timespec newest {};  // the latest modification among them
};

bool Later(const timespec& a, const timespec& b) {
  return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec);
}

void Add(const Found& part, Found* all) {
  all->traces = all->traces || part.traces;
  all->bounded = all->bounded || part.bounded;
  if (Later(part.newest, all->newest)) all->newest = part.newest;
}

// The trace files directly in `dir` (a host's directory of a run). A
// bounded trace has its counters (NAME.dlcount) from its start, and each
// of its segments says so in its header: a few headers are read where no
// counters are there (they could not be written), not every trace's.
Found FilesOf(const std::string& dir) {
  Found f;
  std::vector<std::string> traces;
  for (const std::string& path : Entries(dir, false)) {
    const bool counters = EndsWith(path, format::kCountersSuffix);
    if (!counters && !EndsWith(path, format::kTraceSuffix)) continue;
    f.traces = true;
    f.bounded = f.bounded || counters;
    if (!counters) traces.push_back(path);
    struct stat st;
    if (stat(path.c_str(), &st) == 0 && Later(st.st_mtim, f.newest)) f.newest = st.st_mtim;
  }
  for (size_t i = 0; i < traces.size() && i < 4 && !f.bounded; ++i) {
    format::TraceReader reader;
    std::string error;
    f.bounded = reader.Open(traces[i], &error) && (reader.process().flags & kHeaderFlagSegment);
  }
  return f;
}

// The traces of a run's directory: those of its host directories.
Found RunOf(const std::string& dir) {
  Found f;
  for (const std::string& host : Entries(dir, true)) Add(FilesOf(host), &f);
  return f;
}

std::string Name(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// Sets RUN_DIR/dlprof.keep's time to now; false when it cannot.
bool Mark(const std::string& run_dir) {
  const std::string path = run_dir + "/" + core::TraceSink::kKeepRequestName;
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  // Its time is the request: set now even when the file was there (a
  // second request within the same second too).
  if (fd < 0 || futimens(fd, nullptr) != 0) {
    fprintf(stderr, "dlprof keep: cannot mark %s: %s\n", path.c_str(), std::strerror(errno));
    if (fd >= 0) close(fd);
    return false;
  }
  close(fd);
  return true;
}

// The run that `dir` stands for ("" for none, with the reason said): dir
// itself, the run of a host's directory, or the trace directory's bounded
// run (the one written last, where there are several).
std::string RunMeant(const std::string& dir) {
  const Found run = RunOf(dir);
  if (run.bounded) return dir;
  if (FilesOf(dir).bounded) {  // a host's directory: its parent is the run's
    const size_t slash = dir.rfind('/');
    const std::string run_dir = slash == 0 ? "/" : dir.substr(0, slash);
    fprintf(stderr, "dlprof keep: %s is a host's directory of the run %s\n", dir.c_str(),
            run_dir.c_str());
    return run_dir;
  }
  std::vector<std::string> bounded;
  std::vector<Found> found;
  bool any_traces = run.traces;
  for (const std::string& sub : Entries(dir, true)) {
    const Found f = RunOf(sub);
    any_traces = any_traces || f.traces;
    if (!f.bounded) continue;
    bounded.push_back(sub);
    found.push_back(f);
  }
  if (bounded.empty()) {
    if (any_traces) {
      fprintf(stderr,
              "dlprof keep: %s holds no bounded trace: its run%s traced without --keep "
              "(DLPROF_KEEP), which keeps every event already; nothing asked\n",
              dir.c_str(), run.traces ? " was" : "s were");
    } else {
      fprintf(stderr,
              "dlprof keep: %s holds no run's traces (expected DLPROF_DIR/<run id> of a job "
              "traced with dlprof run --keep DURATION); nothing asked\n",
              dir.c_str());
    }
    return "";
  }
  size_t latest = 0;
  for (size_t i = 1; i < bounded.size(); ++i) {
    if (Later(found[i].newest, found[latest].newest)) latest = i;
  }
  if (bounded.size() == 1) {
    fprintf(stderr, "dlprof keep: %s is the trace directory; its one bounded run is %s\n",
            dir.c_str(), Name(bounded[0]).c_str());
  } else {
    std::string others;
    for (size_t i = 0; i < bounded.size(); ++i) {
      if (i != latest) others += (others.empty() ? "" : ", ") + Name(bounded[i]);
    }
    fprintf(stderr,
            "dlprof keep: %s is the trace directory of %zu bounded runs; taking the one "
            "written last, %s (the others: %s; to ask one of them, name its directory)\n",
            dir.c_str(), bounded.size(), Name(bounded[latest]).c_str(), others.c_str());
  }
  return bounded[latest];
}

}  // namespace

int KeepRequest(int argc, char** argv) {
  if (argc != 3 || argv[2][0] == '-') {
    fprintf(stderr,
            "usage: dlprof keep RUN_DIR\n"
            "  RUN_DIR: the run's directory, DLPROF_DIR/<run id>, of a job traced with\n"
            "  DLPROF_KEEP (dlprof run --keep DURATION, which names it as it starts);\n"
            "  each of its processes keeps the full events of DURATION before and after\n"
            "  now. Given DLPROF_DIR instead, its bounded run written last is asked.\n");
    return 2;
  }
  struct stat st;
  char resolved[PATH_MAX];
  if (stat(argv[2], &st) != 0 || !S_ISDIR(st.st_mode) || realpath(argv[2], resolved) == nullptr) {
    fprintf(stderr, "dlprof keep: %s is not a directory (expected DLPROF_DIR/<run id>)\n", argv[2]);
    return 1;
  }
  // Absolute and without "..", so that a host's directory has its run as parent.
  const std::string dir = resolved;
  const std::string run_dir = RunMeant(dir);
  if (run_dir.empty() || !Mark(run_dir)) return 1;
  fprintf(stderr,
          "dlprof keep: asked the processes of %s to keep their window around now (they "
          "notice within a second)\n",
          run_dir.c_str());
  return 0;
}

}  // namespace dlprof::launcher
