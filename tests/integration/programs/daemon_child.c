/* A program that becomes a daemon: glibc's daemon() forks and its parent
 * leaves through glibc's own _exit, past the tracer's _exit.
 *
 * usage: daemon_child FILE OUT
 *
 * Reads FILE (one read of up to 4096 bytes), prints "PARENT <pid>", then
 * calls daemon(1, 1) (no chdir, standard streams kept). The daemon makes
 * 10 preads of 100 bytes of FILE and then writes "DAEMON <pid> <parent's
 * pid> <sid>\n" into OUT.tmp, renamed to OUT once whole (the test waits for
 * OUT), and returns from main. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>

#include "common.h"

int main(int argc, char** argv) {
  CHECK(argc == 3);
  char buf[4096];
  int fd = open(argv[1], O_RDONLY);
  CHECK(fd >= 0);
  CHECK(read(fd, buf, sizeof(buf)) > 0);
  const int parent = raw_getpid();
  printf("PARENT %d\n", parent);
  fflush(stdout);
  CHECK(daemon(1, 1) == 0);
  for (int i = 0; i < 10; ++i) CHECK(pread(fd, buf, 100, i * 100) == 100);
  CHECK(close(fd) == 0);
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof(tmp), "%s.tmp", argv[2]);
  FILE* out = fopen(tmp, "w");
  CHECK(out != NULL);
  fprintf(out, "DAEMON %d %d %d\n", raw_getpid(), parent, (int)getsid(0));
  CHECK(fclose(out) == 0);
  CHECK(rename(tmp, argv[2]) == 0);
  return 0;
}
