/* Signals.
 *
 *   sigs handler FILE N
 *     A SIGUSR1 handler that makes one 1-byte pread at offset 100000+h (h:
 *     its own count). The main thread makes N preads at offsets 0..N-1 and
 *     raise()s SIGUSR1 after every 10th. Prints "HANDLED <h> MAIN <n>".
 *
 *   sigs async FILE N
 *     The same handler; another thread sends SIGUSR1 to the main thread
 *     with pthread_kill every ~200 us while the main thread makes N preads
 *     -- and more (offsets again from 0), until more than 10 signals were
 *     handled during them, however late the other thread gets a core (at
 *     most 60 s). Prints "HANDLED <h> MAIN <n>", n the preads it made.
 *
 *   sigs loop FILE THREADS
 *     THREADS threads make 1-byte preads at offsets 0, 1, 2, ... (each
 *     thread its own count) until the process dies; the main thread prints
 *     "READY" once every thread has made 1000, then sleeps. No handler:
 *     for SIGTERM, SIGINT and SIGKILL from the test.
 *
 *   sigs loopers FILE THREADS
 *     As loop, but the main thread blocks SIGTERM and SIGINT before it says
 *     READY: a termination signal for the process is taken by a thread that
 *     is busy making preads -- and, with small rings, often writing them to
 *     the trace inside the tracer when it comes.
 *
 *   sigs jump FILE N
 *     The classic timeout: N times, a one-shot timer's SIGALRM handler
 *     siglongjmps out of a read of an empty pipe, which never returns; the
 *     main thread then makes a 1-byte pread at offset j (j: the round).
 *     Prints "JUMPS <N> MAIN <N>".
 *
 *   sigs jumpasync FILE N
 *     Another thread sends SIGUSR2 to the main thread every ~100 us while it
 *     makes 1-byte preads at offsets 0, 1, 2, ...; the handler makes a
 *     1-byte pread at offset 100000+h (h: its count) and siglongjmps back
 *     to the main loop, out of whatever it interrupted, the tracer's code
 *     too. Stops once N jumps were made (at most 60 s). Prints
 *     "JUMPS <h> MAIN <n>", n the preads that returned to the main loop.
 *
 *   sigs pause FILE THREADS N
 *     THREADS threads make N preads each at offsets 0..N-1, then the main
 *     thread prints "PAUSED" and sleeps until killed.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/time.h>
#include <time.h>

#include "rel.h"

static int fd;
static volatile sig_atomic_t handled;
static atomic_int stop;
static atomic_long progress[64];

static void on_usr1(int sig) {
  (void)sig;
  int saved = errno;
  char c;
  if (pread(fd, &c, 1, 100000 + handled) == 1) ++handled;
  errno = saved;
}

/* More than `seconds` since `t0`. */
static int past(const struct timespec* t0, long seconds) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec - t0->tv_sec > seconds;
}

static int kick_signal = SIGUSR1;

static void* kicker(void* arg) {
  pthread_t main_thread = *(pthread_t*)arg;
  struct timespec ts = {0, kick_signal == SIGUSR1 ? 200000 : 100000};
  while (!atomic_load(&stop)) {
    pthread_kill(main_thread, kick_signal);
    nanosleep(&ts, NULL);
  }
  return NULL;
}

static void* looper(void* arg) {
  long k = (long)arg;
  char c;
  for (long n = 0;; ++n) {
    CHECK(pread(fd, &c, 1, n) >= 0);
    atomic_store(&progress[k], n + 1);
  }
  return NULL;
}

static sigjmp_buf jump_back;
static volatile sig_atomic_t jumps;

static void on_jump(int sig) {
  (void)sig;
  char c;
  if (sig == SIGUSR2) CHECK(pread(fd, &c, 1, 100000 + jumps) == 1);
  ++jumps;
  siglongjmp(jump_back, 1);
}

static void on_signal_jump(int sig) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_jump;
  sigemptyset(&sa.sa_mask);
  CHECK(sigaction(sig, &sa, NULL) == 0);
}

/* jump: a read that times out, N times over. */
static int timeouts(long n) {
  int p[2];
  CHECK(pipe(p) == 0);
  on_signal_jump(SIGALRM);
  long done = 0;
  char c;
  for (volatile long j = 0; j < n; ++j) {
    if (sigsetjmp(jump_back, 1) == 0) {
      struct itimerval once = {{0, 0}, {0, 2000}};
      CHECK(setitimer(ITIMER_REAL, &once, NULL) == 0);
      CHECK(read(p[0], &c, 1) == 1 && !"an empty pipe gave a byte");
    }
    CHECK(pread(fd, &c, 1, j) == 1);
    ++done;
  }
  printf("JUMPS %ld MAIN %ld\n", (long)jumps, done);
  return 0;
}

