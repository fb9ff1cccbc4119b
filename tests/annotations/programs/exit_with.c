/* For the launcher tests: does a little I/O, prints environment variables,
 * then ends as asked.
 *
 *   exit_with [--touch PATH] [--env NAME]... (code N | signal N)
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  int i = 1;
  for (; i < argc; ++i) {
    if (strcmp(argv[i], "--touch") == 0 && i + 1 < argc) {
      int fd = open(argv[++i], O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0 || write(fd, "hello\n", 6) != 6 || close(fd) != 0) {
        perror(argv[i]);
        return 2;
      }
    } else if (strcmp(argv[i], "--env") == 0 && i + 1 < argc) {
      const char* v = getenv(argv[++i]);
      printf("%s=%s\n", argv[i], v ? v : "<unset>");
    } else {
      break;
    }
  }
  fflush(stdout);
  if (i + 1 < argc && strcmp(argv[i], "code") == 0) return atoi(argv[i + 1]);
  if (i + 1 < argc && strcmp(argv[i], "signal") == 0) {
    int sig = atoi(argv[i + 1]);
    signal(sig, SIG_DFL);
    kill(getpid(), sig);
    pause();
    return 99;
  }
  fprintf(stderr, "usage: exit_with [--touch PATH] [--env NAME]... (code N | signal N)\n");
  return 2;
}
