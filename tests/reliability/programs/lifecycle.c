/* How a process ends and what it sees of its own descriptors (issue 38).
 *
 *   lifecycle mainexit FILE OUT
 *     Registers an atexit handler that writes "atexit\n" into OUT (open,
 *     write, close), reads FILE in 4 preads of 1000 bytes, and ends main with
 *     pthread_exit(NULL). glibc then ends the process with exit(0) (atexit
 *     handlers run): the tracer's flusher must not keep it alive.
 *
 *   lifecycle workers FILE OUT
 *     Starts 2 threads and ends main with pthread_exit(NULL). Thread 1 makes
 *     20 preads of 100 bytes at 0, 100, ... over ~200 ms; thread 2 records
 *     nothing, waits for thread 1 (a raw futex-free spin on an atomic) and
 *     then 100 ms more, then returns: the process lives until the last of
 *     them is gone, then exits 0 (the atexit handler writes "atexit\n" into
 *     OUT).
 *
 *   lifecycle forkthread FILE ret|exit
 *     A thread forks. In the child that thread (now the child's only one)
 *     makes 3 preads of 10 bytes and returns from its start routine ("ret")
 *     or calls pthread_exit ("exit"): glibc ends the child with exit(0). The
 *     parent waits up to 10 s for it and prints "CHILD <status>" (or
 *     "CHILD hung", after SIGKILL).
 *
 *   lifecycle fds LIMIT
 *     Sets RLIMIT_NOFILE's soft limit to LIMIT, prints the descriptors
 *     /proc/self/fd lists ("FDS 0 1 2"), whether fstat(100) succeeds
 *     ("FSTAT100 <errno or 0>"), then opens /dev/null until open fails and
 *     prints "OPENED <n> errno=<e>", and closes them all.
 *
 *   lifecycle atlimit FILE LIMIT MS
 *     Sets the soft limit to LIMIT, opens FILE, fills every descriptor left
 *     with /dev/null, then makes 100 preads of 1 byte on FILE, sleeps MS
 *     milliseconds (the tracer's flusher finds no descriptor), makes 100 more,
 *     closes the /dev/null descriptors, makes 100 more and ends: 300 preads.
 *     Prints "FILLED <n>".
 *
 *   lifecycle exitatlimit FILE LIMIT REREADS HARD
 *     Sets the soft limit to LIMIT (the hard one too where HARD is 1), opens
 *     FILE until open fails (EMFILE), preads 4 bytes from each descriptor,
 *     then REREADS more from the first, and ends holding them all (a program
 *     that caches its open files). Prints "OPENED <n> READS <r>".
 *
 *   lifecycle forkatlimit FILE LIMIT READS
 *     Sets the soft limit to LIMIT (the hard one stays), opens FILE until
 *     open fails (EMFILE), then forks: the child, at its soft limit from its
 *     first moment, makes READS preads of 3 bytes on the first descriptor
 *     and ends with _exit(0). The parent waits for it and prints "OPENED <n>
 *     CHILD <status>".
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "rel.h"

static const char* g_out;
static const char* g_file;
static atomic_int g_done;

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static void write_atexit(void) {
  int fd = open(g_out, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  if (fd < 0) return;
  if (write(fd, "atexit\n", 7) != 7) _exit(98);
  close(fd);
}

static void preads(const char* path, int n, int size, int pause_ms) {
  int fd = open(path, O_RDONLY);
  CHECK(fd >= 0);
  char buf[1000];
  for (int i = 0; i < n; ++i) {
    CHECK(pread(fd, buf, (size_t)size, (off_t)i * size) == size);
    if (pause_ms) sleep_ms(pause_ms);
  }
  CHECK(close(fd) == 0);
}

static void* reader(void* arg) {
  (void)arg;
  preads(g_file, 20, 100, 10);
  atomic_store(&g_done, 1);
  return NULL;
}

static void* idler(void* arg) {
  (void)arg;
  while (!atomic_load(&g_done)) sleep_ms(5);
  sleep_ms(100);
  raw_say("IDLER done\n");
  return NULL;
}

static int g_child_exit;

static void* forker(void* arg) {
  (void)arg;
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    preads(g_file, 3, 10, 0);
    if (g_child_exit) pthread_exit(NULL);
    return NULL;
  }
  int status = 0;
  for (int i = 0; i < 1000; ++i) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    CHECK(r >= 0);
    if (r == pid) {
      printf("CHILD %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status));
      return NULL;
    }
    sleep_ms(10);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  printf("CHILD hung\n");
  return NULL;
}

static void set_limit(long limit, int hard) {
  struct rlimit lim;
  CHECK(getrlimit(RLIMIT_NOFILE, &lim) == 0);
  lim.rlim_cur = (rlim_t)limit;
  if (hard) lim.rlim_max = (rlim_t)limit;
  CHECK(setrlimit(RLIMIT_NOFILE, &lim) == 0);
}

static int fill(int* fds, int max) {
  int n = 0;
  while (n < max) {
    int fd = open("/dev/null", O_RDONLY);
    if (fd < 0) break;
    fds[n++] = fd;
  }
  return n;
}

int main(int argc, char** argv) {
  CHECK(argc >= 3);
  const char* mode = argv[1];
  if (strcmp(mode, "mainexit") == 0 || strcmp(mode, "workers") == 0) {
    CHECK(argc == 4);
    g_file = argv[2];
    g_out = argv[3];
    CHECK(atexit(write_atexit) == 0);
    if (strcmp(mode, "mainexit") == 0) {
      preads(g_file, 4, 1000, 0);
    } else {
      pthread_t a, b;
      CHECK(pthread_create(&a, NULL, reader, NULL) == 0);
      CHECK(pthread_create(&b, NULL, idler, NULL) == 0);
    }
    raw_say("MAIN leaves\n");
    pthread_exit(NULL);
  }
  if (strcmp(mode, "forkthread") == 0) {
    CHECK(argc == 4);
    g_file = argv[2];
    g_child_exit = strcmp(argv[3], "exit") == 0;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, forker, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    return 0;
  }
  if (strcmp(mode, "fds") == 0) {
    set_limit(atol(argv[2]), 0);
    DIR* d = opendir("/proc/self/fd");
    CHECK(d != NULL);
    int seen[64], n = 0;
    struct dirent* e;
    while ((e = readdir(d)) != NULL && n < 64) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      int fd = atoi(e->d_name);
      if (fd != dirfd(d)) seen[n++] = fd;
    }
    closedir(d);
    for (int i = 0; i < n; ++i)  /* sorted: the kernel lists them in order anyway */
      for (int j = i + 1; j < n; ++j)
        if (seen[j] < seen[i]) { int t = seen[i]; seen[i] = seen[j]; seen[j] = t; }
    printf("FDS");
    for (int i = 0; i < n; ++i) printf(" %d", seen[i]);
    printf("\n");
    struct stat st;
    errno = 0;
    printf("FSTAT100 %d\n", fstat(100, &st) == 0 ? 0 : errno);
    static int fds[1 << 16];
    int opened = fill(fds, 1 << 16);
    printf("OPENED %d errno=%d\n", opened, errno);
    for (int i = 0; i < opened; ++i) CHECK(close(fds[i]) == 0);
    return 0;
  }
  if (strcmp(mode, "atlimit") == 0) {
    CHECK(argc == 5);
    set_limit(atol(argv[3]), 0);
    int fd = open(argv[2], O_RDONLY);
    CHECK(fd >= 0);
    static int fds[1 << 16];
    int filled = fill(fds, 1 << 16);
    CHECK(errno == EMFILE);
    printf("FILLED %d\n", filled);
    char c;
    for (int i = 0; i < 100; ++i) CHECK(pread(fd, &c, 1, i) == 1);
    sleep_ms(atoi(argv[4]));
    for (int i = 100; i < 200; ++i) CHECK(pread(fd, &c, 1, i) == 1);
    for (int i = 0; i < filled; ++i) CHECK(close(fds[i]) == 0);
    for (int i = 200; i < 300; ++i) CHECK(pread(fd, &c, 1, i) == 1);
    CHECK(close(fd) == 0);
    return 0;
  }
  if (strcmp(mode, "exitatlimit") == 0) {
    CHECK(argc == 6);
    set_limit(atol(argv[3]), atoi(argv[5]));
    int opened = 0, reads = 0, fd, first = -1;
    char c[4];
    while ((fd = open(argv[2], O_RDONLY)) >= 0) {
      if (first < 0) first = fd;
      ++opened;
      CHECK(pread(fd, c, sizeof c, 0) == (ssize_t)sizeof c);
      ++reads;
    }
    CHECK(errno == EMFILE);
    for (long i = atol(argv[4]); i > 0; --i, ++reads) {
      CHECK(pread(first, c, sizeof c, 0) == (ssize_t)sizeof c);
    }
    printf("OPENED %d READS %d\n", opened, reads);
    return 0;
  }
  if (strcmp(mode, "forkatlimit") == 0) {
    CHECK(argc == 5);
    set_limit(atol(argv[3]), 0);
    int opened = 0, fd, first = -1;
    while ((fd = open(argv[2], O_RDONLY)) >= 0) {
      if (first < 0) first = fd;
      ++opened;
    }
    CHECK(errno == EMFILE && first >= 0);
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      char c[3];
      for (long i = atol(argv[4]); i > 0; --i) {
        CHECK(pread(first, c, sizeof c, 0) == (ssize_t)sizeof c);
      }
      _exit(0);
    }
    int status = -1;
    CHECK(waitpid(pid, &status, 0) == pid);
    printf("OPENED %d CHILD %d\n", opened, status);
    return 0;
  }
  CHECK(!"unknown mode");
  return 1;
}
