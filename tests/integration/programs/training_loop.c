/* A training loop as the PyTorch bootstrap records one, in C, with its own
 * measure of what it did (tests/integration/test_loop.py).
 *
 *   training_loop DIR TRUTH BATCHES ACCUMULATE WORKER_MS STEP_MS
 *
 * Start-up: reads DIR/index.bin in 4 reads of 4 KiB (the data set's index)
 * and sleeps 30 ms (imports, CUDA initialisation). Then it forks two loader
 * workers; each fetches every other batch (a region "fetch_batch" around a
 * pread of 64 KiB of DIR/wN.bin and WORKER_MS of work) and hands it over
 * through a pipe. The loop waits for each batch in a region "load_batch"
 * and, after every ACCUMULATE batches, runs an "optimizer_step" region of
 * STEP_MS. It writes what it measured itself on CLOCK_MONOTONIC_RAW (the
 * tracer's clock) to TRUTH as JSON: the batches and optimizer steps, the
 * start-up's reads, and the loop's length and the time spent waiting for
 * batches, each as two brackets of the regions the tracer recorded: its
 * clock read just inside each region call ("inner": after a begin returned,
 * before an end is called) and just outside ("outer": before a begin, after
 * an end returned). Whatever the machine's load makes of the time between
 * a read and a call, a region's recorded time lies between the two. Prints
 * "ok"; runs the same without dlprof. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

#include "dlprof/dlprof.h"

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static int open_in(const char* dir, const char* name) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  return open(path, O_RDONLY);
}

/* Worker `w` fetches batches w, w + 2, ... of `batches`. */
static void worker(const char* dir, int w, int batches, int work_ms, int out) {
  int fd = open_in(dir, w == 0 ? "w0.bin" : "w1.bin");
  static char buf[65536];
  if (fd < 0) _exit(3);
  for (int b = w; b < batches; b += 2) {
    dlprof_region_begin("fetch_batch");
    if (pread(fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf)) _exit(3);
    sleep_ms(work_ms);
    dlprof_region_end();
    if (write(out, "b", 1) != 1) _exit(3);
  }
  close(fd);
  _exit(0);
}

int main(int argc, char** argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: training_loop DIR TRUTH BATCHES ACCUMULATE WORKER_MS STEP_MS\n");
    return 2;
  }
  const char* dir = argv[1];
  const int batches = atoi(argv[3]), accumulate = atoi(argv[4]);
  const int work_ms = atoi(argv[5]), step_ms = atoi(argv[6]);
  /* Start-up. The first annotation looks the API up (dlprof.h): not in
   * the loop's first batch wait. */
  dlprof_mark("start");
  int index = open_in(dir, "index.bin");
  char small[4096];
  if (index < 0) return 2;
  for (int i = 0; i < 4; ++i) {
    if (read(index, small, sizeof(small)) != (ssize_t)sizeof(small)) return 2;
  }
  close(index);
  sleep_ms(30);
  int pipes[2][2];
  pid_t workers[2];
  for (int w = 0; w < 2; ++w) {
    if (pipe(pipes[w]) != 0) return 2;
    workers[w] = fork();
    if (workers[w] < 0) return 2;
    if (workers[w] == 0) {
      close(pipes[w][0]);
      worker(dir, w, batches, work_ms, pipes[w][1]);
    }
    close(pipes[w][1]);
  }
  /* The loop: from the first load_batch's start to the last region's end. */
  uint64_t outer_start = 0, inner_start = 0, inner_end = 0, outer_end = 0;
  uint64_t wait_inner = 0, wait_outer = 0;
  int steps = 0;
  for (int b = 0; b < batches; ++b) {
    const uint64_t asked = monotonic_raw_ns();
    char c;
    dlprof_region_begin("load_batch");
    const uint64_t begun = monotonic_raw_ns();
    if (read(pipes[b % 2][0], &c, 1) != 1) return 3;
    const uint64_t ending = monotonic_raw_ns();
    dlprof_region_end();
    const uint64_t got = monotonic_raw_ns();
    if (b == 0) {
      outer_start = asked;
      inner_start = begun;
    }
    wait_inner += ending - begun;
    wait_outer += got - asked;
    inner_end = ending;
    outer_end = got;
    if ((b + 1) % accumulate == 0) {
      dlprof_region_begin("optimizer_step");
      sleep_ms(step_ms);
      inner_end = monotonic_raw_ns();
      dlprof_region_end();
      outer_end = monotonic_raw_ns();
      ++steps;
    }
  }
  for (int w = 0; w < 2; ++w) {
    int status = 0;
    if (waitpid(workers[w], &status, 0) != workers[w] || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
      return 3;
    }
  }
  FILE* truth = fopen(argv[2], "w");
  if (truth == NULL) return 2;
  fprintf(truth,
          "{\"loop_inner_ns\": %llu, \"loop_outer_ns\": %llu, \"wait_inner_ns\": %llu, "
          "\"wait_outer_ns\": %llu, \"batches\": %d, \"optimizer_steps\": %d, "
          "\"startup_reads\": 4, \"startup_read_bytes\": %d}\n",
          (unsigned long long)(inner_end - inner_start),
          (unsigned long long)(outer_end - outer_start), (unsigned long long)wait_inner,
          (unsigned long long)wait_outer, batches, steps, 4 * 4096);
  fclose(truth);
  printf("ok\n");
  return 0;
}
