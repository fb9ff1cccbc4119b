/* Preloaded ahead of libdlprof.so by the symlink test: CLOCK_MONOTONIC_RAW
 * reads FAKECLOCK_NS (nanoseconds) every time, so the trace file name
 * <exe>-<host>-<pid>-<monotonic ns in hex>.dlprof of a process is known
 * before it starts. Every other clock is the real one. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

int clock_gettime(clockid_t id, struct timespec* ts) {
  static int (*real)(clockid_t, struct timespec*);
  if (id == CLOCK_MONOTONIC_RAW) {
    const char* v = getenv("FAKECLOCK_NS");
    if (v != NULL) {
      unsigned long long ns = strtoull(v, NULL, 10);
      ts->tv_sec = (time_t)(ns / 1000000000ull);
      ts->tv_nsec = (long)(ns % 1000000000ull);
      return 0;
    }
  }
  if (real == NULL) real = (int (*)(clockid_t, struct timespec*))dlsym(RTLD_NEXT, "clock_gettime");
  return real(id, ts);
}
