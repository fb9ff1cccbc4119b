/* Page faults the tracer could miss (tests/integration/test_map_gaps.py):
 * more file maps than its first table of mappings held, and more threads
 * than the kernel's locked memory allows fault buffers for.
 *
 *   map_gaps MODE FILE N [K]
 *
 * FILE has its pages evicted (posix_fadvise(POSIX_FADV_DONTNEED)) before
 * the pages are touched; every map is MADV_RANDOM (a page a fault).
 *
 *   maps    N maps of 4 pages of FILE (page 4i on), then the first page of
 *           each touched; prints "MAPS n=N major=M" (getrusage).
 *   split   N maps of 3 pages, the middle page of each unmapped (2N pieces
 *           left), then the first and last page of each touched; the same
 *           line.
 *   idle    RLIMIT_MEMLOCK set to 0 (the kernel's per-user allowance for
 *           perf buffers, kernel.perf_event_mlock_kb per CPU, is then all
 *           there is for a user without CAP_IPC_LOCK); N threads started
 *           that sleep; FILE mapped whole; then one thread started that
 *           touches K random pages: prints "READER tid=T major=M"
 *           (RUSAGE_THREAD).
 *   readers RLIMIT_MEMLOCK 0; FILE mapped whole, then N threads started
 *           one after the other, each touching K pages of its own and
 *           staying until all are done: prints "READER tid=T major=M" for
 *           each.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PAGE 4096

static char* g_map;
static size_t g_pages;
static int g_touches;
static pthread_barrier_t g_done;

static void die(const char* what) {
  perror(what);
  exit(1);
}

static long majflt(int who) {
  struct rusage r;
  getrusage(who, &r);
  return r.ru_majflt;
}

static void* sleeper(void* arg) {
  (void)arg;
  pause();
  return NULL;
}

struct reader {
  size_t first;
  long major;
  pid_t tid;
  int wait;
};

static void* reader(void* arg) {
  struct reader* r = arg;
  r->tid = (pid_t)syscall(SYS_gettid);
  unsigned seed = (unsigned)r->first + 1;
  long before = majflt(RUSAGE_THREAD);
  volatile char sum = 0;
  for (int k = 0; k < g_touches; ++k) {
    size_t page = r->wait ? (r->first + (size_t)k) % g_pages : (size_t)rand_r(&seed) % g_pages;
    sum += g_map[page * PAGE];
  }
  r->major = majflt(RUSAGE_THREAD) - before;
  if (r->wait) pthread_barrier_wait(&g_done);
  return NULL;
}

static void no_locked_memory(void) {
  struct rlimit none = {0, 0};
  if (setrlimit(RLIMIT_MEMLOCK, &none) != 0) die("setrlimit");
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: map_gaps MODE FILE N [K]\n");
    return 2;
  }
  const char* mode = argv[1];
  int n = atoi(argv[3]);
  g_touches = argc > 4 ? atoi(argv[4]) : 0;
  int fd = open(argv[2], O_RDONLY);
  if (fd < 0) die("open");
  size_t size = (size_t)lseek(fd, 0, SEEK_END);
  g_pages = size / PAGE;
  if (!strcmp(mode, "maps") || !strcmp(mode, "split")) {
    int split = !strcmp(mode, "split");
    char** maps = malloc(sizeof(char*) * (size_t)n);
    for (int i = 0; i < n; ++i) {
      maps[i] = mmap(NULL, 3 * PAGE, PROT_READ, MAP_SHARED, fd, (off_t)i * 4 * PAGE);
      if (maps[i] == MAP_FAILED) die("mmap");
      madvise(maps[i], 3 * PAGE, MADV_RANDOM);
      if (split && munmap(maps[i] + PAGE, PAGE) != 0) die("munmap");
    }
    fsync(fd);  /* (dirty pages are not evicted) */
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    long before = majflt(RUSAGE_SELF);
    volatile char sum = 0;
    for (int i = 0; i < n; ++i) {
      sum += maps[i][0];
      if (split) sum += maps[i][2 * PAGE];
    }
    printf("MAPS n=%d major=%ld\n", n, majflt(RUSAGE_SELF) - before);
    return 0;
  }
  no_locked_memory();
  if (!strcmp(mode, "idle")) {
    for (int i = 0; i < n; ++i) {
      pthread_t t;
      if (pthread_create(&t, NULL, sleeper, NULL) != 0) die("pthread_create");
    }
    n = 1;
  }
  fsync(fd);  /* (dirty pages are not evicted) */
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  g_map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
  if (g_map == MAP_FAILED) die("mmap");
  madvise(g_map, size, MADV_RANDOM);
  usleep(100000);  // the tracer's look for threads (every 50 ms) has been
  int wait = !strcmp(mode, "readers");
  struct reader* r = calloc((size_t)n, sizeof(*r));
  pthread_t* t = calloc((size_t)n, sizeof(*t));
  if (wait) pthread_barrier_init(&g_done, NULL, (unsigned)n + 1);
  for (int i = 0; i < n; ++i) {
    r[i].first = (size_t)i * (size_t)g_touches;
    r[i].wait = wait;
    if (pthread_create(&t[i], NULL, reader, &r[i]) != 0) die("pthread_create");
    if (wait) usleep(2000);  // one after the other: the last ones are refused
  }
  if (wait) pthread_barrier_wait(&g_done);
  for (int i = 0; i < n; ++i) pthread_join(t[i], NULL);
  for (int i = 0; i < n; ++i) printf("READER tid=%d major=%ld\n", r[i].tid, r[i].major);
  fflush(stdout);
  _exit(0);  // (the sleepers)
}
