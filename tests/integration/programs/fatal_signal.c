/* Makes a known number of traced calls, then dies of a signal.
 *
 * usage: fatal_signal DIR N MODE [SIG]
 *
 * Writes N files DIR/f<k> (open, a 100-byte write, close: 3N events), then:
 *   raise SIG    kill(getpid(), SIG)
 *   timer        SIGALRM from an interval timer, waiting in pause()
 *   abort        abort()
 *   segv         a store through a null pointer (the kernel's SIGSEGV)
 *   overflow     a recursion without end (SIGSEGV on the stack's guard page,
 *                which no handler without an alternate stack can take)
 *   bus          a load from a shared mapping past the end of its file
 *   fpe          an integer division by zero
 *   pipe         a write into a pipe nobody reads
 *   wait         prints "DONE <pid>" and blocks on stdin (the test kills it)
 *   fork         forks; the child writes the same N files again (names its
 *                parent interned), prints "DONE <child pid>" and blocks on
 *                stdin (the test kills it); the parent waits for it and
 *                then SIGKILLs itself
 *   handler SIG  its own handler for SIG (prints HANDLED, writes one more
 *                file, exits 3), then raise
 *   reset SIG    its own handler for SIG, then SIG_DFL back with sigaction;
 *                prints what sigaction says is there ("RESET dfl|other"),
 *                then raise
 *   query        prints what sigaction says of every signal 1..SIGRTMAX
 *                ("<sig> dfl|ign|other"), then exits 0
 *
 * Nothing in the output depends on the run but the pid of "DONE". */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "common.h"

static const char* dir;
static int* volatile null_pointer;
static volatile int zero;
static volatile int sink;

/* Each frame keeps 1 KiB the compiler cannot drop. */
static long recurse(long depth) {
  if (depth < 0) return 0; /* never: the stack ends first */
  volatile char frame[1024];
  frame[depth % sizeof(frame)] = (char)depth;
  return recurse(depth + 1) + frame[0];
}

static void write_file(long k) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/f%ld", dir, k);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  CHECK(fd >= 0);
  char buf[100];
  memset(buf, 'x', sizeof(buf));
  CHECK(write(fd, buf, sizeof(buf)) == 100);
  CHECK(close(fd) == 0);
}

static long files;

static void on_signal(int sig) {
  (void)sig;
  write_file(files);
  static const char msg[] = "HANDLED\n";
  CHECK(write(1, msg, sizeof(msg) - 1) == sizeof(msg) - 1);
  _exit(3);
}

static void own_handler(int sig) {
  struct sigaction act;
  memset(&act, 0, sizeof(act));
  act.sa_handler = on_signal;
  sigemptyset(&act.sa_mask);
  CHECK(sigaction(sig, &act, NULL) == 0);
}

static const char* describe(int sig) {
  struct sigaction old;
  if (sigaction(sig, NULL, &old) != 0) return "error";
  if (old.sa_flags & SA_SIGINFO) return "other";
  if (old.sa_handler == SIG_DFL) return "dfl";
  return old.sa_handler == SIG_IGN ? "ign" : "other";
}

int main(int argc, char** argv) {
  CHECK(argc == 4 || argc == 5);
  dir = argv[1];
  files = atol(argv[2]);
  const char* mode = argv[3];
  int sig = argc == 5 ? atoi(argv[4]) : 0;
  for (long k = 0; k < files; ++k) write_file(k);
  fflush(stdout);
  if (strcmp(mode, "raise") == 0) {
    kill(getpid(), sig);
  } else if (strcmp(mode, "timer") == 0) {
    struct itimerval it = {{0, 10000}, {0, 10000}};
    CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0);
    for (;;) pause();
  } else if (strcmp(mode, "abort") == 0) {
    abort();
  } else if (strcmp(mode, "segv") == 0) {
    *null_pointer = 1;
  } else if (strcmp(mode, "overflow") == 0) {
    sink = (int)recurse(0);
  } else if (strcmp(mode, "bus") == 0) {
    int fd = memfd_create("bus", 0);
    CHECK(fd >= 0);
    volatile char* p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    CHECK(p != MAP_FAILED);
    sink = p[0];
  } else if (strcmp(mode, "fpe") == 0) {
    sink = (int)files / zero; /* 1 / x GCC computes without a division */
  } else if (strcmp(mode, "pipe") == 0) {
    int p[2];
    CHECK(pipe(p) == 0);
    CHECK(close(p[0]) == 0);
    CHECK(write(p[1], "x", 1) == 1);
  } else if (strcmp(mode, "wait") == 0) {
    printf("DONE %d\n", raw_getpid());
    fflush(stdout);
    char line[16];
    CHECK(read(0, line, sizeof(line)) >= 0);
  } else if (strcmp(mode, "fork") == 0) {
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
      for (long k = 0; k < files; ++k) write_file(k);
      printf("DONE %d\n", raw_getpid());
      fflush(stdout);
      char line[16];
      CHECK(read(0, line, sizeof(line)) >= 0);
      _exit(0);
    }
    int status;
    CHECK(waitpid(child, &status, 0) == child);
    kill(getpid(), SIGKILL);
  } else if (strcmp(mode, "handler") == 0) {
    own_handler(sig);
    kill(getpid(), sig);
  } else if (strcmp(mode, "reset") == 0) {
    own_handler(sig);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    struct sigaction old;
    CHECK(sigaction(sig, &dfl, &old) == 0);
    printf("RESET %s %s\n", old.sa_handler == on_signal ? "was-own" : "was-other",
           describe(sig));
    fflush(stdout);
    kill(getpid(), sig);
  } else if (strcmp(mode, "query") == 0) {
    for (int s = 1; s <= SIGRTMAX; ++s) printf("%d %s\n", s, describe(s));
    return 0;
  }
  printf("SURVIVED\n");
  return 0;
}
