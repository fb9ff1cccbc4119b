/* usage: write_file PATH NBYTES [CHUNK]
 * Creates PATH with NBYTES bytes written CHUNK (default 1000) at a time and
 * prints "WROTE <pid> <ppid> <bytes> <writes>". */
#define _GNU_SOURCE
#include <fcntl.h>

#include "common.h"

int main(int argc, char** argv) {
  CHECK(argc == 3 || argc == 4);
  long total = atol(argv[2]);
  long chunk = argc == 4 ? atol(argv[3]) : 1000;
  static char buf[1 << 16];
  CHECK(chunk > 0 && chunk <= (long)sizeof(buf));
  memset(buf, 'w', sizeof(buf));
  int fd = open(argv[1], O_CREAT | O_WRONLY | O_TRUNC, 0644);
  CHECK(fd >= 0);
  long done = 0, writes = 0;
  while (done < total) {
    long n = total - done < chunk ? total - done : chunk;
    ssize_t r = write(fd, buf, (size_t)n);
    CHECK(r == n);
    done += r;
    ++writes;
  }
  CHECK(close(fd) == 0);
  printf("WROTE %d %d %ld %ld\n", raw_getpid(), (int)getppid(), done, writes);
  return 0;
}
