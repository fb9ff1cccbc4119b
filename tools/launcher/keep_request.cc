// `dlprof keep RUN_DIR` (keep_request.h). The request is the modification
// time of RUN_DIR/dlprof.keep: each traced process's flusher looks at it
// about every half second (lib/core/trace_segments.cc) and, when it moved,
// keeps its window -- DURATION before and after -- whole, with the reason
// "dlprof keep" in its counters. A file and its time, not a signal: the
// processes may run on many hosts that share the trace directory, under
// other users, and a signal could reach a process that is not traced.
#include "tools/launcher/keep_request.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "lib/core/trace_sink.h"

namespace dlprof::launcher {

int KeepRequest(int argc, char** argv) {
  if (argc != 3 || argv[2][0] == '-') {
    fprintf(stderr,
            "usage: dlprof keep RUN_DIR\n"
            "  RUN_DIR: the run's directory, DLPROF_DIR/<run id>, of a job traced with\n"
            "  DLPROF_KEEP (dlprof run --keep DURATION); each of its processes keeps the\n"
            "  full events of DURATION before and after now\n");
    return 2;
  }
  const std::string dir = argv[2];
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    fprintf(stderr, "dlprof keep: %s is not a directory (expected DLPROF_DIR/<run id>)\n",
            dir.c_str());
    return 1;
  }
  const std::string path = dir + "/" + core::TraceSink::kKeepRequestName;
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  // Its time is the request: set now even when the file was there (a
  // second request within the same second too).
  if (fd < 0 || futimens(fd, nullptr) != 0) {
    fprintf(stderr, "dlprof keep: cannot mark %s: %s\n", path.c_str(), std::strerror(errno));
    if (fd >= 0) close(fd);
    return 1;
  }
  close(fd);
  fprintf(stderr,
          "dlprof keep: asked the processes of %s to keep their window around now (they "
          "notice within a second)\n",
          dir.c_str());
  return 0;
}

}  // namespace dlprof::launcher
