// Process life cycle: fork, clone, daemon, exec, _exit, quick_exit,
// pthread_create and pthread_exit, and the fatal-signal handler the runtime
// installs (which the program must not be able to notice).
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdlib>

#include "lib/core/fatal_signals.h"
#include "lib/core/map_faults.h"
#include "lib/core/process_end.h"
#include "lib/core/string_table.h"
#include "lib/intercept/child_env_call.h"
#include "lib/intercept/describe.h"
#include "lib/intercept/wrapper.h"

using dlprof::Event;
using dlprof::EventKind;
using namespace dlprof::intercept;

DLPROF_REAL(fork)
extern "C" pid_t fork(void) {
  // The child's runtime restarts in the pthread_atfork child handler.
  return Traced<pid_t>(
      EventKind::ProcessFork, [&] { return real_fork(); },
      [&](Event& e, pid_t r, int) { return r != 0; });  // the parent records it
}

// _Fork (glibc >= 2.34) runs no pthread_atfork handler: the child steps
// aside itself (Runtime::OnUnpreparedForkChild).
DLPROF_REAL_AS(_Fork, pid_t (*)(), nullptr)
extern "C" pid_t _Fork(void) {
  return Traced<pid_t>(
      EventKind::ProcessFork,
      [&] {
        const pid_t pid = real__Fork();
        if (pid == 0) Rt().OnUnpreparedForkChild();
        return pid;
      },
      [&](Event& e, pid_t r, int) { return r != 0; });  // the parent records it
}

// --- exec ------------------------------------------------------------------

namespace {

// Everything recorded so far goes to disk before the image is replaced; if
// exec fails the program goes on traced. Every exec hands the new image the
// program's environment plus what the runtime passes on (WithChildEnv),
// whatever the program did with its own (bash keeps a copy of its own).
// The exec event (file: the program, as the call names it) must be on disk
// before the call, whose success never returns: it is the attempt, ret 0.
// An exec that returns has failed: a second exec event then gives its
// result (ret -1, errno, timed from the attempt), as a reader of the trace
// expects of a call that failed (docs/USER_GUIDE_TRACING.md, "Processes").
struct ExecAttempt {
  uint32_t program = 0;
  uint64_t start_ns = 0;
  bool recorded = false;
};

ExecAttempt BeforeExec(const char* path) {
  ExecAttempt attempt;
  if (!Rt().InOwnProcess()) return attempt;  // a vfork child shares our memory
  size_t len = 0;
  while (path && path[len]) ++len;
  attempt.program = path ? Rt().strings().Intern(path, len) : 0;
  Event e{};
  e.kind = static_cast<uint16_t>(EventKind::ProcessExec);
  e.start_ns = attempt.start_ns = dlprof::core::NowNs();
  e.offset = -1;
  e.fd = -1;
  e.file = attempt.program;
  attempt.recorded = RecordMade(e);
  Rt().FlushForExec();
  return attempt;
}

// The exec call returned `r`: it failed, with errno.
int AfterExec(const ExecAttempt& attempt, int r) {
  if (!attempt.recorded) return r;
  dlprof::core::ErrnoSaver keep;
  const int err = keep.value();
  Event e{};
  e.kind = static_cast<uint16_t>(EventKind::ProcessExec);
  e.start_ns = attempt.start_ns;
  e.dur_ns = dlprof::core::NowNs() - attempt.start_ns;
  e.ret = r;
  e.err = r < 0 ? err : 0;
  e.offset = -1;
  e.fd = -1;
  e.file = attempt.program;
  RecordMade(e);
  // Written now: the exec's block, flagged as the trace's end, must not be
  // its last (a reader takes the last block's flag for the end marker).
  Rt().FlushNow();
  return r;
}

// execl-style argument lists, collected on the stack.
#define DLPROF_COLLECT_ARGS(first, argv_name, envp_out)                       \
  va_list ap;                                                                 \
  va_start(ap, first);                                                        \
  va_list count_ap;                                                           \
  va_copy(count_ap, ap);                                                      \
  size_t argc = 1;                                                            \
  while (va_arg(count_ap, char*) != nullptr) ++argc;                          \
  va_end(count_ap);                                                           \
  char** argv_name = static_cast<char**>(alloca((argc + 1) * sizeof(char*))); \
  argv_name[0] = const_cast<char*>(first);                                    \
  for (size_t i = 1; i <= argc; ++i) argv_name[i] = va_arg(ap, char*);        \
  envp_out;                                                                   \
  va_end(ap)

}  // namespace

