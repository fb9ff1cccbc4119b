/* usage: read_files PATH...
 * Opens each PATH, reads it to the end 4096 bytes at a time, closes it, and
 * prints "READ <path> <bytes>". */
#define _GNU_SOURCE
#include <fcntl.h>

#include "common.h"

int main(int argc, char** argv) {
  char buf[4096];
  for (int i = 1; i < argc; ++i) {
    int fd = open(argv[i], O_RDONLY);
    CHECK(fd >= 0);
    long total = 0;
    ssize_t r;
    while ((r = read(fd, buf, sizeof(buf))) > 0) total += r;
    CHECK(r == 0);
    CHECK(close(fd) == 0);
    printf("READ %s %ld\n", argv[i], total);
  }
  return 0;
}
