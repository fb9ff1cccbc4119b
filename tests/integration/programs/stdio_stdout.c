/* The printf and scanf families, stdout's own calls and dprintf
 * (tests/integration/test_stdio.py).
 *
 *   stdio_stdout DIR
 *
 * stdout is reopened onto DIR/out.txt, and written with printf, vprintf,
 * puts, putchar and the unlocked putc, fputc and putchar; stdin is reopened
 * onto DIR/stdin.txt and read with scanf, vscanf, getchar and the unlocked
 * getchar, fgetc and getc; DIR/fd.txt, opened with open(), is written with dprintf
 * and vdprintf and then write(); DIR/in.txt is read with vfscanf and
 * fgets_unlocked after fputs_unlocked wrote it (and, with sizes known only at
 * run time, fread_unlocked and fgets_unlocked again); DIR/mix.dat is read and
 * written with raw calls on fds streams move (fdopen "r+" reading ahead,
 * fdopen "a" turning O_APPEND on). For every call it prints
 * the event the tracer must record (stdio_events.h), to stderr: stdout is
 * what it writes. Built twice (CMakeLists.txt): plain, and as
 * stdio_stdout_fortify with -O2 -D_FORTIFY_SOURCE=2, where printf becomes
 * __printf_chk. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdarg.h>

#include "stdio_events.h"

#if defined(_FORTIFY_SOURCE) && _FORTIFY_SOURCE > 1 && defined(__OPTIMIZE__)
#define FORT 1
#define N_PRINTF "__printf_chk"
#define N_FREAD_UNLOCKED "__fread_unlocked_chk"
#define N_FGETS_UNLOCKED "__fgets_unlocked_chk"
#else
#define FORT 0
#define N_PRINTF "printf"
#define N_FREAD_UNLOCKED "fread_unlocked"
#define N_FGETS_UNLOCKED "fgets_unlocked"
#endif

/* Sizes the compiler cannot know: the fortified build checks them at run
 * time, through the _chk forms. */
static volatile int g_four = 4;
static volatile int g_line = 64;

/* Called through pointers the compiler cannot see through: it would turn
 * vprintf(...) into vfprintf(stdout, ...) and putchar(c) into putc(c,
 * stdout). */
static int (*volatile g_vprintf)(const char*, va_list) = vprintf;
static int (*volatile g_putchar)(int) = putchar;
/* (And the character calls <stdio.h> inlines with optimisation.) */
static int (*volatile g_putc_unlocked)(int, FILE*) = putc_unlocked;
static int (*volatile g_fputc_unlocked)(int, FILE*) = fputc_unlocked;
static int (*volatile g_putchar_unlocked)(int) = putchar_unlocked;
static int (*volatile g_getchar)(void) = getchar;
static int (*volatile g_getchar_unlocked)(void) = getchar_unlocked;
static int (*volatile g_fgetc_unlocked)(FILE*) = fgetc_unlocked;
static int (*volatile g_getc_unlocked)(FILE*) = getc_unlocked;

static int my_vscanf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = vscanf(fmt, ap);
  va_end(ap);
  return r;
}

static int my_vprintf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = g_vprintf(fmt, ap);
  va_end(ap);
  return r;
}

static int my_vdprintf(int fd, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = vdprintf(fd, fmt, ap);
  va_end(ap);
  return r;
}

static int my_vfscanf(FILE* fp, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = vfscanf(fp, fmt, ap);
  va_end(ap);
  return r;
}

/* A write on an fd at its position: bytes = what it returned. */
#define FDIO(nm, fd_, call)                                                    \
  do {                                                                         \
    long long at_ = raw_tell(fd_);                                             \
    long long r_ = (long long)(call);                                          \
    emit(nm, fd_, at_, r_, r_, r_);                                            \
  } while (0)

