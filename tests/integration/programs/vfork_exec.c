/* vfork, as Python's subprocess does: the child rearranges its descriptors
 * (dup2, close) in the parent's memory, then execs or leaves with _exit.
 *
 * usage: vfork_exec DATA_FILE OUT_FILE exec|exit|exit_after_failed_exec
 *
 * (exit_after_failed_exec: an exec that fails, then exit(127), which runs
 * the atexit handlers and destructors -- the tracer's too -- in the
 * parent's memory, as shells' children do.)
 *
 * The parent reads 1000 bytes of DATA_FILE and writes 100 bytes to
 * OUT_FILE before and after the child. Prints "PARENT <pid> CHILD <pid>
 * STATUS <status>". */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/wait.h>

#include "common.h"

int main(int argc, char** argv) {
  CHECK(argc == 4);
  char buf[1000];
  memset(buf, 'v', sizeof(buf));
  int in = open(argv[1], O_RDONLY);
  int out = open(argv[2], O_CREAT | O_WRONLY | O_TRUNC, 0644);
  CHECK(in >= 0 && out >= 0);
  CHECK(read(in, buf, 1000) == 1000);
  CHECK(write(out, buf, 100) == 100);
  int exec = strcmp(argv[3], "exec") == 0;
  fflush(stdout);
  pid_t pid = vfork();
  CHECK(pid >= 0);
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    if (null < 0 || dup2(null, out) != out || close(in) != 0) _exit(50);
    if (exec) {
      char* args[] = {"/bin/true", NULL};
      execv(args[0], args);
    }
    if (strcmp(argv[3], "exit_after_failed_exec") == 0) {
      char* args[] = {"/nonexistent/program", NULL};
      execv(args[0], args);
      exit(127);
    }
    _exit(0);
  }
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(read(in, buf, 1000) == 1000);
  CHECK(write(out, buf, 100) == 100);
  CHECK(close(in) == 0 && close(out) == 0);
  printf("PARENT %d CHILD %d STATUS %d\n", raw_getpid(), (int)pid, status);
  return 0;
}
