// The printf and scanf families, stdout's own calls (printf, puts,
// putchar: stdout reopened onto a file, or a job's output redirected to
// one), and dprintf. The size of a formatted write is only known
// afterwards, as its return value; what a scan consumed is the distance the
// stream's position moved. glibc's own calls inside them (printf is
// vfprintf on stdout) go through no wrapper: one call, one event.
#include <stdio.h>

#include <cstdarg>
#include <cstring>

#include "lib/intercept/describe.h"
#include "lib/intercept/stdio_streams.h"
#include "lib/intercept/wrapper.h"

using dlprof::Event;
using dlprof::EventKind;
using namespace dlprof::intercept;
using namespace dlprof::intercept::stdio;

extern "C" {
int __isoc99_fscanf(FILE* fp, const char* fmt, ...);
int __isoc99_vfscanf(FILE* fp, const char* fmt, va_list ap);
int __isoc23_fscanf(FILE* fp, const char* fmt, ...);
int __isoc23_vfscanf(FILE* fp, const char* fmt, va_list ap);
int __isoc99_scanf(const char* fmt, ...);
int __isoc99_vscanf(const char* fmt, va_list ap);
int __isoc23_scanf(const char* fmt, ...);
int __isoc23_vscanf(const char* fmt, va_list ap);
int __fprintf_chk(FILE* fp, int flag, const char* fmt, ...);
int __vfprintf_chk(FILE* fp, int flag, const char* fmt, va_list ap);
int __printf_chk(int flag, const char* fmt, ...);
int __vprintf_chk(int flag, const char* fmt, va_list ap);
int __dprintf_chk(int fd, int flag, const char* fmt, ...);
int __vdprintf_chk(int fd, int flag, const char* fmt, va_list ap);
}

// --- the printf family -----------------------------------------------------

template <typename Vprint>
static int TracedPrintf(EventKind kind, FILE* fp, Vprint&& vprint) {
  const StreamPosition pos(fp);
  return Traced<int>(
      kind, vprint,
      [&](Event& e, int r, int err) {
        e.err = StreamError(fp, r < 0, err);
        uint64_t n = r > 0 ? static_cast<uint64_t>(r) : 0;
        return DescribeStream(e, fp, pos, n, n);
      });
}
DLPROF_REAL(vfprintf)
DLPROF_REAL(__vfprintf_chk)
DLPROF_REAL(vprintf)
DLPROF_REAL(__vprintf_chk)
extern "C" int vfprintf(FILE* fp, const char* fmt, va_list ap) {
  return TracedPrintf(EventKind::Vfprintf, fp, [&] { return real_vfprintf(fp, fmt, ap); });
}
extern "C" int fprintf(FILE* fp, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = TracedPrintf(EventKind::Fprintf, fp, [&] { return real_vfprintf(fp, fmt, ap); });
  va_end(ap);
  return r;
}
extern "C" int __vfprintf_chk(FILE* fp, int flag, const char* fmt, va_list ap) {
  return TracedPrintf(EventKind::VfprintfChk, fp,
                      [&] { return real___vfprintf_chk(fp, flag, fmt, ap); });
}
extern "C" int __fprintf_chk(FILE* fp, int flag, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = TracedPrintf(EventKind::FprintfChk, fp,
                       [&] { return real___vfprintf_chk(fp, flag, fmt, ap); });
  va_end(ap);
  return r;
}


// printf and its kin write to stdout: events when it is a traced file.
extern "C" int vprintf(const char* fmt, va_list ap) {
  return TracedPrintf(EventKind::Vprintf, stdout, [&] { return real_vprintf(fmt, ap); });
}
extern "C" int printf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = TracedPrintf(EventKind::Printf, stdout, [&] { return real_vprintf(fmt, ap); });
  va_end(ap);
  return r;
}
extern "C" int __vprintf_chk(int flag, const char* fmt, va_list ap) {
  return TracedPrintf(EventKind::VprintfChk, stdout,
                      [&] { return real___vprintf_chk(flag, fmt, ap); });
}
extern "C" int __printf_chk(int flag, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = TracedPrintf(EventKind::PrintfChk, stdout,
                       [&] { return real___vprintf_chk(flag, fmt, ap); });
  va_end(ap);
  return r;
}