DLPROF_REAL(execve)
extern "C" int execve(const char* path, char* const argv[], char* const envp[]) {
  const ExecAttempt attempt = BeforeExec(path);
  return AfterExec(attempt, WithChildEnv(envp, [&](char* const* env) {
                     return real_execve(path, argv, env);
                   }));
}
// execv and execvp pass environ: they go out as execve and execvpe.
extern "C" int execv(const char* path, char* const argv[]) {
  const ExecAttempt attempt = BeforeExec(path);
  return AfterExec(attempt, WithChildEnv(environ, [&](char* const* env) {
                     return real_execve(path, argv, env);
                   }));
}
DLPROF_REAL(execvpe)
extern "C" int execvp(const char* file, char* const argv[]) {
  const ExecAttempt attempt = BeforeExec(file);
  return AfterExec(attempt, WithChildEnv(environ, [&](char* const* env) {
                     return real_execvpe(file, argv, env);
                   }));
}
extern "C" int execvpe(const char* file, char* const argv[], char* const envp[]) {
  const ExecAttempt attempt = BeforeExec(file);
  return AfterExec(attempt, WithChildEnv(envp, [&](char* const* env) {
                     return real_execvpe(file, argv, env);
                   }));
}
DLPROF_REAL(fexecve)
extern "C" int fexecve(int fd, char* const argv[], char* const envp[]) {
  const ExecAttempt attempt = BeforeExec(nullptr);
  return AfterExec(attempt, WithChildEnv(envp, [&](char* const* env) {
                     return real_fexecve(fd, argv, env);
                   }));
}
DLPROF_REAL(execveat)
extern "C" int execveat(int dirfd, const char* path, char* const argv[], char* const envp[],
                        int flags) {
  const ExecAttempt attempt = BeforeExec(path);
  return AfterExec(attempt, WithChildEnv(envp, [&](char* const* env) {
                     return real_execveat(dirfd, path, argv, env, flags);
                   }));
}
extern "C" int execl(const char* path, const char* arg, ...) {
  DLPROF_COLLECT_ARGS(arg, argv, (void)0);
  return execv(path, argv);
}
extern "C" int execlp(const char* file, const char* arg, ...) {
  DLPROF_COLLECT_ARGS(arg, argv, (void)0);
  return execvp(file, argv);
}
extern "C" int execle(const char* path, const char* arg, ...) {
  char** envp;
  DLPROF_COLLECT_ARGS(arg, argv, envp = va_arg(ap, char**));
  return execve(path, argv, envp);
}

// --- exit ------------------------------------------------------------------

