// The tracer's own descriptors, each open for a moment only: a write of the
// trace, a look at /proc/self/stat. Between two of them the tracer holds
// none, so that a program never finds one of ours among its descriptors,
// counts one fewer below its RLIMIT_NOFILE, or closes or dup2()s onto ours
// (issue 38).
#ifndef DLPROF_LIB_CORE_OWN_FD_H_
#define DLPROF_LIB_CORE_OWN_FD_H_

#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

namespace dlprof::core {

// Open our descriptors only inside one of these: every signal is blocked
// (a handler must not fork, or run exit(), on top of it) and fork() waits
// until the scope ends (OwnFdBeforeFork), so no child inherits the
// descriptor. A write past RLIMIT_FSIZE leaves SIGXFSZ pending on this
// thread: it is ours (its default action would kill the program), so it is
// taken before the old mask returns. Scopes nest: the outermost one holds
// the lock and the mask.
class OwnFdScope {
 public:
  OwnFdScope();
  ~OwnFdScope();
  OwnFdScope(const OwnFdScope&) = delete;
  OwnFdScope& operator=(const OwnFdScope&) = delete;

 private:
  sigset_t old_;
  sigset_t pending_before_;
};

// Makes [at, at + len) of our file `fd` real storage, growing the file,
// before it is mapped: a store into the mapping can then never meet a full
// disk or tmpfs (a SIGBUS in the program). Where the file system has no
// fallocate, zeros are written. Never past RLIMIT_FSIZE: that would send
// the program SIGXFSZ. (The rings sidecar, the I/O map's /dev/shm file.)
bool AllocateOwnFile(int fd, uint64_t at, uint64_t len);

// `open`, one of ours in an OwnFdScope that failed with EMFILE (the program
// holds every descriptor its soft RLIMIT_NOFILE allows: a cache of open
// files), again with the soft limit raised by one for its moment and put
// back at once, where the hard limit leaves room; EMFILE where it does not.
// The descriptor is the one above the program's range, the one slot the
// raise adds, so the program's own calls can get none it allowed (they wait
// while ours is low anyway). What another thread may see for that moment:
// getrlimit() saying one more, and a child that posix_spawn() or vfork()
// starts then (no fork handlers run) inheriting it. So only where the
// trace would be lost otherwise: its last write (the process exits, execs
// or dies), and its creation, in a forked child (one thread) or at start.
bool RaiseFdLimitByOne(struct rlimit* old);
void RestoreFdLimit(const struct rlimit& old);
template <typename Open>
int OpenAboveFdLimit(Open&& open) {
  struct rlimit old {};
  if (!RaiseFdLimitByOne(&old)) {
    errno = EMFILE;
    return -1;
  }
  const int fd = open();
  const int err = errno;
  RestoreFdLimit(old);
  errno = err;
  return fd;
}

// pthread_atfork handlers: fork() waits for an OwnFdScope in progress.
void OwnFdBeforeFork();
void OwnFdAfterFork();  // in the parent
void OwnFdAfterForkInChild();  // in the child: other threads' sweeps are not its

// How many OwnFdScopes are open in the process now, and on this thread.
extern std::atomic<int> g_own_fd_scopes;
// How many of them may hold a descriptor of ours at a low number, one the
// program's next open() would get: each until it moved its descriptor high
// (OwnFdMovedHigh; a trace's write holds its high one for the write's
// length, not a low one).
extern std::atomic<int> g_low_own_fds;
// This thread's scope holds its descriptor high from now on (MoveOwnFdHigh):
// the program's opens need not wait for its end.
void OwnFdMovedHigh();
// Our descriptor `fd`, just opened in this thread's scope, moved to a high
// number (close-on-exec): the low one open() gave it is for the program's
// next open, which must find it free (as a `close(1); open(...)`
// redirection needs) -- taken for an fcntl's moment, not for a write, a
// read of a directory or a close that flushes to NFS. Where the limit
// leaves no room above, it stays (and the program's opens wait for it).
int MoveOwnFdHigh(int fd);
extern __thread int tls_own_fd_depth __attribute__((tls_model("initial-exec")));

// Blocks the calling thread until `count` (one of the two above) is 0: it
// sleeps on a futex, woken by the scope that brings it to 0. A spin on
// sched_yield flooded a thread's context-switch records, which share a map
// reader's perf buffer with its fault samples (samples were lost).
void WaitUntilNoOwnFd(std::atomic<int>& count);

// The program's calls that sweep or replace descriptors by number
// (close_range, closefrom, dup2, dup3; by syscall() too) run when none of
// ours is open: they could otherwise close ours under a write of the trace,
// and give its number to a file of the program's, which the write then
// went into. One atomic load while none is open; else the call waits for
// the tracer's moment to end (without a lock: a signal handler's call may
// wait too) -- unless it is the tracer's own, in its scope (its syscall()
// is ours). close() too, but only of a number the program was not seen to
// open (a daemon's loop over every number: CloseOfNumber, describe.h): a
// program's close of its own files is frequent, and waiting in every one,
// a loader's worker processes fell behind (integration.job_shapes).
//
// The call is counted (g_fd_sweeps) before it looks, and a scope counts
// itself before it looks at g_fd_sweeps (both sequentially consistent): so
// either the call sees the scope and waits for its end, or the scope sees
// the call and waits for it to return before it opens anything. A look
// alone let a scope begin between the look and the call (a thread
// preempted there on a busy machine): close_range closed the trace under
// its write, which failed with EBADF, and tracing stopped (no end marker,
// the rings sidecar left) -- or dup2 put a file of the program's on the
// trace's number, and the write went into that file.
extern std::atomic<int> g_fd_sweeps;
extern __thread int tls_fd_sweeps __attribute__((tls_model("initial-exec")));
void EndFdSweep();  // errno kept
template <typename Call>
auto WhenNoOwnFdIsOpen(Call&& call) {
  if (tls_own_fd_depth != 0) return call();  // the tracer's own, in its scope
  ++tls_fd_sweeps;
  g_fd_sweeps.fetch_add(1, std::memory_order_seq_cst);
  if (__builtin_expect(g_own_fd_scopes.load(std::memory_order_seq_cst) != 0, 0)) {
    WaitUntilNoOwnFd(g_own_fd_scopes);
  }
  struct End {
    ~End() { EndFdSweep(); }
  } end;
  return call();
}

// The program's calls that take the lowest free descriptor (open, openat,
// creat, fopen, dup) run when none of ours is open at a low number: else
// the program, which untraced gets fd 3 after closing it, got fd 4 while the
// flusher held 3 for a moment (reliability.fds, 1 run in 12 with every core
// busy). One atomic load while none is; the wait lasts an open's and an
// fcntl's moment, or a /proc file's read.
template <typename Call>
auto WhenNoLowOwnFd(Call&& call) {
  if (__builtin_expect(g_low_own_fds.load(std::memory_order_acquire) != 0, 0) &&
      tls_own_fd_depth == 0) {
    WaitUntilNoOwnFd(g_low_own_fds);
  }
  return call();
}

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_OWN_FD_H_
