// The flusher's watch for the program's last thread (trace_sink.h).
//
// glibc ends a process with exit(0) when its last thread leaves through
// pthread_exit() or returns from its start routine; our flusher counts as a
// thread, so without this watch such a process would never end (issue 38).
// The watch starts when the process's first thread leaves (or, in a child
// forked from another thread, at the fork); the flusher then looks every
// kWatchPollNs, and every millisecond for a while after a thread's
// pthread_exit, whether it is alone, and if so ends the process as glibc
// would have (TraceSink::ExitAsLastThread).
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "lib/core/clock.h"
#include "lib/core/own_fd.h"
#include "lib/core/trace_sink.h"

namespace dlprof::core {
namespace {

// A last thread that returns from its start routine calls nothing we see:
// the flusher finds it gone at its next look. A process whose first thread
// has left is rare enough for three system calls every 20 ms.
constexpr uint64_t kWatchPollNs = 20000000;
// After a pthread_exit the thread takes a moment to be gone: look every
// millisecond for this long.
constexpr uint64_t kLookSoonNs = 1000000;
constexpr uint64_t kWatchNoticeNs = 100000000;

}  // namespace

bool TraceSink::WatchDue(uint64_t now, uint64_t* wait_ns) {
  *wait_ns = 0;
  if (!watch_.load(std::memory_order_acquire)) return false;
  const uint64_t noted = exit_noted_ns_.load(std::memory_order_acquire);
  const uint64_t every = noted != 0 && now - noted < kWatchNoticeNs ? kLookSoonNs : kWatchPollNs;
  if (now - last_look_ns_ >= every || (noted != 0 && noted >= last_look_ns_)) {
    last_look_ns_ = now;
    *wait_ns = every;
    return true;
  }
  *wait_ns = every - (now - last_look_ns_);
  return false;
}

void TraceSink::NoteThreadExit() {
  if (!watch_.load(std::memory_order_acquire)) return;
  exit_noted_ns_.store(NowNs(), std::memory_order_release);
  Wake();
}

// /proc/self/stat gives the state of the process's first thread and the
// number of threads, the first counted while it is a zombie. The program
// is gone when that first thread is a zombie and the only other thread is
// this one (the flusher is never the first). Another thread of ours (the
// CUPTI plugin's) keeps the process alive, as a thread of the CUDA driver
// does without us.
bool TraceSink::ProgramThreadsGone() {
  char buf[1024];
  long n;
  {
    OwnFdScope scope;
    int fd = static_cast<int>(
        syscall(SYS_openat, AT_FDCWD, "/proc/self/stat", O_RDONLY | O_CLOEXEC));
    if (fd < 0) return false;
    n = syscall(SYS_read, fd, buf, sizeof(buf) - 1);
    syscall(SYS_close, fd);
  }
  if (n <= 0) return false;
  buf[n] = '\0';
  const char* p = strrchr(buf, ')');  // the command name may hold spaces and ')'
  if (p == nullptr || p[1] != ' ') return false;
  const char state = p[2];
  // Fields after the name: 3 state ... 20 num_threads.
  int field = 3;
  for (p += 2; *p != '\0' && field < 20; ++p) {
    if (*p == ' ') ++field;
  }
  if (field != 20) return false;
  const long threads = strtol(p, nullptr, 10);
  return (state == 'Z' || state == 'X') && threads <= 2;
}

}  // namespace dlprof::core