namespace {
// Before the runtime has started nothing is ours: straight to the real call
// (a sanitizer runtime sets its handlers up before anything is initialised).
bool BeforeStart() {
  return dlprof::core::g_state.load(std::memory_order_relaxed) ==
         static_cast<int>(dlprof::core::RuntimeState::kUninitialized);
}

// The one way out past exit()'s handlers: the trace is finished (end
// marker, sidecar gone), then the real call ends the process. Its final
// pass is the flusher's: _exit may be called from a signal handler, on top
// of whatever the signal interrupted (torch's DataLoader worker _exits on
// its parent's SIGTERM: inside free(), holding malloc's lock, it waited for
// the lock for ever as the pass allocated; 2 runs of 80 on a loaded
// machine).
[[noreturn]] void FinalizeThen(void (*real_end)(int), int status) {
  if (Rt().InOwnProcess()) {
    dlprof::core::RecordProcessEnd(EventKind::ProcessExit, status, 0, /*maybe_in_handler=*/true);
    Rt().Finalize(/*on_flusher=*/true);
  }
  real_end(status);
  __builtin_unreachable();
}

// main() returns its status to libc's own exit(), which no wrapper sees (a
// Python script's uncaught exception ends it so: status 1): main is called
// through this, where __libc_start_main calls it.
using MainFunction = int (*)(int, char**, char**);
MainFunction g_program_main = nullptr;
int MainThenItsStatus(int argc, char** argv, char** envp) {
  const int status = g_program_main(argc, argv, envp);
  if (!BeforeStart() && Rt().InOwnProcess()) {
    dlprof::core::RecordProcessEnd(EventKind::ProcessExit, status, 0, false);
  }
  return status;
}
}  // namespace

using LibcStartMain = int (*)(MainFunction, int, char**, void (*)(), void (*)(), void (*)(),
                              void*);
DLPROF_REAL_AS(__libc_start_main, LibcStartMain, nullptr)
extern "C" int __libc_start_main(MainFunction main, int argc, char** argv, void (*init)(),
                                 void (*fini)(), void (*rtld_fini)(), void* stack_end) {
  g_program_main = main;
  return real___libc_start_main(MainThenItsStatus, argc, argv, init, fini, rtld_fini, stack_end);
}

// exit(): the status, then libc's exit (its handlers, then the runtime's
// final pass at the end of them).
DLPROF_REAL(exit)
extern "C" void exit(int status) {
  if (!BeforeStart() && Rt().InOwnProcess()) {
    dlprof::core::RecordProcessEnd(EventKind::ProcessExit, status, 0, false);
  }
  real_exit(status);
  __builtin_unreachable();
}

DLPROF_REAL(_exit)
extern "C" void _exit(int status) { FinalizeThen(real__exit.get(), status); }
DLPROF_REAL(_Exit)
extern "C" void _Exit(int status) { FinalizeThen(real__Exit.get(), status); }
// glibc's quick_exit runs the at_quick_exit handlers and ends through its
// own _exit, which no wrapper sees: the trace ends before the handlers (what
// they do is not recorded; they run as untraced).
DLPROF_REAL(quick_exit)
extern "C" void quick_exit(int status) { FinalizeThen(real_quick_exit.get(), status); }

// glibc's daemon() forks and ends the parent with its own fork and _exit,
// past both wrappers: the parent's trace had no fork event and no end
// marker. Done here as glibc does it, through the wrappers: the parent
// records the fork and finishes its trace; the child's steps (setsid, chdir,
// the /dev/null descriptors) are its own calls, recorded as such.
DLPROF_REAL(daemon)
extern "C" int daemon(int nochdir, int noclose) {
  if (BeforeStart() || !Rt().InOwnProcess()) return real_daemon(nochdir, noclose);
  switch (fork()) {
    case -1: return -1;
    case 0: break;
    default: _exit(0);
  }
  if (setsid() == -1) return -1;
  if (!nochdir) (void)chdir("/");
  if (noclose) return 0;
  const int fd = open("/dev/null", O_RDWR);
  struct stat st;
  if (fd == -1 || fstat(fd, &st) != 0) {
    if (fd != -1) close(fd);
    return -1;
  }
  if (!S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3)) {
    close(fd);
    errno = ENODEV;  // no call failed: glibc says so
    return -1;
  }
  (void)dup2(fd, STDIN_FILENO);
  (void)dup2(fd, STDOUT_FILENO);
  (void)dup2(fd, STDERR_FILENO);
  if (fd > 2) (void)close(fd);
  return 0;
}