/* jumpasync: jumps out of whatever the main thread was doing. */
static int jumps_anywhere(long n) {
  on_signal_jump(SIGUSR2);
  /* No signal before the jump's target is set: blocked until then (one
   * that came first jumped to an empty sigjmp_buf). */
  sigset_t usr2;
  sigemptyset(&usr2);
  sigaddset(&usr2, SIGUSR2);
  CHECK(pthread_sigmask(SIG_BLOCK, &usr2, NULL) == 0);
  pthread_t self = pthread_self(), t;
  kick_signal = SIGUSR2;
  CHECK(pthread_create(&t, NULL, kicker, &self) == 0);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  volatile long done = 0;
  char c;
  /* The mask is not saved: after a jump, the handler's (SIGUSR2 blocked)
   * is still on, and is taken off here, as at the start. */
  sigsetjmp(jump_back, 0);
  CHECK(pthread_sigmask(SIG_UNBLOCK, &usr2, NULL) == 0);
  while (jumps < n && !past(&t0, 60)) {
    if (pread(fd, &c, 1, done % 100000) == 1) ++done;
  }
  /* A signal that came since jumped back above and left again. */
  CHECK(pthread_sigmask(SIG_BLOCK, &usr2, NULL) == 0);
  atomic_store(&stop, 1);
  CHECK(pthread_join(t, NULL) == 0);
  printf("JUMPS %ld MAIN %ld\n", (long)jumps, (long)done);
  return 0;
}

static long pause_n;
static void* pauser(void* arg) {
  long k = (long)arg;
  char c;
  for (long n = 0; n < pause_n; ++n) CHECK(pread(fd, &c, 1, n) == 1);
  atomic_store(&progress[k], pause_n);
  return NULL;
}

int main(int argc, char** argv) {
  CHECK(argc >= 4);
  const char* mode = argv[1];
  fd = open(argv[2], O_RDONLY);
  CHECK(fd >= 0);
  char c;
  if (strcmp(mode, "jump") == 0) return timeouts(atol(argv[3]));
  if (strcmp(mode, "jumpasync") == 0) return jumps_anywhere(atol(argv[3]));
  if (strcmp(mode, "handler") == 0 || strcmp(mode, "async") == 0) {
    long n = atol(argv[3]);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
    pthread_t self = pthread_self(), t;
    int async = strcmp(mode, "async") == 0;
    if (async) CHECK(pthread_create(&t, NULL, kicker, &self) == 0);
    long done = 0;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n || (async && handled <= 10 && !past(&t0, 60)); ++i) {
      CHECK(pread(fd, &c, 1, i % n) == 1);
      ++done;
      if (!async && i % 10 == 9) raise(SIGUSR1);
    }
    if (async) {
      atomic_store(&stop, 1);
      CHECK(pthread_join(t, NULL) == 0);
    }
    /* No more signals can come: the handler count is final. */
    printf("HANDLED %ld MAIN %ld\n", (long)handled, done);
    return 0;
  }
  int threads = atoi(argv[3]);
  CHECK(threads > 0 && threads <= 64);
  pthread_t t[64];
  if (strcmp(mode, "loop") == 0 || strcmp(mode, "loopers") == 0) {
    for (long k = 0; k < threads; ++k) CHECK(pthread_create(&t[k], NULL, looper, (void*)k) == 0);
    /* Wait for the state the test needs (every thread 1000 preads in), at
     * most 60 s in all so that a test cannot hang. */
    long waited_ms = 0;
    for (int k = 0; k < threads; ++k) {
      while (atomic_load(&progress[k]) < 1000) {
        CHECK(waited_ms++ < 60000);
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
      }
    }
    if (strcmp(mode, "loopers") == 0) {
      sigset_t term;
      sigemptyset(&term);
      sigaddset(&term, SIGTERM);
      sigaddset(&term, SIGINT);
      CHECK(pthread_sigmask(SIG_BLOCK, &term, NULL) == 0);
    }
    raw_say("READY\n");
    for (;;) pause();
  }
  if (strcmp(mode, "pause") == 0) {
    CHECK(argc == 5);
    pause_n = atol(argv[4]);
    for (long k = 0; k < threads; ++k) CHECK(pthread_create(&t[k], NULL, pauser, (void*)k) == 0);
    for (int k = 0; k < threads; ++k) CHECK(pthread_join(t[k], NULL) == 0);
    raw_say("PAUSED\n");
    for (;;) pause();
  }
  CHECK(!"unknown mode");
  return 1;
}
