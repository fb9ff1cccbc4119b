/* Many short processes: a parent that forks N children, at most BATCH alive
 * at once, each of which opens FILE, makes 1 + i % 3 preads of 4096 bytes
 * (at offsets 0, 4096, 8192) and leaves with _exit. One run of more traces
 * than a process may hold files open (test_many_traces.py).
 *
 * usage: fork_many N BATCH FILE     (FILE: at least 12288 bytes)
 *
 * Each child prints "CHILD <pid> <preads> <bytes>" (what its preads
 * returned, added up); the parent "PARENT <pid> <children>" once all are
 * waited for, exit status 0 each. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/wait.h>

#include "common.h"

static int child_main(int i, const char* path) {
  char buf[4096];
  const int preads = 1 + i % 3;
  int fd = open(path, O_RDONLY);
  CHECK(fd >= 0);
  long bytes = 0;
  for (int k = 0; k < preads; ++k) {
    ssize_t r = pread(fd, buf, sizeof(buf), (off_t)k * 4096);
    CHECK(r == (ssize_t)sizeof(buf));
    bytes += r;
  }
  CHECK(close(fd) == 0);
  dprintf(1, "CHILD %d %d %ld\n", raw_getpid(), preads, bytes);
  return 0;
}

static void wait_one(void) {
  int status = 0;
  CHECK(wait(&status) > 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(int argc, char** argv) {
  CHECK(argc == 4);
  const int n = atoi(argv[1]);
  const int batch = atoi(argv[2]);
  CHECK(n > 0 && batch > 0);
  fflush(stdout);
  int alive = 0;
  for (int i = 0; i < n; ++i) {
    if (alive == batch) {
      wait_one();
      --alive;
    }
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) _exit(child_main(i, argv[3]));
    ++alive;
  }
  for (; alive > 0; --alive) wait_one();
  printf("PARENT %d %d\n", raw_getpid(), n);
  return 0;
}
