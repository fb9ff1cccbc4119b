// The trace sink across a change of the process's credentials (setuid,
// setresgid, setgroups, ... ; trace_sink.h, Runtime::BeforeCredentialChange).
//
// glibc makes a set-id call on every thread of the process (the kernel's
// credentials are per thread), and aborts the process when it fails on one
// but not the others. The flusher is a thread the program does not know:
// `setpriv --reuid=... --regid=...` keeps its capabilities across the uid
// change in its own thread (PR_SET_KEEPCAPS is per thread), so the flusher
// lost CAP_SETGID there, the next setresgid failed on it alone, and glibc
// aborted. So the flusher leaves before each such call and a new one starts
// after it, from the calling thread, with its credentials. The same for
// the unshare and setns calls the kernel allows a process of one thread
// only (lib/intercept/namespaces.cc); there the thread must be gone from the
// kernel's thread group too, not only joined (WaitUntilGone).
//
// And a process that becomes another user can no longer open its trace
// (0600 in 0700 directories, the old user's): the trace is opened before the
// change and that descriptor kept for as long as the path cannot be opened.
// After an unshare or setns into a mount namespace, for the process's life:
// the path opens right after the call (the namespace is a copy) and a mount
// over the traces' directory hides it later (unshare, then mount, as a
// rootless container starts), when the trace's events were lost.
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

#include "lib/core/own_fd.h"
#include "lib/core/trace_sink.h"

namespace dlprof::core {
namespace {

// Where the kept descriptor goes, where RLIMIT_NOFILE allows: above those a
// program counts on getting (the lowest free ones, the few it names).
constexpr int kKeptFdFloor = 100;

// pthread_join returns once the kernel clears the thread's tid (as its
// memory is released), before it takes the thread out of the thread group
// and drops its share of the filesystem information: an unshare(
// CLONE_NEWUSER) or setns into a mount namespace right after the join still
// found two threads and failed with EINVAL (2 in 300 runs). So wait until
// the kernel no longer knows the tid (one tgkill, or a few, in practice).
void WaitUntilGone(int tid) {
  if (tid <= 0) return;
  const long pid = syscall(SYS_getpid);
  for (int i = 0; i < 100000; ++i) {  // (10 µs and more each: a second at least)
    if (syscall(SYS_tgkill, pid, tid, 0) != 0 && errno == ESRCH) return;
    struct timespec pause = {0, 10000};
    syscall(SYS_nanosleep, &pause, nullptr);
  }
}

}  // namespace

bool TraceSink::StopFlusher() {
  // No handler on this thread while it holds flusher_mu_ (one that calls
  // exit() would wait for it in Close).
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  bool stopped = false;
  {
    std::lock_guard<std::mutex> guard(flusher_mu_);
    if (thread_started_ && !pthread_equal(thread_, pthread_self())) {
      stop_.store(true, std::memory_order_release);
      Wake();
      pthread_join(thread_, nullptr);
      WaitUntilGone(flusher_tid_.load(std::memory_order_relaxed));
      thread_started_ = false;
      stopped = true;
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return stopped;
}

void TraceSink::KeepDescriptor() {
  Lock lock(this);
  if (failed_ || kept_fd_.load(std::memory_order_relaxed) >= 0) return;
  OwnFdScope scope;  // no fork while it is open and not yet kept
  int fd = OpenForAppend();
  if (fd < 0) return;  // the next write says why, if it fails too
  const int high = static_cast<int>(syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, kKeptFdFloor));
  if (high >= 0) {
    syscall(SYS_close, fd);
    fd = high;
  }
  kept_fd_.store(fd, std::memory_order_relaxed);
}

void TraceSink::ReleaseDescriptor(bool for_life) {
  Lock lock(this);
  if (for_life) kept_for_life_ = true;
  const int kept = kept_fd_.load(std::memory_order_relaxed);
  if (kept < 0 || kept_for_life_) return;
  OwnFdScope scope;
  const int fd = OpenForAppend();
  if (fd < 0) return;  // the new credentials cannot open it: keep ours
  syscall(SYS_close, fd);
  if (IsTrace(kept)) syscall(SYS_close, kept);
  kept_fd_.store(-1, std::memory_order_relaxed);
}

int TraceSink::WriteDescriptor() {
  const int kept = kept_fd_.load(std::memory_order_relaxed);
  if (kept >= 0) {
    if (IsTrace(kept)) {
      OwnFdMovedHigh();  // (held all along: no new one low)
      return kept;
    }
    // Closed by the program, or another file of its own there: not ours.
    kept_fd_.store(-1, std::memory_order_relaxed);
  }
  return OpenForAppend();
}

void TraceSink::CloseKeptDescriptorInChild() {
  const int kept = kept_fd_.exchange(-1, std::memory_order_relaxed);
  if (kept >= 0 && IsTrace(kept)) syscall(SYS_close, kept);
}

}  // namespace dlprof::core
