/* Reads descriptors the program inherited, to the end, 500 bytes at a time.
 *
 * usage: read_fds FD...
 *
 * Prints "FD <fd> <start position> <bytes>" for each (to stdout, which may
 * itself be a traced file). */
#define _GNU_SOURCE
#include "common.h"

int main(int argc, char** argv) {
  char buf[500];
  for (int i = 1; i < argc; ++i) {
    int fd = atoi(argv[i]);
    long long start = raw_tell(fd);
    long total = 0;
    ssize_t r;
    while ((r = read(fd, buf, sizeof(buf))) > 0) total += r;
    CHECK(r == 0);
    printf("FD %d %lld %ld\n", fd, start, total);
  }
  return 0;
}
