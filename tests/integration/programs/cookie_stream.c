/* usage: cookie_stream PATH
 * Reads PATH through a stdio stream of its own (fopencookie) whose read
 * function calls pread(2): each fread is a traced STDIO call that holds
 * traced POSIX ones, which the trace marks nested, as it marks the pread of
 * an MPI_File_read_at. The stream's buffer (512 bytes) is smaller than an
 * fread (1000), so freads read through it. Prints
 * "READ <freads> <preads> <bytes>": the freads made (the last one returns
 * 0), the preads the stream made, the bytes read. */
#define _GNU_SOURCE
#include <fcntl.h>

#include "common.h"

struct cookie {
  int fd;
  off_t at;
  long preads;
};

static ssize_t cookie_read(void* c, char* buf, size_t n) {
  struct cookie* k = c;
  ssize_t r = pread(k->fd, buf, n, k->at);
  if (r > 0) k->at += r;
  k->preads++;
  return r;
}

int main(int argc, char** argv) {
  CHECK(argc == 2);
  struct cookie k = {open(argv[1], O_RDONLY), 0, 0};
  CHECK(k.fd >= 0);
  cookie_io_functions_t io = {cookie_read, NULL, NULL, NULL};
  FILE* f = fopencookie(&k, "r", io);
  CHECK(f != NULL);
  static char stream_buf[512];
  CHECK(setvbuf(f, stream_buf, _IOFBF, sizeof(stream_buf)) == 0);
  char buf[1000];
  long freads = 0, bytes = 0;
  size_t n;
  do {
    n = fread(buf, 1, sizeof(buf), f);
    ++freads;
    bytes += (long)n;
  } while (n > 0);
  CHECK(fclose(f) == 0);
  CHECK(close(k.fd) == 0);
  printf("READ %ld %ld %ld\n", freads, k.preads, bytes);
  return 0;
}
