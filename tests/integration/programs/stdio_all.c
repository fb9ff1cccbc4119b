/* Every wrapped STDIO function, with known results.
 *
 * usage: stdio_all DIR
 *
 * Works on streams on files in DIR and prints, for every call it makes on
 * them, one line with the event the tracer must record:
 *
 *   EV <tab> name=fread <tab> fd=3 <tab> path=/abs <tab> offset=0 <tab> size=500 ...
 *
 * offset is the stream position before the call (after it for the seek
 * class), taken with libc's own ftello, looked up in libc.so.6 itself so
 * that the tracer does not see it; size the bytes asked, bytes the bytes the
 * stream really moved (the distance its position moved), ret what the call
 * returned (0/-1 for fgets, the new fd for fopen/freopen/fdopen).
 *
 * Built twice (tests/integration/CMakeLists.txt): plain, and as
 * stdio_all_fortify with -O2 -D_FORTIFY_SOURCE=2, where the calls marked
 * CHK below (fread and fgets into arrays of known size with a run-time
 * count, every fprintf/vfprintf) become __fread_chk, __fgets_chk,
 * __fprintf_chk and __vfprintf_chk. Every other call gets a buffer whose
 * size the compiler cannot know, so it stays the plain function. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/types.h>

#include "stdio_events.h"

#if defined(_FORTIFY_SOURCE) && _FORTIFY_SOURCE > 1 && defined(__OPTIMIZE__)
#define FORT 1
#define N_FREAD_CHK "__fread_chk"
#define N_FGETS_CHK "__fgets_chk"
#define N_FPRINTF "__fprintf_chk"
#define N_VFPRINTF "__vfprintf_chk"
#else
#define FORT 0
#define N_FREAD_CHK "fread"
#define N_FGETS_CHK "fgets"
#define N_FPRINTF "fprintf"
#define N_VFPRINTF "vfprintf"
#endif

static int my_vfprintf(FILE* fp, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = vfprintf(fp, fmt, ap);
  va_end(ap);
  return r;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: stdio_all DIR\n");
    return 2;
  }
  find_libc_ftello();
  runtime_n = 64;
  const int n = runtime_n;

  char path_a[PATH_MAX], path_b[PATH_MAX], path_c[PATH_MAX], path_d[PATH_MAX];
  char path_e[PATH_MAX], path_f[PATH_MAX], path_g[PATH_MAX];
  snprintf(path_a, sizeof path_a, "%s/a.bin", argv[1]);
  snprintf(path_b, sizeof path_b, "%s/b.txt", argv[1]);
  snprintf(path_c, sizeof path_c, "%s/c.txt", argv[1]);
  snprintf(path_d, sizeof path_d, "%s/d.bin", argv[1]);
  snprintf(path_e, sizeof path_e, "%s/e.txt", argv[1]);
  snprintf(path_f, sizeof path_f, "%s/f.txt", argv[1]);
  snprintf(path_g, sizeof path_g, "%s/g.bin", argv[1]);

  static char data[8192];
  for (size_t i = 0; i < sizeof data; ++i) data[i] = (char)('a' + i % 26);
  char* buf = launder(malloc(8192));
  CHECK(buf != NULL);
  char known[256]; /* its size is known: the CHK calls */

  /* --- a.bin: binary writes, reads, positioning --------------------------- */
  FILE* a = do_fopen("fopen", fopen, path_a, "w+");
  IO("fwrite", a, 10 * 100, fwrite(launder(data), 10, 100, a));
  IO("fwrite_unlocked", a, 300, fwrite_unlocked(launder(data), 1, 300, a));
  FLUSH(a);
  SEEK("fseek", a, fseek(a, 0, SEEK_SET));
  IO("fread", a, 500, fread(buf, 1, 500, a));
  IO(N_FREAD_CHK, a, n, fread(known, 1, n, a));
  SEEK("ftell", a, ftell(a));
  SEEK("ftello", a, ftello(a));
  SEEK("fseeko", a, fseeko(a, 1000, SEEK_SET));
  /* 20 items of 100 bytes asked, 3 whole ones there, 300 bytes consumed. */
  IO("fread_unlocked", a, 2000, fread_unlocked(buf, 100, 20, a));
  /* At the end of file: nothing. */
  IO("fread", a, 100, fread(buf, 1, 100, a));
  SEEK("fseeko64", a, fseeko64(a, -50, SEEK_END));
  /* A partial item: 2 whole items of 20 and 10 more bytes consumed. */
  IO("fread", a, 60, fread(buf, 20, 3, a));
  fpos_t saved;
  SEEK("rewind", a, (rewind(a), 0));
  SEEK("fgetpos", a, fgetpos(a, &saved));
  IO("fread", a, 777, fread(buf, 1, 777, a));
  SEEK("fsetpos", a, fsetpos(a, &saved));
  IO("fread", a, 10, fread(buf, 10, 1, a));
  do_fclose(a);

  /* --- b.txt: text writes ------------------------------------------------- */
  FILE* b = do_fopen("fopen64", fopen64, path_b, "w");
  char* s1 = launder((char*)"first line\n\n");
  char* s2 = launder((char*)"7 11 tail,of,it\nZ");
  IO("fputs", b, strlen(s1), fputs(s1, b));
  IO("fputc", b, 1, fputc('x', b));
  IO("putc", b, 1, putc('\n', b));
  IO(N_FPRINTF, b, r_, fprintf(b, "%d apples %s\n", 42, "ok"));
  IO(N_VFPRINTF, b, r_, my_vfprintf(b, "%s,%s,%d\n", "p", "q", 123));
  IO("fputs", b, strlen(s2), fputs(s2, b));
  do_fclose(b);

  /* --- c.txt, reopened onto b.txt: text reads ------------------------------- */
  FILE* c = do_fopen("fopen", fopen, path_c, "w");
  FILE* r = freopen(path_b, "r", c);
  CHECK(r == c);
  snprintf(fd_path[fileno(c)], PATH_MAX, "%s", path_b);
  emit("freopen", fileno(c), NA, NA, NA, fileno(c));
  GETS("fgets", c, 100, fgets(buf, 100, c));           /* "first line\n" */
  GETS(N_FGETS_CHK, c, n, fgets(known, n, c));         /* "\n" */
  IO("fgetc", c, 1, fgetc(c));                         /* 'x' */
  IO("getc", c, 1, getc(c));                           /* '\n' */
  char* line = NULL;
  size_t cap = 0;
  IO("getline", c, 0, getline(&line, &cap, c));        /* "42 apples ok\n" */
  IO("getdelim", c, 0, getdelim(&line, &cap, ',', c)); /* "p," */
  IO("getdelim", c, 0, getdelim(&line, &cap, '\n', c)); /* "q,123\n" */
  int x = 0, y = 0;
  IO("fscanf", c, 0, fscanf(c, "%d %d", &x, &y));      /* " 7 11" */
  CHECK(x == 7 && y == 11);
  GETS("fgets", c, 100, fgets(buf, 100, c));           /* " tail,of,it\n" */
  GETS("fgets", c, 100, fgets(buf, 100, c));           /* "Z" */
  GETS("fgets", c, 100, fgets(buf, 100, c));           /* EOF: NULL */
  IO("fgetc", c, 1, fgetc(c));                         /* EOF */
  free(line);
  do_fclose(c);

  /* freopen(NULL, mode, fp): the same file again, on the same fd. */
  FILE* g = do_fopen("fopen", fopen, path_g, "w");
  IO("fwrite", g, 100, fwrite(launder(data), 1, 100, g));
  CHECK(freopen(NULL, "r", g) == g);
  emit("freopen", fileno(g), NA, NA, NA, fileno(g));
  IO("fread", g, 500, fread(buf, 1, 500, g));
  do_fclose(g);

  /* A freopen that fails has closed the stream's fd (glibc, inside the
   * call): a pipe that gets the number is no file, not f.txt (its 10 reads
   * and writes were f.txt's). The failed stream is not used again. */
  FILE* f = do_fopen("fopen", fopen, path_f, "w");
  const int gone = fileno(f);
  CHECK(freopen("/nonexistent-dlprof-dir/x", "r", f) == NULL);
  int p[2];
  CHECK(pipe(p) == 0 && (p[0] == gone || p[1] == gone));
  for (int i = 0; i < 10; ++i) {
    CHECK(write(p[1], data, 100) == 100 && read(p[0], buf, 100) == 100);
  }
  CHECK(close(p[0]) == 0 && close(p[1]) == 0);

  /* --- d.bin: a stream on an fd from open() -------------------------------- */
  int fd = open(path_d, O_RDWR | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0);
  snprintf(fd_path[fd], PATH_MAX, "%s", path_d);
  printf("EV\tname=open\tfd=%d\tpath=%s\tret=%d\terrno=0\n", fd, path_d, fd);
  FILE* d = fdopen(fd, "w+");
  CHECK(d != NULL);
  emit("fdopen", fd, NA, NA, NA, fd);
  IO("fwrite", d, 4096, fwrite(launder(data), 1, 4096, d));
  SEEK("fseek", d, fseek(d, 100, SEEK_SET));
  IO("fread", d, 1000, fread(buf, 1, 1000, d));
  SEEK("fseek", d, fseek(d, 0, SEEK_CUR));
  IO(N_FPRINTF, d, r_, fprintf(d, "%06d", 123));
  FLUSH(d);
  do_fclose(d);

  /* --- e.txt: an append stream, and a line with a NUL byte in it ----------- */
  FILE* e = do_fopen("fopen", fopen, path_e, "w");
  IO("fwrite", e, 100, fwrite(launder(data), 1, 100, e));
  IO("fwrite", e, 6, fwrite(launder((char*)"ab\0cd\n"), 1, 6, e));
  do_fclose(e);
  long long end = 106;
  e = do_fopen("fopen", fopen, path_e, "a+"); /* reads from 0, writes at the end */
  APPEND("fwrite", e, 5, &end, fwrite(launder(data), 1, 5, e));
  APPEND("fputs", e, 3, &end, fputs(launder((char*)"xyz"), e));
  SEEK("fseek", e, fseek(e, 100, SEEK_SET));
  GETS("fgets", e, 100, fgets(buf, 100, e)); /* "ab\0cd\n": 6 bytes, strlen 2 */
  do_fclose(e);

  /* A stream with no fd closes as untraced: errno untouched. */
  FILE* m = fmemopen(buf, 16, "r");
  CHECK(m != NULL);
  errno = 0;
  CHECK(fclose(m) == 0);
  CHECK(errno == 0);

  printf("FORT\t%d\n", FORT);
  fflush(stdout);
  return 0;
}