DLPROF_REAL(puts)
extern "C" int puts(const char* s) {
  const StreamPosition pos(stdout);
  return Traced<int>(
      EventKind::Puts, [&] { return real_puts(s); },
      [&](Event& e, int r, int err) {
        e.err = StreamError(stdout, r == EOF, err);
        const size_t len = (s ? strlen(s) : 0) + 1;  // and the newline
        return DescribeStream(e, stdout, pos, len, r == EOF ? 0 : len);
      });
}
// putchar and getchar, and their unlocked forms: a character on stdout or
// from stdin.
#define DLPROF_STD_CHAR(fn, kind, stream, lock, call, ...)                      \
  DLPROF_REAL(fn)                                                               \
  extern "C" int fn(__VA_ARGS__) {                                              \
    const StreamPosition pos(stream, lock);                                     \
    return Traced<int>(                                                         \
        EventKind::kind, [&] { return call; },                                  \
        [&](Event& e, int r, int err) {                                         \
          e.err = StreamError(stream, r == EOF, err);                      \
          return DescribeStream(e, stream, pos, 1, r == EOF ? 0 : 1);           \
        });                                                                     \
  }
DLPROF_STD_CHAR(putchar, Putchar, stdout, true, real_putchar(c), int c)
DLPROF_STD_CHAR(putchar_unlocked, PutcharUnlocked, stdout, false, real_putchar_unlocked(c), int c)
DLPROF_STD_CHAR(getchar, Getchar, stdin, true, real_getchar(), void)
DLPROF_STD_CHAR(getchar_unlocked, GetcharUnlocked, stdin, false, real_getchar_unlocked(), void)

// dprintf writes to a descriptor, at its position, as write() does (and the
// fd table's position follows it: a later write is recorded where it
// lands).
template <typename Vprint>
static int TracedDprintf(EventKind kind, int fd, Vprint&& vprint) {
  return Traced<int>(kind, vprint, [&](Event& e, int r, int) {
    const uint64_t n = r > 0 ? static_cast<uint64_t>(r) : 0;
    if (!DescribeStreamIo(e, fd, n, r)) return false;
    e.aux = n;  // a stdio event's bytes moved
    return true;
  });
}
DLPROF_REAL(vdprintf)
DLPROF_REAL(__vdprintf_chk)
extern "C" int vdprintf(int fd, const char* fmt, va_list ap) {
  return TracedDprintf(EventKind::Vdprintf, fd, [&] { return real_vdprintf(fd, fmt, ap); });
}
extern "C" int dprintf(int fd, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = TracedDprintf(EventKind::Dprintf, fd, [&] { return real_vdprintf(fd, fmt, ap); });
  va_end(ap);
  return r;
}
// (The fortified forms are recorded under the plain names.)
extern "C" int __vdprintf_chk(int fd, int flag, const char* fmt, va_list ap) {
  return TracedDprintf(EventKind::Vdprintf, fd,
                       [&] { return real___vdprintf_chk(fd, flag, fmt, ap); });
}
extern "C" int __dprintf_chk(int fd, int flag, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = TracedDprintf(EventKind::Dprintf, fd,
                        [&] { return real___vdprintf_chk(fd, flag, fmt, ap); });
  va_end(ap);
  return r;
}

// --- the scanf family ---------------------------------------------------------

