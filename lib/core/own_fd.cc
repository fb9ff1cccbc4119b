// The tracer's own descriptors, each open for a moment only (own_fd.h).
#include "lib/core/own_fd.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <mutex>

namespace dlprof::core {
namespace {

// Held while one of our descriptors is open; fork() takes it first.
std::mutex g_fd_mu;
}  // namespace

// This thread's scopes open: an inner one (a map's file opened while the
// sink opens the trace) leaves the lock and the mask to the outermost.
__thread int tls_own_fd_depth __attribute__((tls_model("initial-exec")));

std::atomic<int> g_own_fd_scopes{0};
std::atomic<int> g_low_own_fds{0};
std::atomic<int> g_fd_sweeps{0};
__thread int tls_fd_sweeps __attribute__((tls_model("initial-exec")));

namespace {
static_assert(sizeof(std::atomic<int>) == sizeof(int) && std::atomic<int>::is_always_lock_free,
              "the counters are futex words");

// Threads in WaitUntilNoOwnFd: a scope that brings a counter to 0 wakes
// them, and makes no system call while there are none. (Sequentially
// consistent with the waiters' loads: either the waiter sees the 0 or the
// scope sees the waiter.)
std::atomic<int> g_own_fd_waiters{0};

void Release(std::atomic<int>& count) {
  if (count.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
      g_own_fd_waiters.load(std::memory_order_seq_cst) != 0) {
    syscall(SYS_futex, reinterpret_cast<int*>(&count), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr,
            nullptr, 0);
  }
}

// This thread's outermost scope counts in g_low_own_fds.
__thread bool tls_low_counted __attribute__((tls_model("initial-exec")));

void CountLow() {
  if (!tls_low_counted) {
    tls_low_counted = true;
    g_low_own_fds.fetch_add(1, std::memory_order_acq_rel);
  }
}
}  // namespace

void OwnFdMovedHigh() {
  if (tls_own_fd_depth > 0 && tls_low_counted) {
    tls_low_counted = false;
    Release(g_low_own_fds);
  }
}

void EndFdSweep() {
  const int saved = errno;
  --tls_fd_sweeps;
  g_fd_sweeps.fetch_sub(1, std::memory_order_seq_cst);
  // A scope waits for the sweeps of other threads only (WaitForSweeps):
  // wake every waiter at each end, not only at 0.
  if (g_own_fd_waiters.load(std::memory_order_seq_cst) != 0) {
    syscall(SYS_futex, reinterpret_cast<int*>(&g_fd_sweeps), FUTEX_WAKE_PRIVATE, INT32_MAX,
            nullptr, nullptr, 0);
  }
  errno = saved;
}

namespace {
// Until no other thread is in a sweep: this thread's own (a signal handler
// that writes the trace on top of its close_range, which has not yet made
// or has made its system call) must not be waited for.
void WaitForSweeps() {
  const int saved = errno;
  g_own_fd_waiters.fetch_add(1, std::memory_order_seq_cst);
  for (int now; (now = g_fd_sweeps.load(std::memory_order_seq_cst)) > tls_fd_sweeps;) {
    syscall(SYS_futex, reinterpret_cast<int*>(&g_fd_sweeps), FUTEX_WAIT_PRIVATE, now, nullptr,
            nullptr, 0);
  }
  g_own_fd_waiters.fetch_sub(1, std::memory_order_seq_cst);
  errno = saved;
}
}  // namespace

void WaitUntilNoOwnFd(std::atomic<int>& count) {
  const int saved = errno;  // (a wake before the sleep: EAGAIN)
  g_own_fd_waiters.fetch_add(1, std::memory_order_seq_cst);
  for (int now; (now = count.load(std::memory_order_seq_cst)) != 0;) {
    syscall(SYS_futex, reinterpret_cast<int*>(&count), FUTEX_WAIT_PRIVATE, now, nullptr, nullptr,
            0);
  }
  g_own_fd_waiters.fetch_sub(1, std::memory_order_seq_cst);
  errno = saved;
}

OwnFdScope::OwnFdScope() {
  // (An inner scope may open a descriptor low again.)
  if (tls_own_fd_depth++ > 0) {
    CountLow();
    return;
  }
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old_);
  sigpending(&pending_before_);
  // Counted, then a look for the program's sweeps (WhenNoOwnFdIsOpen): one
  // in progress may be past its own look, so step back (the lock too: a
  // signal handler on the sweeping thread may need it) until it has
  // returned.
  for (;;) {
    g_fd_mu.lock();
    g_own_fd_scopes.fetch_add(1, std::memory_order_seq_cst);
    if (g_fd_sweeps.load(std::memory_order_seq_cst) <= tls_fd_sweeps) break;
    Release(g_own_fd_scopes);
    g_fd_mu.unlock();
    WaitForSweeps();
  }
  CountLow();
}

