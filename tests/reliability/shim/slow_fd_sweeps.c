/* Preloaded after libdlprof.so: the tracer's close_range and dup2 wrappers
 * find these as the "real" calls (dlsym RTLD_NEXT), which sleep
 * SLOW_SWEEP_US microseconds (default 50) before the real one. That is the
 * moment between the wrapper's look for a descriptor of the tracer's and
 * the system call that a thread preempted on a busy machine spends there:
 * widened, a flusher that opened the trace in it lost it to the sweep
 * (test_fds.py, CloseFdsTest). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

static void Pause(void) {
  static long us = -1;
  if (us < 0) {
    const char* s = getenv("SLOW_SWEEP_US");
    us = s != NULL ? atol(s) : 50;
  }
  struct timespec ts = {0, us * 1000};
  nanosleep(&ts, NULL);
}

int close_range(unsigned first, unsigned last, int flags) {
  static int (*real)(unsigned, unsigned, int);
  if (real == NULL) real = (int (*)(unsigned, unsigned, int))dlsym(RTLD_NEXT, "close_range");
  Pause();
  return real(first, last, flags);
}

int dup2(int from, int to) {
  static int (*real)(int, int);
  if (real == NULL) real = (int (*)(int, int))dlsym(RTLD_NEXT, "dup2");
  Pause();
  return real(from, to);
}
