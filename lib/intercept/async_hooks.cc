// The asynchronous I/O trackers' part in the process's life: before the
// final block (requests completed and not reaped, or still in flight, are
// recorded as such) and in a forked child (the parent's rings, contexts and
// requests are the parent's to record: forgotten).
#include <pthread.h>

#include <atomic>

#include "lib/intercept/async_requests.h"

namespace dlprof::intercept::async {
namespace {

std::atomic<bool> g_hooked{false};
std::atomic<uint32_t> g_forks{0};

void AfterForkInParent() { g_forks.fetch_add(1, std::memory_order_relaxed); }

void ForgetAfterFork() {
  g_forks.fetch_add(1, std::memory_order_relaxed);
  UringForgetAfterFork();
  LinuxAioForgetAfterFork();
  PosixAioForgetAfterFork();
}

}  // namespace

void FlushAllAtExit() {
  InTracerCode tracer;
  UringFlushAtExit();
  LinuxAioFlushAtExit();
  PosixAioFlushAtExit();
}

void EnsureProcessHooks() {
  if (g_hooked.load(std::memory_order_acquire) || g_hooked.exchange(true)) return;
  core::SetBeforeFinalPass(FlushAllAtExit);
  pthread_atfork(nullptr, AfterForkInParent, ForgetAfterFork);
}

bool Forked() { return g_forks.load(std::memory_order_relaxed) != 0; }

}  // namespace dlprof::intercept::async
