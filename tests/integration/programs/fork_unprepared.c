/* Forks that run no pthread_atfork handler: glibc's _Fork, and a fork made
 * by the system call itself. The child wrote into its parent's rings,
 * shared through the sidecar: its events under its parent's pid, and, when
 * both wrote at once, a corrupt trace and a crashed flusher.
 *
 * usage: fork_unprepared _Fork|syscall OUT WRITE_FILE
 *        fork_unprepared storm|clone_storm OUT
 *
 * The parent writes OUT 100 bytes and forks; the child writes OUT.child
 * 2000 times 100 bytes, then execs WRITE_FILE OUT.exec 5000; once it is
 * done, the parent writes OUT 1999 times more.
 * Prints "PARENT <pid> CHILD <pid> STATUS <status>".
 *
 * storm: 300 times, the parent writes OUT 100 bytes and _Forks a child that
 * opens OUT.child and exits (clone_storm: a child of glibc's clone() with no
 * CLONE_VM, which runs no pthread_atfork handler either): a child made while the parent's flusher held a
 * descriptor of its own low (1 fork in 100 or so with DLPROF_FLUSH_MS=1)
 * must not wait for it. Prints "STORM <children that exited 0>". */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>

#include "common.h"

pid_t _Fork(void);

/* Writes `fd` `n` times 100 bytes, over some 20 ms for 2000: the parent's
 * flusher (DLPROF_FLUSH_MS=1) passes meanwhile. */
static void write_many(int fd, int n) {
  static char buf[100];
  memset(buf, 'u', sizeof(buf));
  for (int i = 0; i < n; ++i) {
    CHECK(write(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf));
    if (i % 100 == 99) usleep(1000);
  }
  CHECK(close(fd) == 0);
}

static char g_child_out[4096];

static int open_child_out(void* arg) {
  (void)arg;
  return open(g_child_out, O_CREAT | O_WRONLY, 0644) >= 0 ? 0 : 1;
}

static int storm(const char* path, int by_clone) {
  char* child_out = g_child_out;
  snprintf(child_out, sizeof(g_child_out), "%s.child", path);
  int out = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  CHECK(out >= 0);
  static char buf[100];
  static char stack[64 << 10];
  int good = 0;
  for (int i = 0; i < 300; ++i) {
    CHECK(write(out, buf, sizeof(buf)) == (ssize_t)sizeof(buf));
    const pid_t pid = by_clone ? clone(open_child_out, stack + sizeof(stack), SIGCHLD, NULL)
                               : _Fork();
    CHECK(pid >= 0);
    if (pid == 0) _exit(open_child_out(NULL));
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    good += WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  CHECK(close(out) == 0);
  printf("STORM %d\n", good);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "storm") == 0) return storm(argv[2], 0);
  if (argc == 3 && strcmp(argv[1], "clone_storm") == 0) return storm(argv[2], 1);
  CHECK(argc == 4);
  static char child_out[4096], exec_out[4096];
  snprintf(child_out, sizeof(child_out), "%s.child", argv[2]);
  snprintf(exec_out, sizeof(exec_out), "%s.exec", argv[2]);
  /* The parent's first write before the fork: its thread records in its
   * ring from then on, which the child inherits. */
  int out = open(argv[2], O_CREAT | O_WRONLY | O_TRUNC, 0644);
  CHECK(out >= 0);
  static char first[100];
  CHECK(write(out, first, sizeof(first)) == (ssize_t)sizeof(first));
  fflush(stdout);
  const pid_t pid = strcmp(argv[1], "_Fork") == 0 ? _Fork() : (pid_t)syscall(SYS_fork);
  CHECK(pid >= 0);
  if (pid == 0) {
    close(out);
    int fd = open(child_out, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    CHECK(fd >= 0);
    write_many(fd, 2000);
    char* args[] = {argv[3], exec_out, "5000", NULL};
    execv(args[0], args);
    _exit(51);
  }
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  write_many(out, 1999);
  printf("PARENT %d CHILD %d STATUS %d\n", raw_getpid(), (int)pid, status);
  return 0;
}
