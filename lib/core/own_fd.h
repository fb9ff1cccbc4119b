// The tracer's own descriptors, each open for a moment only: a write of the
// trace, a look at /proc/self/stat. Between two of them the tracer holds
// none, so that a program never finds one of ours among its descriptors,
// counts one fewer below its RLIMIT_NOFILE, or closes or dup2()s onto ours
// (issue 38).
#ifndef DLPROF_LIB_CORE_OWN_FD_H_
#define DLPROF_LIB_CORE_OWN_FD_H_

#include <signal.h>

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

// pthread_atfork handlers: fork() waits for an OwnFdScope in progress.
void OwnFdBeforeFork();
void OwnFdAfterFork();  // in the parent and in the child

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_OWN_FD_H_
