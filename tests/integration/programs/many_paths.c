/* Many distinct paths, then a quiet loop that outlasts a bounded trace's
 * next segments (tests/integration/test_keep_paths.py): every segment a
 * process begins defines again every string it interned, here every path.
 *
 *   many_paths DIR FILES SECONDS
 *
 * Creates, closes and unlinks FILES empty files in DIR, each with a name of
 * about 200 characters; then preads 64 bytes of DIR/data every 20 ms for
 * SECONDS. Prints "DONE FILES PATH_BYTES HWM_KB": the files made, the
 * bytes of their paths, and the process's peak resident memory
 * (/proc/self/status VmHWM) at its end. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long peak_kb(void) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (f != NULL && fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "VmHWM:", 6) == 0) kb = atol(line + 6);
  }
  if (f != NULL) fclose(f);
  return kb;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: many_paths DIR FILES SECONDS\n");
    return 2;
  }
  const char* dir = argv[1];
  const long files = atol(argv[2]);
  const double seconds = atof(argv[3]);
  char pad[181];
  memset(pad, 'p', sizeof pad - 1);
  pad[sizeof pad - 1] = '\0';
  char path[4096];
  long path_bytes = 0;
  for (long i = 0; i < files; i++) {
    int n = snprintf(path, sizeof path, "%s/%s-%08ld", dir, pad, i);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
    if (fd < 0) return 1;
    close(fd);
    unlink(path);
    path_bytes += n;
  }
  snprintf(path, sizeof path, "%s/data", dir);
  int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
  char buf[64] = {0};
  if (fd < 0 || pwrite(fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf) return 1;
  const struct timespec gap = {0, 20 * 1000 * 1000};
  for (long i = 0; i < (long)(seconds * 50); i++) {
    if (pread(fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf) return 1;
    nanosleep(&gap, NULL);
  }
  close(fd);
  printf("DONE %ld %ld %ld\n", files, path_bytes, peak_kb());
  return 0;
}
