/* A vfork child's own descriptors, as a shell's or Python's subprocess's
 * child makes them before it execs: they are its, not its parent's, though
 * it runs in its parent's memory.
 *
 * usage: vfork_fds CHILD_FILE DIR
 *
 * The child opens CHILD_FILE (fd 3) and reads 10 bytes of it, opens
 * /dev/null (fd 4) and writes a byte to it, closes both and execs
 * /bin/true. The parent, once the child has exec'd, makes two files in DIR
 * with mkstemp (no open wrapper sees them: fds 3 and 4 again), writes
 * 5 x 9 bytes to each and closes them. Prints "PARENT <pid> CHILD <pid>
 * STATUS <status>", then for each of the parent's files "FILE <path> <fd>"
 * and one "WRITE <fd> <offset> <bytes>" per write, the offset as the
 * kernel had it before the write. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/wait.h>

#include "common.h"

int main(int argc, char** argv) {
  CHECK(argc == 3);
  fflush(stdout);
  pid_t pid = vfork();
  CHECK(pid >= 0);
  if (pid == 0) {
    char buf[16];
    int in = open(argv[1], O_RDONLY);
    int null = open("/dev/null", O_WRONLY);
    if (in != 3 || null != 4 || read(in, buf, 10) != 10 || write(null, "x", 1) != 1) _exit(50);
    if (close(in) != 0 || close(null) != 0) _exit(51);
    char* args[] = {"/bin/true", NULL};
    execv(args[0], args);
    _exit(127);
  }
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  printf("PARENT %d CHILD %d STATUS %d\n", raw_getpid(), (int)pid, status);
  char paths[2][4096];
  int fds[2];
  for (int f = 0; f < 2; ++f) {
    snprintf(paths[f], sizeof(paths[f]), "%s/made%d.XXXXXX", argv[2], f);
    fds[f] = mkstemp(paths[f]);
    CHECK(fds[f] >= 0);
    printf("FILE %s %d\n", paths[f], fds[f]);
  }
  for (int f = 0; f < 2; ++f) {
    for (int i = 0; i < 5; ++i) {
      long long at = raw_tell(fds[f]);
      CHECK(write(fds[f], "data-data", 9) == 9);
      printf("WRITE %d %lld %d\n", fds[f], at, 9);
    }
  }
  for (int f = 0; f < 2; ++f) CHECK(close(fds[f]) == 0);
  return 0;
}
