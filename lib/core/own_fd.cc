// The tracer's own descriptors, each open for a moment only (own_fd.h).
#include "lib/core/own_fd.h"

#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
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

OwnFdScope::OwnFdScope() {
  if (tls_own_fd_depth++ > 0) return;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old_);
  sigpending(&pending_before_);
  g_fd_mu.lock();
  g_own_fd_scopes.fetch_add(1, std::memory_order_acq_rel);
}

OwnFdScope::~OwnFdScope() {
  if (--tls_own_fd_depth > 0) return;
  g_own_fd_scopes.fetch_sub(1, std::memory_order_acq_rel);
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

void OwnFdBeforeFork() { g_fd_mu.lock(); }
// The child's only thread is the one that forked, which holds the lock.
void OwnFdAfterFork() { g_fd_mu.unlock(); }

}  // namespace dlprof::core
