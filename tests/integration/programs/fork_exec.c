/* fork, then exec another traced program in the child.
 *
 * usage: fork_exec DATA_DIR CHILD_CWD PROGRAM ARGS...
 *
 * The parent writes DATA_DIR/parent.dat (5000 bytes); the child writes
 * DATA_DIR/preexec.dat (777 bytes), changes to CHILD_CWD and execs PROGRAM
 * with ARGS. Prints "PARENT <pid> CHILD <pid> STATUS <status>". */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <sys/wait.h>

#include "common.h"

static void write_bytes(const char* dir, const char* name, size_t n) {
  char path[PATH_MAX];
  char buf[8192];
  memset(buf, 'p', sizeof(buf));
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  CHECK(fd >= 0);
  CHECK(write(fd, buf, n) == (ssize_t)n);
  CHECK(close(fd) == 0);
}

int main(int argc, char** argv) {
  CHECK(argc >= 4);
  write_bytes(argv[1], "parent.dat", 5000);
  fflush(stdout);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    write_bytes(argv[1], "preexec.dat", 777);
    CHECK(chdir(argv[2]) == 0);
    execv(argv[3], argv + 3);
    _exit(127);
  }
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  printf("PARENT %d CHILD %d STATUS %d\n", raw_getpid(), (int)pid, status);
  return 0;
}
