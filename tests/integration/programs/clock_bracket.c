/* Each pread bracketed by the program's own clock_gettime(CLOCK_MONOTONIC_RAW)
 * reads, for seconds: the trace's times must lie inside the brackets
 * whichever clock the tracer read (test_clock.py).
 *
 * usage: clock_bracket FILE SECONDS [kill]
 *
 * Rounds of 50 preads of 64 bytes, 5 ms apart (so the flusher writes many
 * blocks, each with its own calibration), until SECONDS have passed; then
 * prints "FD <fd>" and one "<before> <after>" line per pread, in order.
 * clock_gettime is not interposed: the brackets leave no events. With
 * `kill` it then kills itself with SIGKILL: the events not written yet are
 * recovered from the rings sidecar, ticks and all. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <time.h>

#include "common.h"

static unsigned long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

int main(int argc, char** argv) {
  CHECK(argc == 3 || argc == 4);
  const unsigned long long span = (unsigned long long)(atof(argv[2]) * 1e9);
  int fd = open(argv[1], O_RDONLY);
  CHECK(fd >= 0);
  enum { kMax = 200000, kRound = 50 };
  unsigned long long* before = malloc(kMax * sizeof(*before));
  unsigned long long* after = malloc(kMax * sizeof(*after));
  CHECK(before != NULL && after != NULL);
  char buf[64];
  long n = 0;
  const unsigned long long start = now_ns();
  while (now_ns() - start < span && n + kRound <= kMax) {
    for (int i = 0; i < kRound; ++i, ++n) {
      before[n] = now_ns();
      ssize_t r = pread(fd, buf, sizeof(buf), (n % 64) * 64);
      after[n] = now_ns();
      CHECK(r == 64);
    }
    struct timespec pause = {0, 5000000};
    nanosleep(&pause, NULL);
  }
  printf("FD %d\n", fd);
  for (long i = 0; i < n; ++i) printf("%llu %llu\n", before[i], after[i]);
  if (argc == 4 && strcmp(argv[3], "kill") == 0) {
    fflush(stdout);
    syscall(SYS_kill, raw_getpid(), SIGKILL);
  }
  close(fd);
  return 0;
}
