// Finishing the trace on a signal whose default action ends the process
// (fatal_signals.h says what the program sees).
//
// Decisions, and why:
// - Our handler runs with every signal blocked. A fault inside the tracer
//   while it flushes (on this thread, or on the flusher, which blocks every
//   signal for good) meets a blocked SIGSEGV/SIGBUS/SIGILL/SIGFPE, and the
//   kernel then forces the default action: the process dies of that fault,
//   it never loops. A second fatal signal waits until ours is done.
// - A fault (SIGSEGV, SIGBUS, SIGILL, SIGFPE sent by the kernel for the
//   faulting instruction, si_code > 0) is not raised again: the handler puts
//   SIG_DFL back and returns, the instruction runs again and faults again,
//   and the process dies of the real fault, with its address and code in the
//   core's siginfo and the faulting thread's registers at the fault (as
//   Crashpad and Breakpad do). Every other signal (kill, raise, abort,
//   sigqueue, a timer, SIGSYS from seccomp, SIGTRAP from int3: none of them
//   would happen again) is sent again to this thread with tgkill once
//   SIG_DFL is back and it is unblocked: the same signal, the same status.
// - No alternate signal stack of ours. A stack overflow's SIGSEGV cannot be
//   delivered on the overflowed stack: the kernel then kills the process
//   with the default action, our handler never runs, and the events of the
//   last DLPROF_FLUSH_MS are lost. A stack of ours would have to be set up
//   on every thread and hidden from sigaltstack() (Python's faulthandler and
//   the Go and Java runtimes set their own), and the final pass would run
//   on a few KiB of stack; the default action without flushing is the safe
//   choice here.
// - While the final pass is written (milliseconds; at most kStallNs without
//   progress, trace_sink.h) the process's other threads run on, where
//   without the tracer they would already be gone. What they record then is
//   not in the trace.
#include "lib/core/fatal_signals.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/core/raw_log.h"
#include "lib/core/process_end.h"
#include "lib/core/real_symbol.h"
#include "lib/core/runtime.h"

namespace dlprof::core {
namespace {

// signal(7): default action Term or Core. The real-time signals (all Term)
// come from the C library, which keeps the first two or three for itself.
constexpr int kFatalSignals[] = {
    SIGHUP,  SIGINT,    SIGQUIT, SIGILL,  SIGTRAP, SIGABRT, SIGBUS,    SIGFPE,
    SIGUSR1, SIGSEGV,   SIGUSR2, SIGPIPE, SIGALRM, SIGTERM, SIGSTKFLT, SIGXCPU,
    SIGXFSZ, SIGVTALRM, SIGPROF, SIGIO,   SIGPWR,  SIGSYS};

using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);
SigactionFn RealSigaction() {
  static SigactionFn fn = reinterpret_cast<SigactionFn>(FindRealSymbol("sigaction"));
  return fn;
}

bool IsFault(int sig, const siginfo_t* info) {
  if (sig != SIGSEGV && sig != SIGBUS && sig != SIGILL && sig != SIGFPE) return false;
  return info != nullptr && info->si_code > 0;
}

void OnFatalSignal(int sig, siginfo_t* info, void*) {
  ErrnoSaver keep_errno;
  if (Runtime::Get().InOwnProcess()) {
    // Who sent it, where one did (kill, tgkill, sigqueue: si_code <= 0).
    const bool sent = info != nullptr && info->si_code <= 0;
    RecordProcessEnd(EventKind::Signal, sig, sent ? static_cast<uint32_t>(info->si_pid) : 0,
                     /*maybe_in_handler=*/true);
  }
  Runtime::Get().FinalizeFromSignal();
  // Now the default action, exactly as without the tracer.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  RealSigaction()(sig, &dfl, nullptr);
  if (IsFault(sig, info)) return;  // the instruction faults again
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  syscall(SYS_tgkill, static_cast<pid_t>(syscall(SYS_getpid)),
          static_cast<pid_t>(syscall(SYS_gettid)), sig);
}

bool Install(int sig, struct sigaction* old) {
  struct sigaction act {};
  act.sa_sigaction = OnFatalSignal;
  sigfillset(&act.sa_mask);
  act.sa_flags = SA_SIGINFO | SA_RESTART;
  return RealSigaction()(sig, &act, old) == 0;
}

}  // namespace

bool IsFatalByDefault(int sig) {
  for (int s : kFatalSignals) {
    if (s == sig) return true;
  }
  return sig >= SIGRTMIN && sig <= SIGRTMAX;
}

void InstallFatalSignalHandlers() {
  if (!RealSigaction()) return;
  for (int sig = 1; sig <= SIGRTMAX; ++sig) {
    if (!IsFatalByDefault(sig)) continue;
    struct sigaction old {};
    if (RealSigaction()(sig, nullptr, &old) != 0) continue;
    if (old.sa_handler == SIG_DFL) Install(sig, nullptr);
  }
}

bool OwnsFatalSignal(int sig) {
  if (!RealSigaction() || !IsFatalByDefault(sig)) return false;
  struct sigaction cur {};
  if (RealSigaction()(sig, nullptr, &cur) != 0) return false;
  return (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == OnFatalSignal;
}

bool StandInForDefault(int sig, struct sigaction* old) {
  if (!RealSigaction() || !IsFatalByDefault(sig) ||
      g_state.load(std::memory_order_acquire) != static_cast<int>(RuntimeState::kRunning) ||
      !Runtime::Get().InOwnProcess()) {
    return false;
  }
  return Install(sig, old);
}

void BlockFatalSignals(sigset_t* old) {
  sigset_t set;
  sigemptyset(&set);
  for (int sig = 1; sig <= SIGRTMAX; ++sig) {
    if (IsFatalByDefault(sig)) sigaddset(&set, sig);
  }
  pthread_sigmask(SIG_BLOCK, &set, old);
}

}  // namespace dlprof::core
