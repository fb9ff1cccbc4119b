/* maxrss: runs a command and prints its peak resident set size.
 *
 *   maxrss OUTFILE CMD [ARGS...]
 *
 * Writes the child's ru_maxrss (KiB, whole lifetime, from wait4) to OUTFILE
 * and exits with the child's status. The driver cannot take ru_maxrss from
 * its own children: a child forked from Python keeps the interpreter's peak
 * RSS across exec. Here the child is forked from this small process. If
 * BENCH_LD_PRELOAD is set, the child (only) gets it as LD_PRELOAD, so this
 * wrapper itself is never traced.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: maxrss OUTFILE CMD [ARGS...]\n");
    return 2;
  }
  pid_t pid = fork();
  if (pid < 0) {
    perror("maxrss: fork");
    return 2;
  }
  if (pid == 0) {
    const char* preload = getenv("BENCH_LD_PRELOAD");
    if (preload) setenv("LD_PRELOAD", preload, 1);
    execvp(argv[2], argv + 2);
    perror("maxrss: exec");
    _exit(127);
  }
  int status = 0;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) < 0) {
    perror("maxrss: wait4");
    return 2;
  }
  FILE* f = fopen(argv[1], "w");
  if (!f) {
    perror("maxrss: output");
    return 2;
  }
  fprintf(f, "%ld\n", ru.ru_maxrss);
  fclose(f);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
