/* An epoch loop whose workers are forked anew each epoch, as a PyTorch
 * DataLoader's are without persistent_workers (tests/integration/
 * test_keep_run.py): the run's processes come and go, and a bound on each
 * process alone does not bound the run.
 *
 *   keep_epochs FILE EPOCHS WORKERS READS GAP_US
 *
 * Each epoch forks WORKERS children; each makes READS preads of 4 KiB
 * (GAP_US microseconds apart) at offsets (i * 4096) mod the file's size and
 * exits; the parent waits for them, reading nothing itself. The children
 * count what they read in memory shared with the parent (no system call,
 * nothing traced). Prints "DONE PREADS BYTES PROCESSES START END": the
 * preads made, the bytes they returned, the processes (parent and
 * workers), and the first epoch's start and the last's end on
 * CLOCK_MONOTONIC_RAW, the tracer's clock; then "EPOCH I START END" for
 * each epoch (its first fork to its last worker's end). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

static void worker(const char* path, long reads, long gap_us, long* counts) {
  int fd = open(path, O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < 4096) _exit(2);
  const long blocks = (long)(st.st_size / 4096);
  static char buf[4096];
  long got = 0;
  for (long i = 0; i < reads; i++) {
    ssize_t n = pread(fd, buf, sizeof buf, (off_t)((i % blocks) * 4096));
    if (n > 0) got += n;
    if (gap_us > 0) usleep((useconds_t)gap_us);
  }
  close(fd);
  __atomic_fetch_add(&counts[0], reads, __ATOMIC_SEQ_CST);
  __atomic_fetch_add(&counts[1], got, __ATOMIC_SEQ_CST);
  _exit(0);
}

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: keep_epochs FILE EPOCHS WORKERS READS GAP_US\n");
    return 2;
  }
  const char* path = argv[1];
  const int epochs = atoi(argv[2]), workers = atoi(argv[3]);
  const long reads = atol(argv[4]), gap_us = atol(argv[5]);
  long* counts = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (counts == MAP_FAILED) return 1;
  long processes = 1;
  uint64_t* times = calloc(2 * (size_t)(epochs > 0 ? epochs : 1), sizeof(uint64_t));
  if (times == NULL) return 1;
  const uint64_t start = monotonic_raw_ns();
  for (int e = 0; e < epochs; e++) {
    times[2 * e] = monotonic_raw_ns();
    for (int w = 0; w < workers; w++) {
      pid_t pid = fork();
      if (pid < 0) return 1;
      if (pid == 0) worker(path, reads, gap_us, counts);
      processes++;
    }
    int status;
    while (wait(&status) > 0) {
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
    }
    times[2 * e + 1] = monotonic_raw_ns();
  }
  const uint64_t end = monotonic_raw_ns();
  printf("DONE %ld %ld %ld %llu %llu\n", counts[0], counts[1], processes,
         (unsigned long long)start, (unsigned long long)end);
  for (int e = 0; e < epochs; e++) {
    printf("EPOCH %d %llu %llu\n", e, (unsigned long long)times[2 * e],
           (unsigned long long)times[2 * e + 1]);
  }
  return 0;
}
