// A slow file system for Python's imports, for
// tests/integration/test_summary_size.py: preloaded after libdlprof.so, so
// that the tracer's wrappers call these. An open of a path under one of the
// colon-separated prefixes of SLOW_IMPORTS_PREFIX first waits
// SLOW_IMPORTS_US microseconds, as a job's imports wait for a parallel file
// system's metadata server; everything else goes straight to libc. Without
// it a start-up's imports cost a few percent of a loaded test machine's
// start-up (page-cache reads), and the "startup" finding would come and go
// with the load.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int Slow(const char* path) {
  const char* prefixes = getenv("SLOW_IMPORTS_PREFIX");
  const char* us = getenv("SLOW_IMPORTS_US");
  if (path == NULL || prefixes == NULL || us == NULL) return 0;
  for (const char* p = prefixes; *p;) {
    const char* end = strchr(p, ':');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n > 0 && strncmp(path, p, n) == 0 && (path[n] == '/' || path[n] == '\0')) {
      long wait = atol(us);
      struct timespec t = {wait / 1000000, (wait % 1000000) * 1000};
      int saved = errno;
      while (nanosleep(&t, &t) != 0 && errno == EINTR) {
      }
      errno = saved;
      return 1;
    }
    if (!end) break;
    p = end + 1;
  }
  return 0;
}

#define MODE_ARG(flags, mode)                          \
  mode_t mode = 0;                                     \
  if ((flags) & (O_CREAT | O_TMPFILE)) {               \
    va_list ap;                                        \
    va_start(ap, flags);                               \
    mode = (mode_t)va_arg(ap, int);                    \
    va_end(ap);                                        \
  }

int open(const char* path, int flags, ...) {
  MODE_ARG(flags, mode);
  Slow(path);
  int (*real)(const char*, int, ...) = (int (*)(const char*, int, ...))dlsym(RTLD_NEXT, "open");
  return real(path, flags, mode);
}

int open64(const char* path, int flags, ...) {
  MODE_ARG(flags, mode);
  Slow(path);
  int (*real)(const char*, int, ...) = (int (*)(const char*, int, ...))dlsym(RTLD_NEXT, "open64");
  return real(path, flags, mode);
}

int openat(int dir, const char* path, int flags, ...) {
  MODE_ARG(flags, mode);
  Slow(path);
  int (*real)(int, const char*, int, ...) =
      (int (*)(int, const char*, int, ...))dlsym(RTLD_NEXT, "openat");
  return real(dir, path, flags, mode);
}

int openat64(int dir, const char* path, int flags, ...) {
  MODE_ARG(flags, mode);
  Slow(path);
  int (*real)(int, const char*, int, ...) =
      (int (*)(int, const char*, int, ...))dlsym(RTLD_NEXT, "openat64");
  return real(dir, path, flags, mode);
}
