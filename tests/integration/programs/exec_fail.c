/* exec that fails: the program goes on, still traced.
 *
 * usage: exec_fail DIR [kill]
 *
 * Writes DIR/before.dat (1000 bytes), tries to execv a program that does
 * not exist, then writes DIR/after.dat (2000 bytes). Prints
 * "EXEC <ret> <errno>". With "kill", then kills itself with SIGKILL. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <signal.h>

#include "common.h"

static void write_file(const char* dir, const char* name, size_t n) {
  char path[PATH_MAX];
  static char buf[4096];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  CHECK(fd >= 0);
  CHECK(write(fd, buf, n) == (ssize_t)n);
  CHECK(close(fd) == 0);
}

int main(int argc, char** argv) {
  CHECK(argc == 2 || (argc == 3 && strcmp(argv[2], "kill") == 0));
  write_file(argv[1], "before.dat", 1000);
  char* args[] = {"/nonexistent/program", NULL};
  errno = 0;
  int r = execv(args[0], args);
  printf("EXEC %d %d\n", r, errno);
  write_file(argv[1], "after.dat", 2000);
  fflush(stdout);
  if (argc == 3) kill(getpid(), SIGKILL);
  return 0;
}
