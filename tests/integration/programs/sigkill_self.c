/* Records many events, waits until told to, then SIGKILLs itself.
 *
 * usage: sigkill_self FILE PREADS
 *
 * Prints "DONE <pid> <preads>", then waits for a line (or the end of file)
 * on stdin and kills itself with SIGKILL. The test sends the line once the
 * tracer's periodic flush has written every pread to the trace file: it
 * waits for that state, not for a time that a loaded machine may overrun. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>

#include "common.h"

int main(int argc, char** argv) {
  CHECK(argc == 3);
  long preads = atol(argv[2]);
  int fd = open(argv[1], O_RDONLY);
  CHECK(fd >= 0);
  char buf[128];
  for (long i = 0; i < preads; ++i) CHECK(pread(fd, buf, sizeof(buf), (i % 32) * 128) == 128);
  printf("DONE %d %ld\n", raw_getpid(), preads);
  fflush(stdout);
  char line[16];
  CHECK(read(0, line, sizeof(line)) >= 0);
  kill(getpid(), SIGKILL);
  return 1;
}
