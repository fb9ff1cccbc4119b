/* usage: read_pieces SPEC...
 * Reads files to their end the way SPEC says, timing each read on its own
 * clock (CLOCK_MONOTONIC_RAW, around the call), for the small_reads
 * finding's checks (test_small_reads.py). SPEC is "whole:PATH", a file
 * read as Python's f.read() reads it (one read of its size + 1, then the
 * 1-byte read that finds the end: read() returns 0), or "N:PATH", a file
 * read N bytes at a time until a read returns 0. Prints, over all files:
 *   SMALL <reads that moved data asking for under 64 KiB> <their ns>
 *   LARGE <reads that moved data asking for 64 KiB or more> <their ns>
 *   EMPTY <reads that returned 0> <their ns> */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>

#include "common.h"

#define SMALL_IO (64 * 1024)

static uint64_t counts[3], times[3]; /* small, large, empty */

static ssize_t timed_read(int fd, char* buf, size_t n) {
  const uint64_t t0 = monotonic_raw_ns();
  const ssize_t r = read(fd, buf, n);
  const uint64_t t = monotonic_raw_ns() - t0;
  CHECK(r >= 0);
  const int which = r == 0 ? 2 : n < SMALL_IO ? 0 : 1;
  ++counts[which];
  times[which] += t;
  return r;
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    char* colon = strchr(argv[i], ':');
    CHECK(colon != NULL);
    *colon = '\0';
    const char* path = colon + 1;
    const int whole = strcmp(argv[i], "whole") == 0;
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    struct stat st;
    CHECK(fstat(fd, &st) == 0);
    const size_t piece = whole ? (size_t)st.st_size + 1 : (size_t)atol(argv[i]);
    CHECK(piece > 0);
    char* buf = malloc(piece);
    CHECK(buf != NULL);
    if (whole) {
      CHECK(timed_read(fd, buf, piece) == st.st_size);
      CHECK(timed_read(fd, buf, 1) == 0);
    } else {
      while (timed_read(fd, buf, piece) > 0) {
      }
    }
    free(buf);
    CHECK(close(fd) == 0);
  }
  printf("SMALL %llu %llu\nLARGE %llu %llu\nEMPTY %llu %llu\n", (unsigned long long)counts[0],
         (unsigned long long)times[0], (unsigned long long)counts[1],
         (unsigned long long)times[1], (unsigned long long)counts[2],
         (unsigned long long)times[2]);
  return 0;
}
