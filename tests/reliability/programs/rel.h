/* Shared by the reliability test programs: checks that exit with status 99
 * and helpers that go around the interposed libc entry points (raw system
 * calls), so they leave no events of their own. */
#ifndef DLPROF_TESTS_RELIABILITY_PROGRAMS_REL_H_
#define DLPROF_TESTS_RELIABILITY_PROGRAMS_REL_H_

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s (errno %d: %s)\n", __FILE__,   \
              __LINE__, #cond, errno, strerror(errno));                        \
      fflush(stderr);                                                          \
      _exit(99);                                                               \
    }                                                                          \
  } while (0)

static inline int raw_gettid(void) { return (int)syscall(SYS_gettid); }
static inline int raw_getpid(void) { return (int)syscall(SYS_getpid); }

/* Writes a whole string to fd 1 with the raw system call: output a test can
 * wait for, with no event and no stdio buffering. */
static inline void raw_say(const char* s) {
  size_t n = strlen(s);
  while (n > 0) {
    long w = syscall(SYS_write, 1, s, n);
    if (w <= 0) return;
    s += w;
    n -= (size_t)w;
  }
}

/* Reads one line from fd 0 with the raw system call (a test's "go on"). */
static inline void raw_wait_line(void) {
  char c;
  while (syscall(SYS_read, 0, &c, 1) == 1 && c != '\n') {
  }
}

#endif /* DLPROF_TESTS_RELIABILITY_PROGRAMS_REL_H_ */
