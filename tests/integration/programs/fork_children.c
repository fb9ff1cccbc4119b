/* A parent that forks children which read files and leave with _exit.
 *
 * usage: fork_children EXIT FILE0 FILE1 ...
 *
 * EXIT is how the children leave: _exit, _Exit, exit, quick_exit or return
 * (from the child's function into exit()). Before forking, the parent reads FILE0 to
 * the end (its events are still in its buffers at the fork) and starts a
 * thread that preads FILE0 until every child is done, so the children are
 * forked while another thread records events. Child i reads FILE<i> to the
 * end in 1000-byte reads.
 *
 * Prints "PARENT <pid> <bytes of FILE0>", "CHILD <pid> <ppid> <i> <bytes>"
 * per child, "THREAD <tid> <preads>" and "WAITED <pid> <status>". */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "common.h"

static const char* file0;
static atomic_int stop_thread;
static atomic_int thread_started;

static long read_all(const char* path, size_t chunk) {
  char buf[4096];
  int fd = open(path, O_RDONLY);
  CHECK(fd >= 0);
  long total = 0;
  ssize_t r;
  while ((r = read(fd, buf, chunk)) > 0) total += r;
  CHECK(r == 0);
  CHECK(close(fd) == 0);
  return total;
}

static void* preader(void* arg) {
  (void)arg;
  char buf[64];
  int fd = open(file0, O_RDONLY);
  CHECK(fd >= 0);
  long n = 0;
  while (!atomic_load(&stop_thread)) {
    CHECK(pread(fd, buf, sizeof(buf), (n % 16) * 64) >= 0);
    ++n;
    /* From its first recorded pread on, the thread is recording. */
    if (n == 1) atomic_store(&thread_started, 1);
  }
  CHECK(close(fd) == 0);
  printf("THREAD %d %ld\n", raw_gettid(), n);
  return NULL;
}

static int child_main(int i, const char* path) {
  long bytes = read_all(path, 1000);
  dprintf(1, "CHILD %d %d %d %ld\n", raw_getpid(), (int)getppid(), i, bytes);
  return 0;
}

int main(int argc, char** argv) {
  CHECK(argc >= 3);
  const char* how = argv[1];
  file0 = argv[2];
  int children = argc - 2;
  long parent_bytes = read_all(file0, 4096);
  printf("PARENT %d %ld\n", raw_getpid(), parent_bytes);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, preader, NULL) == 0);
  /* The children are forked while the thread records: wait (at most 60 s,
   * so that a test cannot hang) until it has made a pread. */
  for (long waited = 0; !atomic_load(&thread_started); ++waited) {
    if (waited >= 600000) {
      fprintf(stderr, "fork_children: the pread thread never ran\n");
      return 2;
    }
    usleep(100);
  }
  pid_t pids[64];
  CHECK(children <= 64);
  for (int i = 0; i < children; ++i) {
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      int rc = child_main(i, argv[2 + i]);
      if (strcmp(how, "_exit") == 0) _exit(rc);
      if (strcmp(how, "_Exit") == 0) _Exit(rc);
      if (strcmp(how, "exit") == 0) exit(rc);
      if (strcmp(how, "quick_exit") == 0) quick_exit(rc);
      return rc; /* "return": out of main, into exit() */
    }
    pids[i] = pid;
  }
  for (int i = 0; i < children; ++i) {
    int status = 0;
    CHECK(waitpid(pids[i], &status, 0) == pids[i]);
    printf("WAITED %d %d\n", (int)pids[i], status);
  }
  atomic_store(&stop_thread, 1);
  pthread_join(t, NULL);
  return 0;
}
