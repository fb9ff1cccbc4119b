/* posix_spawn of another traced program.
 *
 * usage: spawn_child spawn|spawnp DATA_DIR PROGRAM ARGS...
 *
 * Writes DATA_DIR/spawner.dat (3000 bytes), starts PROGRAM with ARGS through
 * posix_spawn (or posix_spawnp) and waits for it. Prints
 * "PARENT <pid> CHILD <pid> STATUS <status>". */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <sys/wait.h>

#include "common.h"

extern char** environ;

int main(int argc, char** argv) {
  CHECK(argc >= 4);
  char path[PATH_MAX];
  char buf[3000];
  memset(buf, 's', sizeof(buf));
  snprintf(path, sizeof(path), "%s/spawner.dat", argv[2]);
  int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  CHECK(fd >= 0);
  CHECK(write(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf));
  CHECK(close(fd) == 0);
  fflush(stdout);
  pid_t pid;
  int rc = strcmp(argv[1], "spawnp") == 0
               ? posix_spawnp(&pid, argv[3], NULL, NULL, argv + 3, environ)
               : posix_spawn(&pid, argv[3], NULL, NULL, argv + 3, environ);
  CHECK(rc == 0);
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  printf("PARENT %d CHILD %d STATUS %d\n", raw_getpid(), (int)pid, status);
  return 0;
}
