/* Shared by the integration test programs: small helpers that never go
 * through the interposed libc entry points, so they leave no trace events
 * of their own and can observe the kernel's view (file positions) directly. */
#ifndef DLPROF_TESTS_INTEGRATION_PROGRAMS_COMMON_H_
#define DLPROF_TESTS_INTEGRATION_PROGRAMS_COMMON_H_

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s (errno %d: %s)\n", __FILE__,   \
              __LINE__, #cond, errno, strerror(errno));                        \
      exit(99);                                                                \
    }                                                                          \
  } while (0)

/* The kernel's file position of `fd`, read with the raw system call. */
static inline long long raw_tell(int fd) {
  return (long long)syscall(SYS_lseek, fd, 0L, SEEK_CUR);
}

static inline long long raw_file_size(int fd) {
  long long cur = raw_tell(fd);
  long long end = (long long)syscall(SYS_lseek, fd, 0L, SEEK_END);
  syscall(SYS_lseek, fd, cur, SEEK_SET);
  return end;
}

/* Now on CLOCK_MONOTONIC_RAW, the tracer's clock, in ns (clock_gettime is
 * not traced). */
static inline uint64_t monotonic_raw_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline int raw_gettid(void) { return (int)syscall(SYS_gettid); }
static inline int raw_getpid(void) { return (int)syscall(SYS_getpid); }

#endif /* DLPROF_TESTS_INTEGRATION_PROGRAMS_COMMON_H_ */
