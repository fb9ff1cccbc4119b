/* A data loader that probes more distinct paths than the tracer's string
 * table first held (2^20: ImageNet-1k alone has 1.28 M files): stat() of N
 * distinct missing paths, then of the first R of them again, then a write
 * and a read on each of three real files, and the same through stdio on
 * three more (fopen, fwrite, fseek, fread, fclose). It prints what it did,
 * for the test to hold the trace to (test_strings.py).
 *
 * usage: manypaths DIR N R */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rel.h"

static void probe_path(char* p, size_t cap, const char* dir, long i) {
  snprintf(p, cap, "%s/train/n%05ld/img_%08ld.JPEG", dir, i / 1000, i);
}

int main(int argc, char** argv) {
  CHECK(argc == 4);
  const char* dir = argv[1];
  const long n = atol(argv[2]), again = atol(argv[3]);
  char p[4096];
  struct stat st;
  long stats = 0, missing = 0;
  for (long i = 0; i < n + again; i++, stats++) {
    probe_path(p, sizeof p, dir, i < n ? i : i - n);
    missing += stat(p, &st) != 0;
  }
  char buf[100] = {0};
  long io_calls = 0, bytes_read = 0;
  for (int k = 0; k < 3; k++) {
    snprintf(p, sizeof p, "%s/real_%d.bin", dir, k);
    int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    CHECK(write(fd, buf, sizeof buf) == (ssize_t)sizeof buf);
    CHECK(lseek(fd, 0, SEEK_SET) == 0);
    long r = read(fd, buf, sizeof buf);
    CHECK(r == (long)sizeof buf);
    bytes_read += r;
    CHECK(close(fd) == 0);
    io_calls += 5;
  }
  for (int k = 3; k < 6; k++) {
    snprintf(p, sizeof p, "%s/real_%d.bin", dir, k);
    FILE* f = fopen(p, "w+");
    CHECK(f != NULL);
    CHECK(fwrite(buf, 1, sizeof buf, f) == sizeof buf);
    CHECK(fseek(f, 0, SEEK_SET) == 0);
    size_t r = fread(buf, 1, sizeof buf, f);
    CHECK(r == sizeof buf);
    bytes_read += (long)r;
    CHECK(fclose(f) == 0);
    io_calls += 5;
  }
  char line[200];  /* raw_say: the output is no event of its own */
  snprintf(line, sizeof line, "STATS %ld MISSING %ld IO_CALLS %ld READ %ld\n", stats, missing,
           io_calls, bytes_read);
  raw_say(line);
  return 0;
}
