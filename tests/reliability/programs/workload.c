/* A small job with known results, for the trace-directory faults.
 *
 *   workload MODE DIR N
 *
 * Writes DIR/out.bin (64 KiB, a fixed pattern), reads it back, then makes N
 * one-byte preads at pseudo-random offsets (so the trace does not compress
 * to nothing) and prints "SUM <checksum>" and "DONE". MODE:
 *   run    just that
 *   wait   after the preads, prints "WAITING" and waits for a line on
 *          stdin (the test removes the trace directory meanwhile); then
 *          more preads, a forked child that makes preads too, and "DONE"
 *   readonly  opens the existing DIR/out.bin read-only instead: the run
 *          writes no file of its own (RLIMIT_FSIZE below the trace header)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>

#include "rel.h"

static unsigned long sum;

static void preads(int fd, long n, uint32_t* seed) {
  unsigned char c;
  for (long i = 0; i < n; ++i) {
    *seed = *seed * 1103515245u + 12345u;
    CHECK(pread(fd, &c, 1, (*seed >> 8) % 65536) == 1);
    sum = sum * 31 + c;
  }
}

int main(int argc, char** argv) {
  CHECK(argc == 4);
  const char* mode = argv[1];
  const char* dir = argv[2];
  long n = atol(argv[3]);
  char path[PATH_MAX];
  static unsigned char buf[65536];
  for (size_t i = 0; i < sizeof(buf); ++i) buf[i] = (unsigned char)(i * 13 + 7);
  snprintf(path, sizeof(path), "%s/out.bin", dir);
  int readonly = strcmp(mode, "readonly") == 0;
  int fd = readonly ? open(path, O_RDONLY) : open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
  CHECK(fd >= 0);
  if (!readonly) CHECK(write(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf));
  uint32_t seed = 1;
  preads(fd, n, &seed);
  if (strcmp(mode, "wait") == 0) {
    printf("WAITING\n");
    fflush(stdout);
    raw_wait_line();
    preads(fd, n, &seed);
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      preads(fd, 100, &seed);
      _exit(0);
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    printf("CHILD status=%d\n", status);
  }
  CHECK(close(fd) == 0);
  printf("SUM %lu\nDONE\n", sum);
  return 0;
}
