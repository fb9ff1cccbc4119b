/* Regions open across fork() and at exit() (tests/annotations), timed by
 * the program's own clock (CLOCK_MONOTONIC_RAW, the trace's): each region
 * bracketed outside (before its begin, after its end) and inside (after its
 * begin, before its end), so that inside <= recorded <= outside whatever the
 * scheduler does between a clock's read and the call.
 *
 *   region_fork_exit fork FILE
 *     region "work" open; fork; the child, inside it, opens "child_own"
 *     around 4 x pread 4096, then ends "child_own" and the inherited "work"
 *     and _exit()s; the parent waits, reads 2 x 4096, ends "work".
 *     Prints "work_out=N work_in=N child_out=N child_in=N" (the child's
 *     through a pipe).
 *   region_fork_exit exit FILE
 *     region "train_open": 8 x pread 4096, then exit(0) inside it.
 *     Prints "open_in=N" (just after begin to just before exit). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dlprof/dlprof.h"

static char buf[4096];

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC_RAW, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void must_pread(int fd, off_t off) {
  if (pread(fd, buf, sizeof(buf), off) != (ssize_t)sizeof(buf)) {
    perror("pread");
    exit(2);
  }
}

/* Long enough that a region counted twice, or too long, shows. */
static void sleep_ms(int ms) {
  struct timespec t = {0, ms * 1000000L};
  nanosleep(&t, NULL);
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  int fd = open(argv[2], O_RDONLY);
  if (fd < 0) return 2;
  if (strcmp(argv[1], "fork") == 0) {
    int pipefd[2];
    if (pipe(pipefd) != 0) return 2;
    sleep_ms(5);  /* "work" must not reach back to the program's start */
    long long t0 = now_ns();
    dlprof_region_begin("work");
    long long t0_in = now_ns();
    sleep_ms(20);
    pid_t p = fork();
    if (p == 0) {
      long long c0 = now_ns();
      dlprof_region_begin("child_own");
      long long c0_in = now_ns();
      for (int i = 0; i < 4; ++i) must_pread(fd, i * 4096);
      sleep_ms(10);
      long long c1_in = now_ns();
      dlprof_region_end();
      long long c1 = now_ns();
      dlprof_region_end(); /* the parent's "work", inherited */
      char line[64];
      int n = snprintf(line, sizeof(line), "child_out=%lld child_in=%lld", c1 - c0,
                       c1_in - c0_in);
      if (write(pipefd[1], line, (size_t)n) != n) _exit(2);
      _exit(0);
    }
    close(pipefd[1]);
    waitpid(p, NULL, 0);
    char child[64] = {0};
    if (read(pipefd[0], child, sizeof(child) - 1) <= 0) return 2;
    for (int i = 0; i < 2; ++i) must_pread(fd, i * 4096);
    long long t1_in = now_ns();
    dlprof_region_end();
    long long t1 = now_ns();
    printf("work_out=%lld work_in=%lld %s\n", t1 - t0, t1_in - t0_in, child);
    return 0;
  }
  dlprof_region_begin("train_open");
  long long t0_in = now_ns();
  for (int i = 0; i < 8; ++i) must_pread(fd, i * 4096);
  sleep_ms(10);
  printf("open_in=%lld\n", now_ns() - t0_in);
  fflush(stdout);
  exit(0);
}
