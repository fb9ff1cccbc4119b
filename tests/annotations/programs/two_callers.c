/* Two distinct call paths to read(2) (tests/annotations, DLPROF_STACKS=1).
 *
 *   two_callers FILE [fork]
 *
 * reader_alpha() reads 4096-byte chunks 3 times, reader_beta() reads
 * 1000-byte chunks 5 times, each through its own helper, from FILE (at least
 * 32 KiB). With "fork", reader_beta runs in a forked child (on its own fd).
 * Built with -g -O0 -rdynamic so that the callers keep their frames and
 * names. Prints "ok". */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char buf[65536];

__attribute__((noinline)) void reader_alpha(int fd) {
  for (int i = 0; i < 3; ++i) {
    if (read(fd, buf, 4096) != 4096) exit(2);
  }
}

__attribute__((noinline)) void reader_beta(int fd) {
  for (int i = 0; i < 5; ++i) {
    if (read(fd, buf, 1000) != 1000) exit(2);
  }
}

__attribute__((noinline)) void load_alpha(int fd) { reader_alpha(fd); }
__attribute__((noinline)) void load_beta(int fd) { reader_beta(fd); }

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: two_callers FILE [fork]\n");
    return 2;
  }
  int fd = open(argv[1], O_RDONLY);
  if (fd < 0) {
    perror(argv[1]);
    return 2;
  }
  load_alpha(fd);
  if (argc > 2 && strcmp(argv[2], "fork") == 0) {
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
      int cfd = open(argv[1], O_RDONLY);
      if (cfd < 0) _exit(3);
      load_beta(cfd);
      close(cfd);
      _exit(0);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child || status != 0) return 3;
  } else {
    load_beta(fd);
  }
  close(fd);
  printf("ok\n");
  return 0;
}