OwnFdScope::~OwnFdScope() {
  if (--tls_own_fd_depth > 0) return;
  if (tls_low_counted) {
    tls_low_counted = false;
    Release(g_low_own_fds);
  }
  Release(g_own_fd_scopes);
  g_fd_mu.unlock();
  sigset_t pending;
  if (!sigismember(&pending_before_, SIGXFSZ) && sigpending(&pending) == 0 &&
      sigismember(&pending, SIGXFSZ)) {
    int saved = errno;
    sigset_t xfsz;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    struct timespec zero = {0, 0};
    sigtimedwait(&xfsz, nullptr, &zero);
    errno = saved;
  }
  pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

bool AllocateOwnFile(int fd, uint64_t at, uint64_t len) {
  struct rlimit lim {};
  if (getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY &&
      at + len > lim.rlim_cur) {
    return false;
  }
  if (syscall(SYS_fallocate, fd, 0, static_cast<off_t>(at), static_cast<off_t>(len)) == 0) {
    return true;
  }
  if (errno != EOPNOTSUPP) return false;
  static const char kZeros[65536] = {};
  for (uint64_t done = 0; done < len;) {
    const uint64_t n = len - done < sizeof(kZeros) ? len - done : sizeof(kZeros);
    long w = syscall(SYS_pwrite64, fd, kZeros, n, static_cast<off_t>(at + done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    done += static_cast<uint64_t>(w);
  }
  return true;
}

int MoveOwnFdHigh(int fd) {
  struct rlimit lim {};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur < 64) return fd;
  const rlim_t floor = std::min<rlim_t>(lim.rlim_cur - lim.rlim_cur / 8, 1000);
  if (static_cast<rlim_t>(fd) >= floor) {
    OwnFdMovedHigh();
    return fd;
  }
  const int high = static_cast<int>(syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, floor));
  if (high < 0) return fd;
  syscall(SYS_close, fd);
  OwnFdMovedHigh();  // the program's opens go on while we use it
  return high;
}

bool RaiseFdLimitByOne(struct rlimit* old) {
  if (syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, nullptr, old) != 0 ||
      old->rlim_cur == RLIM_INFINITY || old->rlim_cur >= old->rlim_max) {
    return false;
  }
  struct rlimit raised = *old;
  raised.rlim_cur = old->rlim_cur + 1;
  return syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &raised, nullptr) == 0;
}

void RestoreFdLimit(const struct rlimit& old) {
  syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &old, nullptr);
}

void OwnFdBeforeFork() { g_fd_mu.lock(); }
// The child's only thread is the one that forked, which holds the lock.
void OwnFdAfterFork() { g_fd_mu.unlock(); }
void OwnFdAfterForkInChild() {
  // Sweeps other threads of the parent's were making: none of the child's.
  g_fd_sweeps.store(tls_fd_sweeps, std::memory_order_relaxed);
  g_fd_mu.unlock();
}

}  // namespace dlprof::core
