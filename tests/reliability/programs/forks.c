/* Processes: fork storms, fork from a busy multi-threaded parent, vfork,
 * posix_spawn, and exec into an untraced program.
 *
 *   forks storm FILE N
 *     Opens FILE, starts N children at once; child i makes 3 one-byte
 *     preads at offsets 3i..3i+2 on the inherited fd, opens FILE again and
 *     makes one pread at offset 100000+i, closes it and ends through
 *     exit(), _exit() or a return from main (i % 3). The parent waits for
 *     all and prints "CHILD <i> <pid> <status>".
 *
 *   forks busy FILE N
 *     4 threads make 1-byte preads in a loop on a shared fd (offsets
 *     0..999, round and round) while the main thread forks N children one
 *     after the other; each child makes 2 preads at offset 5000+i and
 *     _exit(0)s. The parent prints "CHILD <i> <pid> <status>" and each
 *     worker "WORKER <tid> <preads>".
 *
 *   forks spawn FILE SELF
 *     Children that run SELF child FILE TAG: by vfork+execve ("vfork"), by
 *     posix_spawn ("spawn"), by fork+execve with LD_PRELOAD removed from the
 *     environment ("untraced"), and a vfork child that _exit()s without
 *     exec. Prints "SPAWNED <tag> <pid> <status>".
 *
 *   forks clonevm FILE N, forks clonevfork FILE N
 *     Opens FILE, makes 100 one-byte preads at offsets 0..99, then starts a
 *     child with clone(CLONE_VM|SIGCHLD) (clonevm: both run at once) or
 *     clone(CLONE_VM|CLONE_VFORK|SIGCHLD) (clonevfork: the parent waits
 *     until the child is gone). The child, on the parent's memory, makes N
 *     preads at 1000 + k % 1000 and _exit()s (0 when all read a byte); the
 *     parent then makes N preads at 2000 + k % 1000, waits for it and
 *     prints "CLONED <pid> <status>".
 *
 *   forks child FILE TAG
 *     Opens FILE, makes 5 preads at offset 0..4, closes it; prints
 *     "CHILDRAN <tag> <pid>".
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "rel.h"

extern char** environ;

static int fd;
static atomic_int stop;

static int child_storm(const char* path, int i) {
  char c;
  for (int k = 0; k < 3; ++k) CHECK(pread(fd, &c, 1, 3 * i + k) == 1);
  int own = open(path, O_RDONLY);
  CHECK(own >= 0);
  CHECK(pread(own, &c, 1, 100000 + i) == 1);
  CHECK(close(own) == 0);
  switch (i % 3) {
    case 0: exit(0);
    case 1: _exit(0);
    default: return 0;
  }
}

static void* busy_worker(void* arg) {
  (void)arg;
  char c;
  long n = 0;
  while (!atomic_load(&stop)) {
    CHECK(pread(fd, &c, 1, n % 1000) == 1);
    ++n;
  }
  printf("WORKER %d %ld\n", raw_gettid(), n);
  return NULL;
}

static int clone_preads;

static int clone_child(void* arg) {
  (void)arg;
  char c;
  int ok = 1;
  for (int k = 0; k < clone_preads; ++k) ok &= pread(fd, &c, 1, 1000 + k % 1000) == 1;
  _exit(ok ? 0 : 1);
}

static int clone_run(const char* path, int n, int flags) {
  fd = open(path, O_RDONLY);
  CHECK(fd >= 0);
  char c;
  for (int k = 0; k < 100; ++k) CHECK(pread(fd, &c, 1, k) == 1);
  clone_preads = n;
  size_t stack_size = 1 << 20;
  char* stack = malloc(stack_size);
  CHECK(stack != NULL);
  fflush(stdout);
  pid_t pid = clone(clone_child, stack + stack_size, flags | SIGCHLD, NULL);
  CHECK(pid > 0);
  for (int k = 0; k < n; ++k) CHECK(pread(fd, &c, 1, 2000 + k % 1000) == 1);
  int status = -1;
  CHECK(waitpid(pid, &status, 0) == pid);
  printf("CLONED %d %d\n", (int)pid, status);
  free(stack);
  return 0;
}

static void report_spawn(const char* tag, pid_t pid) {
  int status = -1;
  CHECK(waitpid(pid, &status, 0) == pid);
  printf("SPAWNED %s %d %d\n", tag, (int)pid, status);
  fflush(stdout);
}

int main(int argc, char** argv) {
  CHECK(argc >= 3);
  const char* mode = argv[1];
  const char* path = argv[2];
  if (strcmp(mode, "storm") == 0) {
    CHECK(argc == 4);
    int n = atoi(argv[3]);
    fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    pid_t* pids = calloc((size_t)n, sizeof(pid_t));
    fflush(stdout);
    for (int i = 0; i < n; ++i) {
      pid_t pid = fork();
      CHECK(pid >= 0);
      if (pid == 0) return child_storm(path, i);
      pids[i] = pid;
    }
    for (int i = 0; i < n; ++i) {
      int status = -1;
      CHECK(waitpid(pids[i], &status, 0) == pids[i]);
      printf("CHILD %d %d %d\n", i, (int)pids[i], status);
    }
    CHECK(close(fd) == 0);
    return 0;
  }
  if (strcmp(mode, "busy") == 0) {
    CHECK(argc == 4);
    int n = atoi(argv[3]);
    fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    pthread_t t[4];
    for (int k = 0; k < 4; ++k) CHECK(pthread_create(&t[k], NULL, busy_worker, NULL) == 0);
    fflush(stdout);
    for (int i = 0; i < n; ++i) {
      pid_t pid = fork();
      CHECK(pid >= 0);
      if (pid == 0) {
        char c;
        CHECK(pread(fd, &c, 1, 5000 + i) == 1);
        CHECK(pread(fd, &c, 1, 5000 + i) == 1);
        _exit(0);
      }
      int status = -1;
      CHECK(waitpid(pid, &status, 0) == pid);
      printf("CHILD %d %d %d\n", i, (int)pid, status);
    }
    atomic_store(&stop, 1);
    for (int k = 0; k < 4; ++k) CHECK(pthread_join(t[k], NULL) == 0);
    CHECK(close(fd) == 0);
    return 0;
  }
  if (strcmp(mode, "spawn") == 0) {
    CHECK(argc == 4);
    const char* self = argv[3];
    char* vfork_argv[] = {(char*)self, "child", (char*)path, "vfork", NULL};
    fflush(stdout);
    pid_t pid = vfork();
    CHECK(pid >= 0);
    if (pid == 0) {
      execve(self, vfork_argv, environ);
      _exit(127);
    }
    report_spawn("vfork", pid);

    char* spawn_argv[] = {(char*)self, "child", (char*)path, "spawn", NULL};
    CHECK(posix_spawn(&pid, self, NULL, NULL, spawn_argv, environ) == 0);
    report_spawn("spawn", pid);

    /* The same child with LD_PRELOAD taken out of its environment. */
    size_t count = 0;
    while (environ[count]) ++count;
    char** env = calloc(count + 1, sizeof(char*));
    size_t kept = 0;
    for (size_t i = 0; i < count; ++i) {
      if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0) env[kept++] = environ[i];
    }
    char* untraced_argv[] = {(char*)self, "child", (char*)path, "untraced", NULL};
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      execve(self, untraced_argv, env);
      _exit(127);
    }
    report_spawn("untraced", pid);

    /* vfork, no exec: the child shares our memory and must leave it alone. */
    pid = vfork();
    CHECK(pid >= 0);
    if (pid == 0) _exit(7);
    report_spawn("vfork_exit", pid);

    int own = open(path, O_RDONLY);
    char c;
    CHECK(own >= 0 && pread(own, &c, 1, 42) == 1 && close(own) == 0);
    return 0;
  }
  if (strcmp(mode, "clonevm") == 0 || strcmp(mode, "clonevfork") == 0) {
    CHECK(argc == 4);
    int vfork = strcmp(mode, "clonevfork") == 0;
    return clone_run(path, atoi(argv[3]), CLONE_VM | (vfork ? CLONE_VFORK : 0));
  }
  if (strcmp(mode, "child") == 0) {
    CHECK(argc == 4);
    int own = open(path, O_RDONLY);
    CHECK(own >= 0);
    char c;
    for (int k = 0; k < 5; ++k) CHECK(pread(own, &c, 1, k) == 1);
    CHECK(close(own) == 0);
    printf("CHILDRAN %s %d\n", argv[3], raw_getpid());
    return 0;
  }
  CHECK(!"unknown mode");
  return 1;
}
