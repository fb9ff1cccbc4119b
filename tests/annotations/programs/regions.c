/* Nested regions with known I/O inside each (tests/annotations).
 *
 *   regions DIR      reads DIR/a.bin, DIR/b.bin, DIR/c.bin (each >= 64 KiB)
 *
 * Layout (region: reads):
 *   (unmatched end: ignored)
 *   epoch 0
 *     load_batch: 3 x pread 4096 of a.bin
 *     step:       1 x pread 8192 of b.bin, mark "step-mark", counters
 *       inner:    2 x pread 1000 of c.bin
 *   epoch 1
 *     load_batch: 5 x pread 4096 of a.bin
 *     step:       2 x pread 8192 of b.bin
 *   outside any region: 1 x pread 100 of c.bin
 *   deep: 70 nested regions "deep" (64 recorded), one pread 10 of a.bin inside
 * Prints "ok" and exits 0. Runs the same without dlprof. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlprof/dlprof.h"

static char buf[65536];

static void must_pread(int fd, size_t n, off_t off) {
  ssize_t r = pread(fd, buf, n, off);
  if (r != (ssize_t)n) {
    fprintf(stderr, "pread %zu at %lld returned %zd\n", n, (long long)off, r);
    exit(2);
  }
}

static int open_in(const char* dir, const char* name) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  int fd = open(path, O_RDONLY);
  if (fd < 0) {
    perror(path);
    exit(2);
  }
  return fd;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: regions DIR\n");
    return 2;
  }
  int a = open_in(argv[1], "a.bin");
  int b = open_in(argv[1], "b.bin");
  int c = open_in(argv[1], "c.bin");

  dlprof_region_end(); /* unmatched: ignored */

  for (int epoch = 0; epoch < 2; ++epoch) {
    char name[64];
    snprintf(name, sizeof(name), "epoch %d", epoch);
    dlprof_region_begin(name);

    dlprof_region_begin("load_batch");
    for (int i = 0; i < (epoch == 0 ? 3 : 5); ++i) must_pread(a, 4096, (off_t)i * 4096);
    dlprof_region_end();

    dlprof_region_begin("step");
    for (int i = 0; i < (epoch == 0 ? 1 : 2); ++i) must_pread(b, 8192, (off_t)i * 8192);
    if (epoch == 0) {
      dlprof_mark("step-mark");
      dlprof_counter("samples", 42);
      dlprof_counter_double("loss", 0.25);
      dlprof_region_begin("inner");
      must_pread(c, 1000, 0);
      must_pread(c, 1000, 1000);
      dlprof_region_end();
    }
    dlprof_region_end();

    dlprof_region_end();
  }

  must_pread(c, 100, 0);

  for (int i = 0; i < 70; ++i) dlprof_region_begin("deep");
  must_pread(a, 10, 0);
  for (int i = 0; i < 70; ++i) dlprof_region_end();

  printf("ok active=%d\n", dlprof_active());
  close(a);
  close(b);
  close(c);
  return 0;
}
