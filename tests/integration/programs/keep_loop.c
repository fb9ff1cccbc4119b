/* A long read loop for bounded traces (tests/integration/test_keep.py,
 * bench/keep_bench.py).
 *
 *   keep_loop FILE SECONDS READS_PER_S [SLOW_FROM SLOW_TO SLOW_MS [PROCS]]
 *
 * For SECONDS seconds, batches of 20 preads of 4 KiB each: read i at offset
 * (i * 4096) mod the file's size, so that a reader can tell every read apart
 * by its place in the sequence (aux of nothing: the offset, the count).
 * Each batch is waited for in a region "load_batch" (the reads, and from
 * second SLOW_FROM to SLOW_TO a sleep of SLOW_MS: the data slowing down),
 * then an "optimizer_step" region of compute paces the loop to about
 * READS_PER_S reads a second. With PROCS > 1, the loop runs in that many
 * processes (forked). Prints "DONE PID READS START" per process (START: the
 * loop's start on CLOCK_MONOTONIC_RAW, the tracer's clock, from which
 * SLOW_FROM and SLOW_TO count), then each waits
 * for a line on stdin (or EOF) before it exits, so that a test may kill it
 * with its events in the last seconds. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

#include "dlprof/dlprof.h"

static void sleep_ns(uint64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static uint64_t loop_start;

static long loop(const char* path, double seconds, double rate, double slow_from, double slow_to,
                 int slow_ms) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < 4096) return -1;
  const uint64_t blocks = (uint64_t)st.st_size / 4096;
  static char buf[4096];
  const int per_batch = 20;
  const uint64_t batch_ns = (uint64_t)(1e9 * per_batch / rate);
  const uint64_t start = monotonic_raw_ns();
  loop_start = start;
  const uint64_t end = start + (uint64_t)(seconds * 1e9);
  long reads = 0;
  uint64_t next = start;
  while (monotonic_raw_ns() < end) {
    const double t = (double)(monotonic_raw_ns() - start) / 1e9;
    dlprof_region_begin("load_batch");
    for (int i = 0; i < per_batch; ++i) {
      if (pread(fd, buf, sizeof(buf), (off_t)((reads % blocks) * 4096)) != (ssize_t)sizeof(buf)) {
        return -1;
      }
      ++reads;
    }
    if (slow_ms > 0 && t >= slow_from && t < slow_to) sleep_ns((uint64_t)slow_ms * 1000000u);
    dlprof_region_end();
    dlprof_region_begin("optimizer_step");
    next += batch_ns;
    const uint64_t now = monotonic_raw_ns();
    if (next > now) sleep_ns(next - now);
    else next = now;  /* behind (the slow phase): no catching up */
    dlprof_region_end();
  }
  close(fd);
  return reads;
}

int main(int argc, char** argv) {
  if (argc != 4 && argc != 7 && argc != 8) {
    fprintf(stderr, "usage: keep_loop FILE SECONDS READS_PER_S [SLOW_FROM SLOW_TO SLOW_MS [PROCS]]\n");
    return 2;
  }
  const double seconds = atof(argv[2]), rate = atof(argv[3]);
  const double slow_from = argc >= 7 ? atof(argv[4]) : 0, slow_to = argc >= 7 ? atof(argv[5]) : 0;
  const int slow_ms = argc >= 7 ? atoi(argv[6]) : 0;
  const int procs = argc == 8 ? atoi(argv[7]) : 1;
  dlprof_mark("start");  /* the API is looked up here, not in the first batch */
  for (int p = 1; p < procs; ++p) {
    if (fork() == 0) break;
  }
  long reads = loop(argv[1], seconds, rate, slow_from, slow_to, slow_ms);
  if (reads < 0) {
    perror("keep_loop");
    return 3;
  }
  printf("DONE %d %ld %llu\n", (int)getpid(), reads, (unsigned long long)loop_start);
  fflush(stdout);
  char line[16];
  if (fgets(line, sizeof(line), stdin) == NULL) {
  }
  while (wait(NULL) > 0) {
  }
  return 0;
}