template <typename Vscan>
static int TracedFscanf(EventKind kind, Vscan vscan, FILE* fp, const char* fmt, va_list ap) {
  const StreamPosition pos(fp);
  return Traced<int>(
      kind, [&] { return vscan(fp, fmt, ap); },
      [&](Event& e, int r, int err) {
        e.err = StreamError(fp, r == EOF, err);
        int64_t after = pos >= 0 ? Tell(fp) : -1;
        return DescribeStream(e, fp, pos, 0, after > pos ? after - pos : 0);
      });
}
// A variadic scan under one of its names (`decl`: name and parameters):
// its va_list form over `fp`.
#define DLPROF_SCAN(decl, kind, real_vscan, fp)                        \
  extern "C" int decl {                                                \
    va_list ap;                                                        \
    va_start(ap, fmt);                                                 \
    int r = TracedFscanf(EventKind::kind, real_vscan, fp, fmt, ap);    \
    va_end(ap);                                                        \
    return r;                                                          \
  }
DLPROF_REAL(vfscanf)
DLPROF_REAL(__isoc99_vfscanf)
// glibc's headers rename fscanf to __isoc99_fscanf for C99 programs; the
// plain symbol (older binaries) needs its name spelled out.
extern "C" int dlprof_plain_fscanf(FILE* fp, const char* fmt, ...) __asm__("fscanf");
DLPROF_SCAN(dlprof_plain_fscanf(FILE* fp, const char* fmt, ...), Fscanf, real_vfscanf, fp)
DLPROF_SCAN(__isoc99_fscanf(FILE* fp, const char* fmt, ...), Fscanf, real___isoc99_vfscanf, fp)

// glibc >= 2.38 renames them again for C2x programs and _GNU_SOURCE ones
// (where the C library lacks them, no program calls them).
DLPROF_REAL(__isoc23_vfscanf)
DLPROF_SCAN(__isoc23_fscanf(FILE* fp, const char* fmt, ...), Fscanf, real___isoc23_vfscanf, fp)
// The va_list forms, under each of their names (the plain one spelled out,
// as fscanf's).
extern "C" int dlprof_plain_vfscanf(FILE* fp, const char* fmt, va_list ap) __asm__("vfscanf");
extern "C" int dlprof_plain_vfscanf(FILE* fp, const char* fmt, va_list ap) {
  return TracedFscanf(EventKind::Vfscanf, real_vfscanf, fp, fmt, ap);
}
extern "C" int __isoc99_vfscanf(FILE* fp, const char* fmt, va_list ap) {
  return TracedFscanf(EventKind::Vfscanf, real___isoc99_vfscanf, fp, fmt, ap);
}
extern "C" int __isoc23_vfscanf(FILE* fp, const char* fmt, va_list ap) {
  return TracedFscanf(EventKind::Vfscanf, real___isoc23_vfscanf, fp, fmt, ap);
}

// scanf and vscanf: fscanf of stdin, under each of their names.
extern "C" int dlprof_plain_scanf(const char* fmt, ...) __asm__("scanf");
DLPROF_SCAN(dlprof_plain_scanf(const char* fmt, ...), Scanf, real_vfscanf, stdin)
DLPROF_SCAN(__isoc99_scanf(const char* fmt, ...), Scanf, real___isoc99_vfscanf, stdin)
DLPROF_SCAN(__isoc23_scanf(const char* fmt, ...), Scanf, real___isoc23_vfscanf, stdin)
extern "C" int dlprof_plain_vscanf(const char* fmt, va_list ap) __asm__("vscanf");
extern "C" int dlprof_plain_vscanf(const char* fmt, va_list ap) {
  return TracedFscanf(EventKind::Vscanf, real_vfscanf, stdin, fmt, ap);
}
extern "C" int __isoc99_vscanf(const char* fmt, va_list ap) {
  return TracedFscanf(EventKind::Vscanf, real___isoc99_vfscanf, stdin, fmt, ap);
}
extern "C" int __isoc23_vscanf(const char* fmt, va_list ap) {
  return TracedFscanf(EventKind::Vscanf, real___isoc23_vfscanf, stdin, fmt, ap);
}
