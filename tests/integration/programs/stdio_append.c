/* Buffered streams over O_APPEND fds whose stream was not opened "a": the
 * shell's `prog >> log` (stdout onto an O_APPEND fd) and fdopen(fd, "w") of
 * an fd opened O_APPEND. Their writes land at the file's end when the stream
 * writes them out; the stream's own position (ftello) counts from the fd's
 * offset, 0 until its first write, and is no guide.
 *
 *   stdio_append DIR
 *
 * DIR/out.log (10 bytes first) is put on fd 1 with O_APPEND, and stdout
 * written twice; DIR/fd.log (20 bytes first) is opened O_APPEND, fdopen'ed
 * "w" and written twice. Prints to stderr, for each write, where its bytes
 * landed (the file's size before, and the bytes before it):
 *
 *   EV  name=fputs  path=DIR/out.log  offset=10  bytes=4
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "common.h"

static void make(const char* path, long n) {
  FILE* f = fopen(path, "w");
  CHECK(f != NULL);
  for (long i = 0; i < n; ++i) CHECK(fputc('.', f) == '.');
  CHECK(fclose(f) == 0);
}

static void ev(const char* name, const char* path, long offset, long bytes) {
  fprintf(stderr, "EV\tname=%s\tpath=%s\toffset=%ld\tbytes=%ld\n", name, path, offset, bytes);
}

int main(int argc, char** argv) {
  CHECK(argc == 2);
  char out[4096], log[4096];
  snprintf(out, sizeof(out), "%s/out.log", argv[1]);
  snprintf(log, sizeof(log), "%s/fd.log", argv[1]);
  make(out, 10);
  make(log, 20);

  int fd = open(out, O_WRONLY | O_APPEND);
  CHECK(fd >= 0 && dup2(fd, 1) == 1 && close(fd) == 0);
  CHECK(fputs("abc\n", stdout) >= 0);
  CHECK(fprintf(stdout, "defg%d\n", 5) == 6);
  CHECK(fflush(stdout) == 0);
  ev("fputs", out, 10, 4);
  ev("fprintf", out, 14, 6);

  fd = open(log, O_WRONLY | O_APPEND);
  CHECK(fd >= 0);
  FILE* f = fdopen(fd, "w");
  CHECK(f != NULL);
  CHECK(fwrite("12345", 1, 5, f) == 5);
  CHECK(fwrite("678", 1, 3, f) == 3);
  CHECK(fclose(f) == 0);
  ev("fwrite", log, 20, 5);
  ev("fwrite", log, 25, 3);
  return 0;
}
