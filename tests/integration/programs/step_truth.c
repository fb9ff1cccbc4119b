/* Training loops that keep their own account of every step, for the
 * verdict's loop against the program's (tests/integration/test_loop_windows.py).
 *
 *   step_truth MODE FILE TRUTH_DIR PROCS SECONDS STEP_MS [SLOW_FROM SLOW_TO SLOW_MS]
 *
 * PROCS processes (the first and PROCS - 1 forked, none with a rank) each
 * loop for SECONDS: a step reads 8 x 256 KiB of FILE with pread (at
 * successive offsets, wrapping at its size), then runs an "optimizer_step"
 * region of STEP_MS (a sleep). MODE "steps": nothing more (a loop without a
 * DataLoader: nanoGPT's get_batch, the batch wait the reading between two
 * steps). MODE "batch": the reads are inside a "load_batch" region, and
 * from second SLOW_FROM to SLOW_TO of the loop the region also sleeps
 * SLOW_MS (the data slowing down: DLPROF_KEEP_WHEN keeps it).
 *
 * Each process writes TRUTH_DIR/PID.txt once its loop is over: a line
 * "STEP A B C" a step, on CLOCK_MONOTONIC_RAW (the tracer's clock): A just
 * before its first read (before load_batch begins), B just after its last
 * read or sleep (after load_batch ends), C after its optimizer step ended.
 * [A, B] brackets the step's batch wait from outside. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

#include "dlprof/dlprof.h"

#define READS 8
#define READ_SIZE (256 * 1024)

static void sleep_ns(uint64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

struct step {
  uint64_t a, b, c;
};

static void loop(int batch, const char* path, const char* truth_dir, double seconds, int step_ms,
                 double slow_from, double slow_to, int slow_ms) {
  int fd = open(path, O_RDONLY);
  CHECK(fd >= 0);
  struct stat st;
  CHECK(fstat(fd, &st) == 0 && st.st_size >= READ_SIZE);
  const uint64_t blocks = (uint64_t)st.st_size / READ_SIZE;
  static char buf[READ_SIZE];
  size_t cap = 1024, n = 0;
  struct step* steps = malloc(cap * sizeof(*steps));
  CHECK(steps != NULL);
  const uint64_t start = monotonic_raw_ns();
  const uint64_t end = start + (uint64_t)(seconds * 1e9);
  uint64_t reads = 0;
  while (monotonic_raw_ns() < end) {
    if (n == cap) {
      cap *= 2;
      steps = realloc(steps, cap * sizeof(*steps));
      CHECK(steps != NULL);
    }
    struct step* s = &steps[n++];
    s->a = monotonic_raw_ns();
    const double t = (double)(s->a - start) / 1e9;
    if (batch) dlprof_region_begin("load_batch");
    for (int i = 0; i < READS; ++i, ++reads) {
      CHECK(pread(fd, buf, READ_SIZE, (off_t)((reads % blocks) * READ_SIZE)) == READ_SIZE);
    }
    if (batch && slow_ms > 0 && t >= slow_from && t < slow_to) {
      sleep_ns((uint64_t)slow_ms * 1000000u);
    }
    if (batch) dlprof_region_end();
    s->b = monotonic_raw_ns();
    dlprof_region_begin("optimizer_step");
    sleep_ns((uint64_t)step_ms * 1000000u);
    dlprof_region_end();
    s->c = monotonic_raw_ns();
  }
  close(fd);
  char name[4096];
  snprintf(name, sizeof(name), "%s/%d.txt", truth_dir, raw_getpid());
  FILE* out = fopen(name, "w");
  CHECK(out != NULL);
  for (size_t i = 0; i < n; ++i) {
    fprintf(out, "STEP %llu %llu %llu\n", (unsigned long long)steps[i].a,
            (unsigned long long)steps[i].b, (unsigned long long)steps[i].c);
  }
  CHECK(fclose(out) == 0);
  free(steps);
}

int main(int argc, char** argv) {
  if (argc != 7 && argc != 10) {
    fprintf(stderr,
            "usage: step_truth steps|batch FILE TRUTH_DIR PROCS SECONDS STEP_MS "
            "[SLOW_FROM SLOW_TO SLOW_MS]\n");
    return 2;
  }
  const int batch = strcmp(argv[1], "batch") == 0;
  const int procs = atoi(argv[4]);
  const double seconds = atof(argv[5]);
  const int step_ms = atoi(argv[6]);
  const double slow_from = argc == 10 ? atof(argv[7]) : 0;
  const double slow_to = argc == 10 ? atof(argv[8]) : 0;
  const int slow_ms = argc == 10 ? atoi(argv[9]) : 0;
  for (int p = 1; p < procs; ++p) {
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
      loop(batch, argv[2], argv[3], seconds, step_ms, slow_from, slow_to, slow_ms);
      _exit(0);
    }
  }
  loop(batch, argv[2], argv[3], seconds, step_ms, slow_from, slow_to, slow_ms);
  int status, failed = 0;
  while (wait(&status) > 0) failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  return failed;
}