int main(int argc, char** argv) {
  CHECK(argc == 2);
  g_events = stderr;
  find_libc_ftello();
  char path_out[PATH_MAX], path_fd[PATH_MAX], path_in[PATH_MAX];
  snprintf(path_out, sizeof path_out, "%s/out.txt", argv[1]);
  snprintf(path_fd, sizeof path_fd, "%s/fd.txt", argv[1]);
  snprintf(path_in, sizeof path_in, "%s/in.txt", argv[1]);

  /* --- stdout onto out.txt -------------------------------------------------- */
  CHECK(freopen(path_out, "w", stdout) == stdout);
  snprintf(fd_path[fileno(stdout)], PATH_MAX, "%s", path_out);
  emit("freopen", fileno(stdout), NA, NA, NA, fileno(stdout));
  IO(N_PRINTF, stdout, r_, printf("%d lines of %s\n", 3, "text"));
  IO("vprintf", stdout, r_, my_vprintf("%s=%d\n", "x", 42));
  IO("puts", stdout, 6, puts("hello"));
  IO("putchar", stdout, 1, g_putchar('!'));
  IO("putc_unlocked", stdout, 1, g_putc_unlocked('a', stdout));
  IO("fputc_unlocked", stdout, 1, g_fputc_unlocked('b', stdout));
  IO("putchar_unlocked", stdout, 1, g_putchar_unlocked('c'));
  FLUSH(stdout);

  /* --- stdin onto stdin.txt ------------------------------------------------- */
  char path_stdin[PATH_MAX];
  snprintf(path_stdin, sizeof path_stdin, "%s/stdin.txt", argv[1]);
  FILE* w = do_fopen("fopen", fopen, path_stdin, "w");
  IO("fputs", w, 10, fputs("5 16 xyzw\n", w));
  do_fclose(w);
  CHECK(freopen(path_stdin, "r", stdin) == stdin);
  snprintf(fd_path[fileno(stdin)], PATH_MAX, "%s", path_stdin);
  emit("freopen", fileno(stdin), NA, NA, NA, fileno(stdin));
  int v = 0;
  IO("scanf", stdin, 0, scanf("%d", &v));
  CHECK(v == 5);
  IO("vscanf", stdin, 0, my_vscanf("%d", &v));
  CHECK(v == 16);
  IO("getchar", stdin, 1, g_getchar());
  IO("getchar_unlocked", stdin, 1, g_getchar_unlocked());
  IO("fgetc_unlocked", stdin, 1, g_fgetc_unlocked(stdin));
  IO("getc_unlocked", stdin, 1, g_getc_unlocked(stdin));

  /* --- fd.txt: dprintf, then write() where it left the position ------------- */
  int fd = open(path_fd, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0);
  snprintf(fd_path[fd], PATH_MAX, "%s", path_fd);
  fprintf(stderr, "EV\tname=open\tfd=%d\tpath=%s\tret=%d\terrno=0\n", fd, path_fd, fd);
  FDIO("dprintf", fd, dprintf(fd, "step %d of %d\n", 1, 10));
  FDIO("vdprintf", fd, my_vdprintf(fd, "loss %.2f\n", 0.25));
  FDIO("write", fd, write(fd, "tail\n", 5));
  CHECK(close(fd) == 0);
  fprintf(stderr, "EV\tname=close\tfd=%d\tpath=%s\tret=0\terrno=0\n", fd, path_fd);

  /* --- in.txt: fputs_unlocked, then vfscanf and fgets_unlocked ------------- */
  FILE* f = do_fopen("fopen", fopen, path_in, "w+");
  IO("fputs_unlocked", f, 14, fputs_unlocked("7 11 the rest\n", f));
  SEEK("fseek", f, fseek(f, 0, SEEK_SET));
  int x = 0, y = 0;
  IO("vfscanf", f, 0, my_vfscanf(f, "%d %d", &x, &y));
  CHECK(x == 7 && y == 11);
  char buf[64];
  GETS("fgets_unlocked", f, 64, fgets_unlocked(buf, 64, f));
  SEEK("fseek", f, fseek(f, 2, SEEK_SET));
  IO(N_FREAD_UNLOCKED, f, g_four, fread_unlocked(buf, 1, g_four, f));
  GETS(N_FGETS_UNLOCKED, f, g_line, fgets_unlocked(buf, g_line, f));
  do_fclose(f);

  /* --- mix.dat: raw calls on an fd a stream moves --------------------------- */
  char path_mix[PATH_MAX];
  snprintf(path_mix, sizeof path_mix, "%s/mix.dat", argv[1]);
  int raw = open(path_mix, O_RDWR | O_CREAT | O_TRUNC, 0644);
  CHECK(raw >= 0);
  snprintf(fd_path[raw], PATH_MAX, "%s", path_mix);
  fprintf(stderr, "EV\tname=open\tfd=%d\tpath=%s\tret=%d\terrno=0\n", raw, path_mix, raw);
  static char block[8192];
  FDIO("write", raw, write(raw, block, sizeof block));
  CHECK(lseek(raw, 0, SEEK_SET) == 0);
  fprintf(stderr, "EV\tname=lseek\tfd=%d\tpath=%s\toffset=0\tret=0\terrno=0\n", raw, path_mix);
  FILE* s = fdopen(raw, "r+");
  CHECK(s != NULL);
  emit("fdopen", raw, NA, NA, NA, raw);
  char ten[10];
  IO("fread", s, 10, fread(ten, 1, 10, s));
  /* The stream read ahead: the fd's position is where the kernel left it. */
  FDIO("read", raw, read(raw, block, 100));
  int tail = open(path_mix, O_WRONLY);
  CHECK(tail >= 0);
  snprintf(fd_path[tail], PATH_MAX, "%s", path_mix);
  fprintf(stderr, "EV\tname=open\tfd=%d\tpath=%s\tret=%d\terrno=0\n", tail, path_mix, tail);
  CHECK(fdopen(tail, "a") != NULL); /* turns O_APPEND on */
  emit("fdopen", tail, NA, NA, NA, tail);
  long long at = raw_file_size(tail);
  long long wrote = write(tail, "abc", 3);
  emit("write", tail, at, 3, 3, wrote); /* at the end, not at 0 */

  fprintf(stderr, "FORT\t%d\n", FORT);
  return 0;
}
