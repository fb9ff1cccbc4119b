/* Makes a new user namespace and enters its own mount namespace, with reads
 * of a file before and after: what the kernel allows only to a process of
 * one thread (test_namespaces.py; the tracer's flusher made every traced
 * process one of two, and these calls failed with EINVAL under it).
 *
 *   namespaces unshare FILE   unshare(CLONE_NEWUSER) in the process
 *   namespaces fork FILE      the same in a forked child, then in the parent
 *   namespaces syscall FILE   syscall(SYS_unshare, CLONE_NEWUSER)
 *   namespaces setns FILE     setns(/proc/self/ns/mnt, CLONE_NEWNS), then
 *                             with nstype 0, then by number, then through
 *                             a pidfd of its own
 *
 * Each phase reads FILE with pread in its own size and count, so that the
 * trace can be checked phase by phase: 3 of 11 bytes before, 5 of 13 after;
 * the forked child 7 of 17 before, 4 of 19 after. Prints each call's return
 * value and errno after it ("UNSHARE 0 4242"): errno is set to 4242 before
 * each call, which leaves it so when it succeeds (as untraced: the
 * tracer's preparation around the call once left 3 there, ESRCH); exit
 * status 0 whatever they return. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>

#include "rel.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

static void reads(const char* path, int count, int size) {
  char buf[64];
  int fd = open(path, O_RDONLY);
  CHECK(fd >= 0);
  for (int i = 0; i < count; i++) CHECK(pread(fd, buf, (size_t)size, i) == size);
  CHECK(close(fd) == 0);
}

/* Prints "WHAT r errno" for the call CALL, errno set to a sentinel before it. */
#define REPORT(what, call)                   \
  do {                                       \
    errno = 4242;                            \
    int r_ = (int)(call);                    \
    int err_ = errno;                        \
    printf("%s %d %d\n", what, r_, err_);    \
    fflush(stdout);                          \
  } while (0)

static void enter_own_mount_ns(void) {
  int fd = open("/proc/self/ns/mnt", O_RDONLY);
  CHECK(fd >= 0);
  REPORT("SETNS", setns(fd, CLONE_NEWNS));
  REPORT("SETNS0", setns(fd, 0));
  REPORT("SYS_SETNS", (int)syscall(SYS_setns, fd, CLONE_NEWNS));
  CHECK(close(fd) == 0);
  int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
  if (pidfd >= 0) {  /* (a kernel without pidfd_open, or setns on one, says so alike) */
    REPORT("PIDFD_SETNS", setns(pidfd, CLONE_NEWNS | CLONE_NEWUTS));
    CHECK(close(pidfd) == 0);
  }
}

int main(int argc, char** argv) {
  CHECK(argc == 3);
  const char* mode = argv[1];
  const char* path = argv[2];
  if (strcmp(mode, "fork") == 0) {
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
      reads(path, 7, 17);
      REPORT("CHILD_UNSHARE", unshare(CLONE_NEWUSER));
      reads(path, 4, 19);
      _exit(0);
    }
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child);
    printf("CHILD STATUS %d\n", status);
  }
  reads(path, 3, 11);
  if (strcmp(mode, "unshare") == 0 || strcmp(mode, "fork") == 0) {
    REPORT("UNSHARE", unshare(CLONE_NEWUSER));
  } else if (strcmp(mode, "syscall") == 0) {
    REPORT("SYS_UNSHARE", (int)syscall(SYS_unshare, CLONE_NEWUSER));
  } else if (strcmp(mode, "setns") == 0) {
    enter_own_mount_ns();
  } else {
    CHECK(!"mode");
  }
  reads(path, 5, 13);
  return 0;
}