// glibc ends the process when its last thread leaves this way; our flusher
// thread counts as one, so the runtime watches for the program's last
// (Runtime::OnThreadExiting) and ends the process in glibc's place.
DLPROF_REAL(pthread_exit)
extern "C" void pthread_exit(void* value) {
  Rt().OnThreadExiting();
  real_pthread_exit(value);
  __builtin_unreachable();
}

// A thread the program starts while it reads through maps gets its fault
// event before its start routine runs (the flusher's look for new threads
// comes only every 50 ms: a pool's short threads lost nearly every fault),
// and any thread started where faults are events takes its storage reads
// as its routine returns (MapFaults::OnThreadEnding: a thread that records
// no call has no thread-specific data whose end the runtime would see).
// Otherwise the call passes straight through.
namespace {
struct ThreadStart {
  void* (*routine)(void*);
  void* arg;
};

void* StartWithFaultEvent(void* p) {
  const ThreadStart start = *static_cast<ThreadStart*>(p);
  free(p);
  {
    dlprof::core::ErrnoSaver keep;
    dlprof::core::MapFaults::Get().OnThreadAttached(static_cast<int32_t>(syscall(SYS_gettid)));
  }
  void* r = start.routine(start.arg);
  {
    dlprof::core::ErrnoSaver keep;
    dlprof::core::MapFaults::Get().OnThreadEnding();
  }
  return r;
}
}  // namespace

DLPROF_REAL(pthread_create)
extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attr,
                              void* (*routine)(void*), void* arg) {
  if (dlprof::core::MapFaults::Get().mode() != dlprof::core::FaultMode::kEvents ||
      !dlprof::core::Tracing(dlprof::core::CurrentThread())) {
    return real_pthread_create(thread, attr, routine, arg);
  }
  ThreadStart* start;
  {
    dlprof::core::ErrnoSaver keep;
    start = static_cast<ThreadStart*>(malloc(sizeof(ThreadStart)));
  }
  if (start == nullptr) return real_pthread_create(thread, attr, routine, arg);
  *start = ThreadStart{routine, arg};
  const int r = real_pthread_create(thread, attr, StartWithFaultEvent, start);
  if (r != 0) free(start);
  return r;
}

// --- clone -------------------------------------------------------------------
// A clone(CLONE_VM) child without a TLS of its own (no CLONE_SETTLS) runs on
// the calling thread's: the same ThreadContext, the same ring. Two threads
// of control would fill one single-producer ring at once (zero-filled and
// lost events), and a traced call cannot tell which of the two it runs on
// without a system call. So the thread steps aside: with CLONE_VFORK (the
// caller waits until the child execs or exits) only until clone returns;
// otherwise for good, said once on stderr. glibc's own threads and
// posix_spawn's children are made by its internal clone, never this one.
namespace {
std::atomic<bool> g_said_shared_thread{false};

void SayThreadStepsAside(int child) {
  if (g_said_shared_thread.exchange(true)) return;
  dlprof::core::ErrnoSaver keep;
  dlprof::core::RawLog(
      "clone(CLONE_VM) child %d shares thread %d's tracer state: that thread's calls "
      "go untraced from here",
      child, static_cast<int>(syscall(SYS_gettid)));
}

// A clone() child without CLONE_VM is a fork that ran no pthread_atfork
// handler: it steps aside (Runtime::OnUnpreparedForkChild) before the
// program's function runs. (Its memory is a copy of ours: the start's
// record on this stack is there in it.)
struct UnpreparedStart {
  int (*fn)(void*);
  void* arg;
};
int StartUnpreparedChild(void* p) {
  const UnpreparedStart start = *static_cast<UnpreparedStart*>(p);
  dlprof::core::Runtime::Get().OnUnpreparedForkChild();
  return start.fn(start.arg);
}
}  // namespace

