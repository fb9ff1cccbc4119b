/* stacks_overhead: the cost of DLPROF_STACKS=1 per traced call.
 *
 *   stacks_overhead FILE ITERS DEPTH
 *
 * Reads 4 KiB blocks of FILE (page-cached, at least 1 MiB) with pread,
 * ITERS times, each call made DEPTH nested function calls deep (so that the
 * unwinder has a realistic stack to walk), then the same number of raw
 * syscall(SYS_pread64) calls, which no LD_PRELOAD wrapper sees. Prints one
 * JSON line: ns per pread, ns per raw system call, and their difference (what
 * the tracer adds per call). Run by bench/stacks_overhead.sh without dlprof,
 * with dlprof and with dlprof + DLPROF_STACKS=1.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static char buf[4096];
static const off_t kSpan = 1 << 20;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static void read_loop(int fd, long iters, int raw) {
  for (long i = 0; i < iters; ++i) {
    off_t off = (off_t)((i * 4096) % kSpan);
    ssize_t n = raw ? syscall(SYS_pread64, fd, buf, sizeof(buf), off)
                    : pread(fd, buf, sizeof(buf), off);
    if (n != (ssize_t)sizeof(buf)) {
      fprintf(stderr, "short read\n");
      exit(2);
    }
  }
}

/* Adds `depth` frames between main and the loop. */
__attribute__((noinline)) static uint64_t nest(int depth, int fd, long iters, int raw) {
  if (depth > 0) {
    uint64_t t = nest(depth - 1, fd, iters, raw);
    __asm__ volatile("" ::: "memory"); /* no tail call: keep the frame */
    return t;
  }
  uint64_t start = now_ns();
  read_loop(fd, iters, raw);
  return now_ns() - start;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: stacks_overhead FILE ITERS DEPTH\n");
    return 2;
  }
  int fd = open(argv[1], O_RDONLY);
  if (fd < 0) {
    perror(argv[1]);
    return 2;
  }
  long iters = atol(argv[2]);
  int depth = atoi(argv[3]);
  nest(depth, fd, iters / 10 + 1, 0); /* warm-up: page cache, unwinder caches */
  nest(depth, fd, iters / 10 + 1, 1);
  uint64_t traced = nest(depth, fd, iters, 0);
  uint64_t raw = nest(depth, fd, iters, 1);
  printf("{\"iters\":%ld,\"depth\":%d,\"ns_per_pread\":%.1f,\"ns_per_raw_syscall\":%.1f,"
         "\"added_ns\":%.1f}\n",
         iters, depth, (double)traced / iters, (double)raw / iters,
         ((double)traced - (double)raw) / iters);
  close(fd);
  return 0;
}
