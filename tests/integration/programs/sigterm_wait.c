/* Records events, then waits for a termination signal.
 *
 * usage: sigterm_wait FILE MODE
 *
 * MODE:
 *   default  no handler of its own: SIGTERM/SIGINT end the process
 *   query    like default, but first prints what sigaction() reports for
 *            SIGTERM and SIGINT ("QUERY <sig> dfl|other")
 *   handler  sigaction() handler for SIGTERM: prints HANDLED, makes 10 more
 *            preads and exits with status 3
 *   signal   the same handler installed with signal()
 *   ignore   SIGTERM ignored: waits for a line on stdin, prints SURVIVED
 *   threads  default, with a second thread making preads until the end;
 *            READY waits until that thread's first pread has returned (so
 *            it is recorded), however the threads are scheduled
 *
 * Prints "READY <pid> <preads>" (flushed) once it waits. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>

#include "common.h"

static volatile sig_atomic_t got_signal;
static int fd;
/* Set by the busy thread once its first pread has returned. */
static atomic_int busy_recorded;

static void on_term(int sig) {
  (void)sig;
  got_signal = 1;
}

static long preads(long n) {
  char buf[100];
  for (long i = 0; i < n; ++i) CHECK(pread(fd, buf, sizeof(buf), (i % 10) * 100) == 100);
  return n;
}

static void* busy(void* arg) {
  (void)arg;
  char buf[100];
  for (long i = 0;; ++i) {
    pread(fd, buf, sizeof(buf), (i % 10) * 100);
    if (i == 0) atomic_store(&busy_recorded, 1);
  }
  return NULL;
}

/* Waits (at most 60 s: a test must not hang) until the busy thread has made
 * its first pread. On two loaded cores the main thread's 5 000 preads can
 * all finish before the new thread is first scheduled. */
static void wait_for_busy(void) {
  for (long waited_ms = 0; !atomic_load(&busy_recorded); ++waited_ms) {
    if (waited_ms >= 60000) {
      fprintf(stderr, "sigterm_wait: the second thread never ran\n");
      exit(2);
    }
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
}

static const char* describe(int sig) {
  struct sigaction old;
  CHECK(sigaction(sig, NULL, &old) == 0);
  return old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO) ? "dfl" : "other";
}

int main(int argc, char** argv) {
  CHECK(argc == 3);
  const char* mode = argv[2];
  fd = open(argv[1], O_RDONLY);
  CHECK(fd >= 0);
  if (strcmp(mode, "query") == 0) {
    printf("QUERY SIGTERM %s\nQUERY SIGINT %s\n", describe(SIGTERM), describe(SIGINT));
  } else if (strcmp(mode, "handler") == 0) {
    struct sigaction act;
    memset(&act, 0, sizeof(act));
    act.sa_handler = on_term;
    sigemptyset(&act.sa_mask);
    CHECK(sigaction(SIGTERM, &act, NULL) == 0);
  } else if (strcmp(mode, "signal") == 0) {
    CHECK(signal(SIGTERM, on_term) != SIG_ERR);
  } else if (strcmp(mode, "ignore") == 0) {
    CHECK(signal(SIGTERM, SIG_IGN) != SIG_ERR);
  } else if (strcmp(mode, "threads") == 0) {
    pthread_t t;
    CHECK(pthread_create(&t, NULL, busy, NULL) == 0);
  }
  long n = preads(5000);
  if (strcmp(mode, "threads") == 0) wait_for_busy();
  /* Wait with sigsuspend: no window between the check and the wait. */
  sigset_t term, waiting;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigaddset(&term, SIGINT);
  CHECK(sigprocmask(SIG_BLOCK, &term, &waiting) == 0);
  printf("READY %d %ld\n", raw_getpid(), n);
  fflush(stdout);
  if (strcmp(mode, "ignore") == 0) {
    CHECK(sigprocmask(SIG_SETMASK, &waiting, NULL) == 0);
    char line[16];
    ssize_t r = read(0, line, sizeof(line));
    CHECK(r > 0);
    printf("SURVIVED %ld\n", preads(10));
    return 0;
  }
  while (!got_signal) sigsuspend(&waiting);
  CHECK(sigprocmask(SIG_SETMASK, &waiting, NULL) == 0);
  printf("HANDLED %ld\n", preads(10));
  exit(3);
}