DLPROF_REAL(clone)
extern "C" int clone(int (*fn)(void*), void* stack, int flags, void* arg, ...) {
  // glibc reads these only where the flags ask for them; passed on as given.
  va_list ap;
  va_start(ap, arg);
  pid_t* parent_tid = va_arg(ap, pid_t*);
  void* tls = va_arg(ap, void*);
  pid_t* child_tid = va_arg(ap, pid_t*);
  va_end(ap);
  auto real = [&] { return real_clone(fn, stack, flags, arg, parent_tid, tls, child_tid); };
  if ((flags & CLONE_VM) == 0 && fn != nullptr && !BeforeStart()) {
    UnpreparedStart start{fn, arg};
    return real_clone(StartUnpreparedChild, stack, flags, &start, parent_tid, tls, child_tid);
  }
  const bool shares_thread_state = (flags & CLONE_VM) != 0 && (flags & CLONE_SETTLS) == 0;
  if (!shares_thread_state || BeforeStart()) return real();
  dlprof::core::ThreadContext& t = dlprof::core::CurrentThread();
  // Set before the child runs: it reads the same word from its first call.
  const bool was_internal = t.internal;
  t.internal = true;
  const int r = real();
  if ((flags & CLONE_VFORK) != 0 || r == -1) {
    t.internal = was_internal;  // the child has exec'd or exited, or was never
  } else if (!was_internal) {
    SayThreadStepsAside(r);
  }
  return r;
}

// --- signals -----------------------------------------------------------------
// The runtime catches every signal whose default action ends the process,
// only where the program left it at the default, to finish the trace before
// the default action (lib/core/fatal_signals.h). The program must still see
// SIG_DFL there, and any handler (or SIG_IGN) it installs replaces ours.
// Whether the handler there is ours is asked of the kernel each time: a
// program may have replaced it by a path we do not see (sigset(), the raw
// system call, a vfork child's handler reset).

namespace {
void ReportDefault(struct sigaction* old) {
  if (old == nullptr) return;
  old->sa_handler = SIG_DFL;
  old->sa_flags = 0;
  sigemptyset(&old->sa_mask);
}
// SIG_DFL, whichever member of the union holds it.
bool IsDefault(const struct sigaction* act) { return act->sa_handler == SIG_DFL; }
bool Untouched(int sig) {
  return BeforeStart() || dlprof::core::CurrentThread().internal ||
         !dlprof::core::IsFatalByDefault(sig);
}
}  // namespace

DLPROF_REAL(sigaction)
extern "C" int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  if (Untouched(sig)) return real_sigaction(sig, act, old);
  const bool ours = dlprof::core::OwnsFatalSignal(sig);
  if (act == nullptr) {
    if (!ours) return real_sigaction(sig, act, old);
    ReportDefault(old);
    return 0;
  }
  if (IsDefault(act)) {
    // The default we already stand in for changes nothing; the default
    // given back after a handler of the program's is ours to stand in for
    // again (Python's faulthandler puts SIG_DFL back and raises the signal).
    if (ours) {
      ReportDefault(old);
      return 0;
    }
    if (dlprof::core::StandInForDefault(sig, old)) return 0;
    return real_sigaction(sig, act, old);
  }
  int r = real_sigaction(sig, act, old);
  if (r == 0 && ours) ReportDefault(old);
  return r;
}

DLPROF_REAL(signal)
extern "C" sighandler_t signal(int sig, sighandler_t handler) {
  if (Untouched(sig)) return real_signal(sig, handler);
  const bool ours = dlprof::core::OwnsFatalSignal(sig);
  if (handler == SIG_DFL) {
    if (ours) return SIG_DFL;
    struct sigaction old {};
    if (dlprof::core::StandInForDefault(sig, &old)) return old.sa_handler;
    return real_signal(sig, handler);
  }
  sighandler_t r = real_signal(sig, handler);
  if (r == SIG_ERR) return r;
  return ours ? SIG_DFL : r;
}
