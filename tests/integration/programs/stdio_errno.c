/* The errno of stdio calls on a stream whose error flag is already set:
 * the flag stays set until clearerr, and a later call that fails or comes
 * up short without an error of its own sets no errno.
 *
 * usage: stdio_errno FILE
 *
 * FILE (a few lines, longer than 5 bytes) is opened "r"; a fwrite on it
 * fails (EBADF) and sets the flag; then getline, fgetc, fgets, fread, a
 * second fwrite, a third with errno left EBADF, clearerr and a fread at the
 * end of the file. errno is set to 1234 before each call but the third
 * fwrite; prints "CALL <name> <ret> <errno after>", the
 * program's own view of whether the call set errno. */
#define _GNU_SOURCE
#include <stdio.h>

#include "common.h"

#define SENTINEL 1234
#define CALL(name, expr)                               \
  do {                                                 \
    errno = SENTINEL;                                  \
    long long r_ = (long long)(expr);                  \
    printf("CALL %s %lld %d\n", name, r_, errno);      \
  } while (0)

int main(int argc, char** argv) {
  CHECK(argc == 2);
  FILE* f = fopen(argv[1], "r");
  CHECK(f != NULL);
  char buf[64];
  char* line = NULL;
  size_t n = 0;
  CALL("fwrite", fwrite("a", 1, 1, f));
  CHECK(ferror(f));
  CALL("getline", getline(&line, &n, f));
  CALL("fgetc", fgetc(f));
  CALL("fgets", fgets(buf, 5, f) == NULL ? -1 : 0);
  CALL("fread", fread(buf, 1, sizeof(buf), f)); /* short: the file ends */
  CALL("fwrite", fwrite("b", 1, 1, f));
  /* Again with errno left as the last one set (EBADF): a retry failing as
   * before sets it again. */
  errno = EBADF;
  long long again = (long long)fwrite("c", 1, 1, f);
  printf("CALL fwrite %lld %d\n", again, errno);
  clearerr(f);
  CALL("fread", fread(buf, 1, sizeof(buf), f)); /* at the end: EOF, no error */
  CHECK(fclose(f) == 0);
  free(line);
  return 0;
}
