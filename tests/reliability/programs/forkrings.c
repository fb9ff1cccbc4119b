/* Forks from a process that has had many threads: what each child is
 * given, and what thread churn leaves behind. Each process measures what
 * it maps of its rings sidecar itself (/proc/self/maps: the bytes of the
 * mappings of a file named *.rings, and that file's size), with raw
 * system calls, so the measuring leaves no event.
 *
 *   forkrings wide FILE THREADS CHILDREN PREADS
 *     Opens FILE; THREADS threads each make one 1-byte pread at offset
 *     <thread index> and stay alive; then the main thread forks CHILDREN
 *     children one after the other; child k makes PREADS 1-byte preads at
 *     offsets 100000 + k * PREADS + j, measures and prints
 *     "CHILD <k> <pid> <mapped bytes> <file bytes>", and exit(0)s. The
 *     parent then lets its threads end and prints "PARENT <pid>".
 *
 *   forkrings churn FILE MS
 *     Opens FILE; 3 threads each start a short thread and join it, over
 *     and over, for MS milliseconds; short thread i (numbered from 0 in
 *     the order they start their read) makes one 1-byte pread at offset
 *     i % 65536 and ends. Then the main thread measures and prints
 *     "PARENT <pid> <mapped bytes> <file bytes>" and "THREADS <n>", forks
 *     one child that makes 100 preads at offsets 0..99, measures, prints
 *     "CHILD 0 <pid> <mapped bytes> <file bytes>" and exit(0)s.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "rel.h"

static int fd;

/* Sums the mappings of a *.rings file in /proc/self/maps; `*file` gets
 * that file's size (0 when there is none). */
static long long rings_mapped(long long* file) {
  static char buf[1 << 20];
  size_t len = 0;
  int maps = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
  CHECK(maps >= 0);
  for (;;) {
    long n = syscall(SYS_read, maps, buf + len, sizeof(buf) - 1 - len);
    CHECK(n >= 0);
    if (n == 0) break;
    len += (size_t)n;
    CHECK(len < sizeof(buf) - 1);
  }
  syscall(SYS_close, maps);
  buf[len] = '\0';
  long long total = 0;
  *file = 0;
  for (char* line = buf; *line != '\0';) {
    char* end = strchr(line, '\n');
    if (end != NULL) *end = '\0';
    unsigned long long lo, hi;
    char* path = strchr(line, '/');
    size_t plen = path != NULL ? strlen(path) : 0;
    if (path != NULL && plen > 6 && strcmp(path + plen - 6, ".rings") == 0 &&
        sscanf(line, "%llx-%llx", &lo, &hi) == 2) {
      total += (long long)(hi - lo);
      struct stat st;
      if (syscall(SYS_newfstatat, AT_FDCWD, path, &st, 0) == 0) *file = (long long)st.st_size;
    }
    if (end == NULL) break;
    line = end + 1;
  }
  return total;
}

static void say_measured(const char* what, int k, int pid) {
  long long file;
  long long mapped = rings_mapped(&file);
  char line[160];
  if (k >= 0) {
    snprintf(line, sizeof(line), "%s %d %d %lld %lld\n", what, k, pid, mapped, file);
  } else {
    snprintf(line, sizeof(line), "%s %d %lld %lld\n", what, pid, mapped, file);
  }
  raw_say(line);
}

/* --- wide --- */

static pthread_barrier_t read_done, may_end;

static void* wide_thread(void* arg) {
  char c;
  CHECK(pread(fd, &c, 1, (off_t)(long)arg) == 1);
  pthread_barrier_wait(&read_done);
  pthread_barrier_wait(&may_end);
  return NULL;
}

static int wide(int threads, int children, int preads) {
  pthread_t* t = calloc((size_t)threads, sizeof(pthread_t));
  CHECK(t != NULL);
  CHECK(pthread_barrier_init(&read_done, NULL, (unsigned)threads + 1) == 0);
  CHECK(pthread_barrier_init(&may_end, NULL, (unsigned)threads + 1) == 0);
  for (long i = 0; i < threads; ++i) {
    CHECK(pthread_create(&t[i], NULL, wide_thread, (void*)i) == 0);
  }
  pthread_barrier_wait(&read_done);
  for (int k = 0; k < children; ++k) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      char c;
      for (int j = 0; j < preads; ++j) {
        CHECK(pread(fd, &c, 1, 100000 + (off_t)k * preads + j) == 1);
      }
      say_measured("CHILD", k, raw_getpid());
      exit(0);
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  pthread_barrier_wait(&may_end);
  for (int i = 0; i < threads; ++i) CHECK(pthread_join(t[i], NULL) == 0);
  free(t);
  printf("PARENT %d\n", raw_getpid());
  return 0;
}

/* --- churn --- */

static atomic_long next_read;
static atomic_int stop;

static void* short_thread(void* arg) {
  (void)arg;
  char c;
  long i = atomic_fetch_add(&next_read, 1);
  CHECK(pread(fd, &c, 1, i % 65536) == 1);
  return NULL;
}

static void* spawner(void* arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    pthread_t t;
    CHECK(pthread_create(&t, NULL, short_thread, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
  }
  return NULL;
}

static int churn(long ms) {
  pthread_t s[3];
  for (int i = 0; i < 3; ++i) CHECK(pthread_create(&s[i], NULL, spawner, NULL) == 0);
  struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&d, &d) != 0) {
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < 3; ++i) CHECK(pthread_join(s[i], NULL) == 0);
  say_measured("PARENT", -1, raw_getpid());
  char line[64];
  snprintf(line, sizeof(line), "THREADS %ld\n", atomic_load(&next_read));
  raw_say(line);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    char c;
    for (int j = 0; j < 100; ++j) CHECK(pread(fd, &c, 1, j) == 1);
    say_measured("CHILD", 0, raw_getpid());
    exit(0);
  }
  int status;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  return 0;
}

int main(int argc, char** argv) {
  CHECK(argc >= 4);
  fd = open(argv[2], O_RDONLY);
  CHECK(fd >= 0);
  if (strcmp(argv[1], "wide") == 0 && argc == 6) {
    return wide(atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
  }
  if (strcmp(argv[1], "churn") == 0 && argc == 4) return churn(atol(argv[3]));
  fprintf(stderr, "usage: forkrings wide FILE THREADS CHILDREN PREADS | churn FILE MS\n");
  return 2;
}
