/* Copies between files (test_copies.py): usage: copy_dest DIR TRUTH.
 *
 * 1. copy_file_range of 1000 bytes, then sendfile of 500, from /etc/services
 *    (a file the tracer leaves out by default) into DIR/out: only the
 *    destination is traced;
 * 2. copy_file_range of up to 1500 bytes from DIR/out into DIR/copy, both
 *    traced;
 * 3. sendfile of up to 700 bytes from DIR/out at offset 200 into DIR/copy2.
 *
 * TRUTH gets one JSON object a line per copy, what the program did: the
 * function, its source path ("" when left out by the tracer), its
 * destination path and descriptor, and what the call returned. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sendfile.h>
#include <unistd.h>

static FILE* truth;

static void Note(const char* name, const char* src, const char* dst, int out_fd, long ret) {
  fprintf(truth, "{\"name\":\"%s\",\"src\":\"%s\",\"dst\":\"%s\",\"dst_fd\":%d,\"ret\":%ld}\n",
          name, src, dst, out_fd, ret);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: copy_dest DIR TRUTH\n");
    return 2;
  }
  char out[4096], copy[4096], copy2[4096];
  snprintf(out, sizeof out, "%s/out", argv[1]);
  snprintf(copy, sizeof copy, "%s/copy", argv[1]);
  snprintf(copy2, sizeof copy2, "%s/copy2", argv[1]);
  truth = fopen(argv[2], "w");
  if (truth == NULL) return 1;

  int etc = open("/etc/services", O_RDONLY);
  int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (etc < 0 || o < 0) return 1;
  Note("copy_file_range", "", out, o, (long)copy_file_range(etc, NULL, o, NULL, 1000, 0));
  Note("sendfile", "", out, o, (long)sendfile(o, etc, NULL, 500));
  close(o);
  close(etc);

  int src = open(out, O_RDONLY);
  int dst = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (src < 0 || dst < 0) return 1;
  Note("copy_file_range", out, copy, dst, (long)copy_file_range(src, NULL, dst, NULL, 1500, 0));
  close(dst);

  int dst2 = open(copy2, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (dst2 < 0) return 1;
  off_t at = 200;
  Note("sendfile", out, copy2, dst2, (long)sendfile(dst2, src, &at, 700));
  close(dst2);
  close(src);
  fclose(truth);
  return 0;
}
