/* What a page fault costs, for bench/map_reads.py (issue 49): the same
 * touches with and without the tracer.
 *
 *   fault_cost disk|cache FILE TOUCHES
 *
 * Maps FILE (read-only, shared, MADV_RANDOM: one page a fault) and touches
 * TOUCHES pages spread over it, one byte each, timing each touch with
 * CLOCK_MONOTONIC_RAW. disk: the file's pages evicted first
 * (POSIX_FADV_DONTNEED), so each touch is a major fault served from the
 * disk; cache: the file read into the page cache first, so each touch is a
 * minor fault served from it. Prints one JSON line: the mean and median ns
 * per touch and the major faults taken (getrusage). Knows nothing of
 * dlprof. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int by_value(const void* a, const void* b) {
  const uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: fault_cost disk|cache FILE TOUCHES\n");
    return 2;
  }
  const int disk = strcmp(argv[1], "disk") == 0;
  const long touches = atol(argv[3]);
  int fd = open(argv[2], O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    perror(argv[2]);
    return 2;
  }
  const long page = sysconf(_SC_PAGESIZE), pages = st.st_size / page;
  if (disk) {
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  } else {
    char buf[1 << 16];
    while (read(fd, buf, sizeof(buf)) > 0) {
    }
  }
  volatile unsigned char* m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    perror("mmap");
    return 2;
  }
  madvise((void*)m, (size_t)st.st_size, MADV_RANDOM);
  uint64_t* ns = calloc((size_t)touches, sizeof(uint64_t));
  struct rusage before, after;
  getrusage(RUSAGE_SELF, &before);
  unsigned sum = 0;
  for (long i = 0; i < touches; ++i) {
    const long p = (i * 7919) % pages;  /* spread, each page once while touches < pages */
    const uint64_t t0 = now_ns();
    sum += m[p * page];
    ns[i] = now_ns() - t0;
  }
  getrusage(RUSAGE_SELF, &after);
  uint64_t total = 0;
  for (long i = 0; i < touches; ++i) total += ns[i];
  qsort(ns, (size_t)touches, sizeof(uint64_t), by_value);
  printf("{\"mode\":\"%s\",\"touches\":%ld,\"mean_ns\":%llu,\"median_ns\":%llu,\"major\":%ld,"
         "\"sum\":%u}\n",
         argv[1], touches, (unsigned long long)(total / (uint64_t)touches),
         (unsigned long long)ns[touches / 2], after.ru_majflt - before.ru_majflt, sum);
  return 0;
}
