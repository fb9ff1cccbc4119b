/* A cache of temporary files (tests/integration/test_keep_counters.py):
 * every file lives a moment, so the files most time went to are new at
 * every flusher pass, and the bounded trace's counters file must not keep
 * the name of each.
 *
 *   keep_tmpcache DIR SECONDS
 *
 * For SECONDS, creates DIR/cache-entry-NNNNNNNN.tmp, writes 4 KiB to it,
 * closes it, opens it again, reads the 4 KiB, closes it and unlinks it.
 * Prints "DONE FILES WRITES WRITE_BYTES READS READ_BYTES SECONDS_NS": its
 * own counts of what the calls returned, and how long it ran
 * (CLOCK_MONOTONIC_RAW, the tracer's clock). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char** argv) {
  CHECK(argc == 3);
  const uint64_t ns = (uint64_t)(atof(argv[2]) * 1e9);
  char path[4096], buf[4096];
  memset(buf, 7, sizeof buf);
  long long files = 0, writes = 0, write_bytes = 0, reads = 0, read_bytes = 0;
  const uint64_t start = monotonic_raw_ns();
  while (monotonic_raw_ns() - start < ns) {
    snprintf(path, sizeof path, "%s/cache-entry-%08lld.tmp", argv[1], files);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
    CHECK(fd >= 0);
    const ssize_t w = write(fd, buf, sizeof buf);
    CHECK(w == (ssize_t)sizeof buf);
    ++writes;
    write_bytes += w;
    CHECK(close(fd) == 0);
    fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    const ssize_t r = read(fd, buf, sizeof buf);
    CHECK(r == (ssize_t)sizeof buf);
    ++reads;
    read_bytes += r;
    CHECK(close(fd) == 0);
    CHECK(unlink(path) == 0);
    ++files;
  }
  printf("DONE %lld %lld %lld %lld %lld %llu\n", files, writes, write_bytes, reads, read_bytes,
         (unsigned long long)(monotonic_raw_ns() - start));
  return 0;
}
