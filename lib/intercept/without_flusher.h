// Calls the kernel runs only for a process of one thread, or that glibc runs
// on every thread: the set-id calls (credentials.cc), unshare and setns into
// a user, mount or time namespace (namespaces.cc, and by number in
// syscall.cc). The tracer's flusher thread is one the program does not know
// of: it leaves before such a call and a new one starts after it, from the
// calling thread, so that the call sees the program's threads alone.
#ifndef DLPROF_LIB_INTERCEPT_WITHOUT_FLUSHER_H_
#define DLPROF_LIB_INTERCEPT_WITHOUT_FLUSHER_H_

#include <cerrno>

#include "lib/intercept/describe.h"

namespace dlprof::intercept {

// The call with the runtime's preparation around it (the flusher stopped,
// the trace's descriptor kept: Runtime::BeforeCredentialChange), in the
// process that started the runtime only (a vfork child shares our memory;
// before the runtime starts there is nothing to prepare). The return value
// and errno as the call left them: the program's own errno on success, as
// untraced (the preparation keeps errno as it found it). changes_mounts: the
// call makes or enters a mount namespace (the trace's descriptors are kept
// for good: Runtime::AfterCredentialChange).
template <typename Call>
auto WithoutFlusher(Call call, bool changes_mounts = false) -> decltype(call()) {
  const int state = core::g_state.load(std::memory_order_relaxed);
  if (state == static_cast<int>(core::RuntimeState::kUninitialized) ||
      core::CurrentThread().internal || !Rt().InOwnProcess()) {
    return call();
  }
  Rt().BeforeCredentialChange();
  const auto r = call();
  const int err = errno;
  Rt().AfterCredentialChange(changes_mounts);
  errno = err;
  return r;
}

// Whether unshare(flags) needs the process to have one thread: a new user
// namespace (which implies CLONE_THREAD), or a thread's own signal handlers,
// memory or thread group (kernel/fork.c, check_unshare_flags; it fails with
// EINVAL). A new mount namespace does not: it unshares the calling thread's
// filesystem information alone.
inline bool UnshareNeedsOneThread(long flags) {
  constexpr long kOneThread = 0x10000000 /* CLONE_NEWUSER */ | 0x10000 /* CLONE_THREAD */ |
                              0x800 /* CLONE_SIGHAND */ | 0x100 /* CLONE_VM */;
  return (flags & kOneThread) != 0;
}

// Whether setns(fd, nstype) may need it: entering a user namespace (the
// memory's users must be one), a mount namespace (the filesystem
// information's), a time namespace (EUSERS otherwise); nstype 0 takes
// whatever fd names, a pidfd's mask may hold any of them.
inline bool SetnsNeedsOneThread(long nstype) {
  constexpr long kOneThread =
      0x10000000 /* CLONE_NEWUSER */ | 0x20000 /* CLONE_NEWNS */ | 0x80 /* CLONE_NEWTIME */;
  return nstype == 0 || (nstype & kOneThread) != 0;
}

// Whether unshare(flags) or setns(fd, nstype) may give the process another
// mount namespace, where a later mount may hide the trace's path (nstype 0
// takes whatever fd names; a pidfd's mask says). Such a call is prepared
// for too, even where the kernel does not need one thread.
inline bool UnshareChangesMounts(long flags) { return (flags & 0x20000 /* CLONE_NEWNS */) != 0; }
inline bool SetnsChangesMounts(long nstype) {
  return nstype == 0 || (nstype & 0x20000 /* CLONE_NEWNS */) != 0;
}

}  // namespace dlprof::intercept

#endif  // DLPROF_LIB_INTERCEPT_WITHOUT_FLUSHER_H_
