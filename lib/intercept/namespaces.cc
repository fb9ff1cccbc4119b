// unshare and setns: a process that makes a new user namespace, or enters a
// user, mount or time namespace, does so exactly as untraced (the kernel
// refuses it to a process of more than one thread, and the flusher made
// every traced process one: unshare(CLONE_NEWUSER) and setns into a mount
// namespace failed with EINVAL, `unshare -U id` printed "unshare failed:
// Invalid argument"). The flusher steps aside for such a call alone
// (without_flusher.h); the trace's descriptor is kept across it, for a
// mount namespace where the trace's path is not to be seen. The same calls
// by number: syscall.cc. Nothing is recorded for the calls themselves.
#include <sched.h>

#include "lib/intercept/without_flusher.h"
#include "lib/intercept/wrapper.h"

using namespace dlprof::intercept;

DLPROF_REAL(unshare)
extern "C" int unshare(int flags) {
  const bool mounts = UnshareChangesMounts(flags);
  if (!UnshareNeedsOneThread(flags) && !mounts) return real_unshare(flags);
  return WithoutFlusher([&] { return real_unshare(flags); }, mounts);
}

DLPROF_REAL(setns)
extern "C" int setns(int fd, int nstype) {
  const bool mounts = SetnsChangesMounts(nstype);
  if (!SetnsNeedsOneThread(nstype) && !mounts) return real_setns(fd, nstype);
  return WithoutFlusher([&] { return real_setns(fd, nstype); }, mounts);
}
