/* Reading through a memory map (tests/integration/test_map_faults.py).
 *
 *   map_touch MODE FILE [UNTRACED_FILE...]
 *
 * FILE (at least 8 MiB) has its pages evicted from the page cache first
 * (fsync, posix_fadvise(POSIX_FADV_DONTNEED)), is mapped whole, read-only
 * and shared, and then read by touching one byte of chosen pages. Around
 * each touch the program takes its thread's major faults (getrusage) and
 * its clock, and prints what it saw, one line per touch:
 *
 *   TOUCH  pid=P  tid=T  offset=O  major=M  t0=S  t1=E  cpu=C  delay=D  waits=W
 *
 * (O the file offset of the page touched, M the major faults the touch
 * took, S and E when it began and ended, CLOCK_MONOTONIC_RAW ns: the
 * trace's clock, C the thread's CPU time in it, D its time waiting for a
 * CPU: /proc/thread-self/schedstat's run_delay, 0 where the kernel keeps
 * none; C and D read just outside S and E; W the times it stopped to wait,
 * getrusage's voluntary context switches: a fault whose page was read
 * before it had to wait takes none). Modes:
 *
 *   random   MADV_RANDOM (one page a fault); 40 pages, a few twice (the
 *            second touch takes no major fault), inside one region
 *            "fetch_batch" per 10 touches; then prints
 *            "REGION major=M ns=N cpu_ns=C" for each region: the faults,
 *            wall time and CPU time the program measured around it.
 *            (With perf_event_open refused, no_perf_events.c, the same.)
 *   around   the default advice (the kernel reads around each fault);
 *            prints "IO read_bytes=B": what /proc/self/io's read_bytes grew
 *            by over the touches.
 *   split    MADV_RANDOM; 64 pages mapped from page 16 of the file, the
 *            middle 16 unmapped, pages of both ends touched; then the last
 *            16 moved and grown to 32 by mremap and pages of it touched.
 *   fork     MADV_RANDOM; the parent maps, a forked child touches 12 pages
 *            and exits, the parent touches 12 others after it.
 *   thread   MADV_RANDOM; a thread started (and traced) before the map
 *            touches 12 pages after the main thread mapped the file.
 *   dontunmap  MADV_RANDOM; 16 pages mapped, then mremap'ed with
 *            MREMAP_DONTUNMAP (both ranges map the file, Linux 5.13), pages
 *            of both touched; first a misaligned new address must fail with
 *            EINVAL, as it does untraced. Prints "SKIP" where the kernel
 *            refuses MREMAP_DONTUNMAP on a file map.
 *   many     maps 16 pages and unmaps them, 9000 times (more than the
 *            tracer's table of mappings holds at once); touches nothing.
 *   pool     MADV_RANDOM; 4 rounds of 4 threads started after the map,
 *            each touching 3 pages and ending (a pool started per batch).
 *   populate MADV_RANDOM; 6 pages touched, then FILE.b (which the test
 *            made, 4 MiB or more) mapped with MAP_POPULATE, which reads it
 *            all inside mmap; prints "POPULATE read_bytes=B": what
 *            /proc/self/io's read_bytes grew by in that mmap.
 *   populate_now  the same without the sleep: FILE.b opened and evicted
 *            first, then the 6 touches and the mmap at once (the tracer
 *            reads the faults and the populating reads in one look); also
 *            prints "FAULTED read_bytes=B": what the thread's storage reads
 *            (/proc/thread-self/io) grew by from just before FILE was
 *            mapped to just before that mmap.
 *   small_map  MADV_RANDOM; 16 pages of FILE mapped and one touched, then
 *            at once FILE.b (which the test made, and excludes) read whole
 *            by read() calls of 1 MiB.
 *   shared   MADV_RANDOM; the file mapped read-write and shared, as
 *            np.memmap maps it by default ("r+"); 12 pages read.
 *   untraced MADV_RANDOM; 6 pages touched, then each UNTRACED_FILE
 *            (under a path dlprof excludes: a library's pages, say) mapped
 *            with the default advice and its middle page touched, the
 *            kernel reading around it; prints "UNTRACED read_bytes=B major=M": what
 *            /proc/self/io's read_bytes and the thread's major faults grew
 *            by over those touches.
 *   scan_fork  the default advice; the main thread touches page 0 (the
 *            kernel reads around it and marks pages to read ahead from),
 *            then a forked child touches every page in order, taking few
 *            or no major faults, unmaps the file and ends 200 ms later.
 *            Each prints "READER role=R pid=P tid=T read_bytes=B major=M":
 *            its own storage reads (/proc/thread-self/io) and major faults
 *            over its touches (R: main, then scan).
 *   pool_around  the default advice; 4 rounds of 2 threads started after the
 *            map, each touching one page (pages an eighth of the file
 *            apart) and ending at once; each prints its READER line
 *            (role=pool).
 *   reads_beside  MADV_RANDOM; 6 pages touched; then a thread started after
 *            the map reads the first half of FILE.b (which the test made)
 *            with read(), 256 KiB a call 5 ms apart, never touching the
 *            map, and ends 200 ms after its last; prints
 *            its READER line (role=calls) and "CALLS bytes=N": what its
 *            reads returned.
 *   excluded_reads  the same, after one touch of page 0 with the default
 *            advice (FILE.b under a path the test excludes).
 *   copy     the default advice; page 0 touched, then after 100 ms (the
 *            tracer's looks) the rest copied out with memcpy, 1 MiB at a
 *            time in order: the kernel reads ahead, and the copies wait for
 *            pages still being read on minor faults. Prints, per copy,
 *            "COPY offset=O t0=S t1=E cpu=C delay=D waits=W" (as TOUCH).
 *   dup      MADV_RANDOM; 64 pages mapped, then mremap'ed with an old length
 *            of 0 (the kernel leaves the old mapping and maps the same
 *            pages again); pages of both touched, the old one's first
 *            byte first.
 *
 * Exits 0; runs the same without dlprof. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "dlprof/dlprof.h"

#define PAGE 4096L

/* CLOCK_MONOTONIC_RAW (the trace's) or the thread's CPU clock, in ns. */
static uint64_t clock_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#define now_ns() clock_ns(CLOCK_MONOTONIC_RAW)
#define cpu_now_ns() clock_ns(CLOCK_THREAD_CPUTIME_ID)

/* The thread's time waiting for a CPU so far (run_delay, ns), 0 where the
 * kernel keeps none. */
static uint64_t run_delay_ns(void) {
  char buf[128];
  unsigned long long ran = 0, delay = 0;
  int fd = open("/proc/thread-self/schedstat", O_RDONLY);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  if (sscanf(buf, "%llu %llu", &ran, &delay) != 2) return 0;
  return (uint64_t)delay;
}

static long thread_major(uint64_t* cpu_ns) {
  struct rusage u;
  CHECK(getrusage(RUSAGE_THREAD, &u) == 0);
  if (cpu_ns != NULL) *cpu_ns = cpu_now_ns();
  return u.ru_majflt;
}

/* The thread's major faults and voluntary context switches so far. */
static long thread_major_waits(long* waits) {
  struct rusage u;
  CHECK(getrusage(RUSAGE_THREAD, &u) == 0);
  *waits = u.ru_nvcsw;
  return u.ru_majflt;
}

static const char* g_map;
static long g_map_offset; /* file offset of g_map[0] */
static volatile unsigned g_sink;

/* Touches the page at file offset `offset` through the mapping at `base`
 * (which maps the file from `base_offset`). */
static void touch_at(const char* base, long base_offset, long offset) {
  long w0, w1;
  uint64_t d0 = run_delay_ns();
  long before = thread_major_waits(&w0);
  uint64_t c0 = cpu_now_ns();
  uint64_t t0 = now_ns();
  g_sink += (unsigned char)base[offset - base_offset + 17];
  uint64_t t1 = now_ns();
  uint64_t c1 = cpu_now_ns();
  long after = thread_major_waits(&w1);
  uint64_t d1 = run_delay_ns();
  printf("TOUCH\tpid=%d\ttid=%d\toffset=%ld\tmajor=%ld\tt0=%llu\tt1=%llu\tcpu=%llu"
         "\tdelay=%llu\twaits=%ld\n",
         raw_getpid(), raw_gettid(), offset, after - before, (unsigned long long)t0,
         (unsigned long long)t1, (unsigned long long)(c1 - c0),
         (unsigned long long)(d1 - d0), w1 - w0);
  fflush(stdout);
}

static void touch(long page) { touch_at(g_map, g_map_offset, page * PAGE); }

static int open_evicted(const char* path, long* size, int flags) {
  int fd = open(path, flags);
  CHECK(fd >= 0);
  struct stat st;
  CHECK(fstat(fd, &st) == 0);
  *size = (long)st.st_size;
  CHECK(fdatasync(fd) == 0 || errno == EINVAL);
  CHECK(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
  return fd;
}

/* read_bytes of an io accounting file (/proc/self/io, /proc/thread-self/io). */
static long io_read_bytes(const char* path) {
  FILE* f = fopen(path, "r");
  CHECK(f != NULL);
  char line[128];
  long n = -1;
  while (fgets(line, sizeof(line), f)) {
    if (strncmp(line, "read_bytes: ", 12) == 0) n = atol(line + 12);
  }
  fclose(f);
  return n;
}

static int g_go[2], g_ready[2];

/* A reader's own storage reads and major faults since `rb0`, `mf0`. */
static void print_reader(const char* role, long rb0, long mf0) {
  long rb = io_read_bytes("/proc/thread-self/io");
  long mf = thread_major(NULL);
  printf("READER\trole=%s\tpid=%d\ttid=%d\tread_bytes=%ld\tmajor=%ld\n", role, raw_getpid(),
         raw_gettid(), rb - rb0, mf - mf0);
  fflush(stdout);
}

static long g_pages;

/* scan_*: every page in order, no line per touch (thousands). */
static void scan_all(void) {
  long rb0 = io_read_bytes("/proc/thread-self/io"), mf0 = thread_major(NULL);
  unsigned sum = 0;
  for (long p = 0; p < g_pages; ++p) sum += (unsigned char)g_map[p * PAGE];
  g_sink += sum;
  print_reader("scan", rb0, mf0);
}

/* pool_around: one page, then the thread is gone. */
static void* one_toucher(void* arg) {
  long rb0 = io_read_bytes("/proc/thread-self/io"), mf0 = thread_major(NULL);
  touch((long)arg);
  print_reader("pool", rb0, mf0);
  return NULL;
}

/* reads_beside: the first half of FILE.b read by read() calls (the kernel
 * reads ahead of them, past that half); the map left alone. */
static void* file_reader(void* arg) {
  static char chunk[256 << 10];
  long rb0 = io_read_bytes("/proc/thread-self/io"), mf0 = thread_major(NULL), total = 0;
  int fd = open((const char*)arg, O_RDONLY);
  CHECK(fd >= 0);
  struct stat st;
  CHECK(fstat(fd, &st) == 0);
  for (ssize_t n; total < st.st_size / 2; total += n) {
    n = read(fd, chunk, sizeof(chunk));
    CHECK(n > 0);
    usleep(5000); /* paced: the tracer looks at the thread's reads meanwhile */
  }
  close(fd);
  usleep(200000); /* and after them, the thread still there */
  print_reader("calls", rb0, mf0);
  printf("CALLS\tbytes=%ld\n", total);
  fflush(stdout);
  return NULL;
}

static void* toucher(void* arg) {
  (void)arg;
  char c;
  /* Its first traced call comes before the map exists. */
  CHECK(write(g_ready[1], "r", 1) == 1);
  CHECK(read(g_go[0], &c, 1) == 1);
  for (long i = 0; i < 12; ++i) touch(100 + i * 97);
  return NULL;
}

/* pool: a short thread's 3 touches, then it is gone. */
static void* short_toucher(void* arg) {
  const long k = (long)arg;
  for (long i = 0; i < 3; ++i) touch(2000 + k * 31 + i * 7);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: map_touch MODE FILE [UNTRACED_FILE...]\n");
    return 2;
  }
  const char* mode = argv[1];
  long size = 0;
  pthread_t thread;
  if (strcmp(mode, "thread") == 0) {
    char c;
    CHECK(pipe(g_go) == 0 && pipe(g_ready) == 0);
    CHECK(pthread_create(&thread, NULL, toucher, "early") == 0);
    CHECK(read(g_ready[0], &c, 1) == 1);
  }
  const int shared = strcmp(mode, "shared") == 0;
  int fd = open_evicted(argv[2], &size, shared ? O_RDWR : O_RDONLY);
  CHECK(size >= 8L << 20);
  const long pages = size / PAGE;

  if (strcmp(mode, "split") == 0) {
    char* m = mmap(NULL, 64 * PAGE, PROT_READ, MAP_SHARED, fd, 16 * PAGE);
    CHECK(m != MAP_FAILED);
    CHECK(madvise(m, 64 * PAGE, MADV_RANDOM) == 0);
    close(fd);
    CHECK(munmap(m + 24 * PAGE, 16 * PAGE) == 0);
    for (long p = 0; p < 24; p += 3) touch_at(m, 16 * PAGE, (16 + p) * PAGE);
    for (long p = 40; p < 64; p += 5) touch_at(m, 16 * PAGE, (16 + p) * PAGE);
    /* The last 24 pages (file pages 56..79) moved and grown to 40. */
    char* tail = mremap(m + 40 * PAGE, 24 * PAGE, 40 * PAGE, MREMAP_MAYMOVE);
    CHECK(tail != MAP_FAILED);
    CHECK(madvise(tail, 40 * PAGE, MADV_RANDOM) == 0);
    for (long p = 1; p < 40; p += 4) touch_at(tail, 56 * PAGE, (56 + p) * PAGE);
    CHECK(munmap(m, 24 * PAGE) == 0);
    CHECK(munmap(tail, 40 * PAGE) == 0);
    return 0;
  }

  if (strcmp(mode, "many") == 0) {
    for (int i = 0; i < 9000; ++i) {
      char* m = mmap(NULL, 16 * PAGE, PROT_READ, MAP_SHARED, fd, 0);
      CHECK(m != MAP_FAILED);
      CHECK(munmap(m, 16 * PAGE) == 0);
    }
    return 0;
  }

  if (strcmp(mode, "dup") == 0) {
    char* m = mmap(NULL, 64 * PAGE, PROT_READ, MAP_SHARED, fd, 0);
    CHECK(m != MAP_FAILED);
    close(fd);
    CHECK(madvise(m, 64 * PAGE, MADV_RANDOM) == 0);
    char* copy = mremap(m, 0, 64 * PAGE, MREMAP_MAYMOVE);
    CHECK(copy != MAP_FAILED && copy != m);
    CHECK(madvise(copy, 64 * PAGE, MADV_RANDOM) == 0);
    /* The old mapping's very first byte (touch_at reads 17 bytes into a
     * page: as if the map began 17 bytes into the file). */
    touch_at(m, 17, 0);
    touch_at(m, 0, 5 * PAGE);
    touch_at(copy, 0, 9 * PAGE);
    touch_at(m, 0, 1 * PAGE);
    touch_at(copy, 0, 40 * PAGE);
    touch_at(m, 0, 63 * PAGE);
    return 0;
  }

  if (strcmp(mode, "small_map") == 0) {
    static char chunk[1 << 20];
    char* m = mmap(NULL, 16 * PAGE, PROT_READ, MAP_SHARED, fd, 0);
    CHECK(m != MAP_FAILED);
    close(fd);
    CHECK(madvise(m, 16 * PAGE, MADV_RANDOM) == 0);
    char path_b[4096];
    snprintf(path_b, sizeof(path_b), "%s.b", argv[2]);
    long size_b = 0, total = 0;
    int fd_b = open_evicted(path_b, &size_b, O_RDONLY);
    touch_at(m, 0, 5 * PAGE);
    for (ssize_t n; total < size_b; total += n) {
      n = read(fd_b, chunk, sizeof(chunk));
      CHECK(n > 0);
    }
    close(fd_b);
    usleep(100000);
    CHECK(munmap(m, 16 * PAGE) == 0);
    return 0;
  }

  if (strcmp(mode, "dontunmap") == 0) {
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif
    char* anon = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(anon != MAP_FAILED);
    errno = 0;
    CHECK(mremap(anon, 4 * PAGE, 4 * PAGE, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, anon + 123) ==
          MAP_FAILED);
    CHECK(errno == EINVAL);
    char* m = mmap(NULL, 16 * PAGE, PROT_READ, MAP_SHARED, fd, 0);
    CHECK(m != MAP_FAILED);
    close(fd);
    char* copy = mremap(m, 16 * PAGE, 16 * PAGE, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, NULL);
    if (copy == MAP_FAILED) {
      printf("SKIP\tmremap(MREMAP_DONTUNMAP) of a file map: %s\n", strerror(errno));
      return 0;
    }
    CHECK(madvise(m, 16 * PAGE, MADV_RANDOM) == 0 && madvise(copy, 16 * PAGE, MADV_RANDOM) == 0);
    for (long p = 1; p < 16; p += 4) touch_at(copy, 0, p * PAGE);
    for (long p = 3; p < 16; p += 4) touch_at(m, 0, p * PAGE);
    return 0;
  }

  /* populate_now: FILE.b evicted before FILE is mapped; the thread's
   * storage reads from there. */
  char now_path[4096];
  snprintf(now_path, sizeof(now_path), "%s.b", argv[2]);
  long now_size = 0;
  const int now_b = strcmp(mode, "populate_now") == 0;
  const int now_fd = now_b ? open_evicted(now_path, &now_size, O_RDONLY) : -1;
  const long mapped_rb = now_b ? io_read_bytes("/proc/thread-self/io") : 0;
  char* m = mmap(NULL, (size_t)size, shared ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
  CHECK(m != MAP_FAILED);
  close(fd);
  g_map = m;
  g_map_offset = 0;
  g_pages = pages;
  const int default_advice = strcmp(mode, "around") == 0 || strncmp(mode, "scan_", 5) == 0 ||
                             strcmp(mode, "copy") == 0 ||
                             strcmp(mode, "pool_around") == 0 ||
                             strcmp(mode, "excluded_reads") == 0;
  if (!default_advice) CHECK(madvise(m, (size_t)size, MADV_RANDOM) == 0);

  if (strcmp(mode, "random") == 0) {
    for (int region = 0; region < 4; ++region) {
      /* The CPU clock read inside the wall clock's: CPU time spent just
       * outside the region (a fault's page reclaim in the tracer's own
       * record under memory pressure: 178 us once) then counts in both. */
      uint64_t cpu0, cpu1;
      uint64_t t0 = now_ns();
      long major0 = thread_major(&cpu0);
      dlprof_region_begin("fetch_batch");
      for (long i = 0; i < 10; ++i) {
        long k = region * 10 + i;
        /* Every tenth touch repeats the page before it: no major fault. */
        touch(i == 9 ? ((k - 1) * 7919) % pages : (k * 7919) % pages);
      }
      dlprof_region_end();
      long major1 = thread_major(&cpu1);
      uint64_t t1 = now_ns();
      printf("REGION\tmajor=%ld\tns=%llu\tcpu_ns=%llu\n", major1 - major0,
             (unsigned long long)(t1 - t0), (unsigned long long)(cpu1 - cpu0));
    }
  } else if (shared) {
    for (long i = 0; i < 12; ++i) touch((i * 7919) % pages);
  } else if (strcmp(mode, "around") == 0) {
    long before = io_read_bytes("/proc/self/io");
    for (long i = 0; i < 24; ++i) touch((i * 7919) % pages);
    printf("IO\tread_bytes=%ld\n", io_read_bytes("/proc/self/io") - before);
  } else if (strcmp(mode, "fork") == 0) {
    fflush(stdout);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
      for (long i = 0; i < 12; ++i) touch(50 + i * 101);
      fflush(stdout);
      _exit(0);
    }
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) &&
          WEXITSTATUS(status) == 0);
    for (long i = 0; i < 12; ++i) touch(1000 + i * 89);
  } else if (strcmp(mode, "thread") == 0) {
    CHECK(write(g_go[1], "g", 1) == 1);
    CHECK(pthread_join(thread, NULL) == 0);
  } else if (strcmp(mode, "populate") == 0) {
    for (long i = 0; i < 6; ++i) touch(300 + i * 211);
    usleep(100000); /* the tracer has looked at the faults' reads */
    char path_b[4096];
    snprintf(path_b, sizeof(path_b), "%s.b", argv[2]);
    long size_b = 0;
    int fd_b = open_evicted(path_b, &size_b, O_RDONLY);
    long before = io_read_bytes("/proc/self/io");
    char* b = mmap(NULL, (size_t)size_b, PROT_READ, MAP_SHARED | MAP_POPULATE, fd_b, 0);
    CHECK(b != MAP_FAILED);
    printf("POPULATE\tread_bytes=%ld\n", io_read_bytes("/proc/self/io") - before);
    close(fd_b);
    usleep(100000);
    CHECK(munmap(b, (size_t)size_b) == 0);
  } else if (now_b) {
    for (long i = 0; i < 6; ++i) touch(300 + i * 211);
    long faulted = io_read_bytes("/proc/thread-self/io") - mapped_rb;
    long before = io_read_bytes("/proc/self/io");
    char* b = mmap(NULL, (size_t)now_size, PROT_READ, MAP_SHARED | MAP_POPULATE, now_fd, 0);
    CHECK(b != MAP_FAILED);
    long populated = io_read_bytes("/proc/self/io") - before;
    printf("FAULTED\tread_bytes=%ld\nPOPULATE\tread_bytes=%ld\n", faulted, populated);
    close(now_fd);
    usleep(100000);
    CHECK(munmap(b, (size_t)now_size) == 0);
  } else if (strcmp(mode, "untraced") == 0) {
    for (long i = 0; i < 6; ++i) touch(300 + i * 211);
    usleep(100000); /* the tracer has looked at the faults' reads */
    long before = io_read_bytes("/proc/self/io"), major0 = thread_major(NULL);
    for (int k = 3; k < argc; ++k) {
      long size_k = 0;
      int fd_k = open_evicted(argv[k], &size_k, O_RDONLY);
      const char* b = mmap(NULL, (size_t)size_k, PROT_READ, MAP_SHARED, fd_k, 0);
      CHECK(b != MAP_FAILED);
      close(fd_k);
      g_sink += (unsigned char)b[size_k / 2];
      CHECK(munmap((void*)b, (size_t)size_k) == 0);
    }
    printf("UNTRACED\tread_bytes=%ld\tmajor=%ld\n", io_read_bytes("/proc/self/io") - before,
           thread_major(NULL) - major0);
    usleep(100000); /* and at their reads */
  } else if (strcmp(mode, "scan_fork") == 0) {
    long rb0 = io_read_bytes("/proc/thread-self/io"), mf0 = thread_major(NULL);
    touch(0);
    print_reader("main", rb0, mf0);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
      scan_all();
      /* The map gone well before the child's end. */
      CHECK(munmap(m, (size_t)size) == 0);
      usleep(200000);
      _exit(0);
    }
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  } else if (strcmp(mode, "pool_around") == 0) {
    for (long round = 0; round < 4; ++round) {
      pthread_t pool[2];
      for (long i = 0; i < 2; ++i) {
        void* page = (void*)((round * 2 + i) * (pages / 8) + pages / 16);
        CHECK(pthread_create(&pool[i], NULL, one_toucher, page) == 0);
      }
      for (long i = 0; i < 2; ++i) CHECK(pthread_join(pool[i], NULL) == 0);
    }
  } else if (strcmp(mode, "reads_beside") == 0 || strcmp(mode, "excluded_reads") == 0) {
    if (mode[0] == 'e') {
      touch(0);  /* the default advice: the kernel reads around it */
      usleep(100000);
    } else {
      for (long i = 0; i < 6; ++i) touch(300 + i * 211);
    }
    char path_b[4096];
    snprintf(path_b, sizeof(path_b), "%s.b", argv[2]);
    long size_b = 0;
    close(open_evicted(path_b, &size_b, O_RDONLY));
    CHECK(pthread_create(&thread, NULL, file_reader, path_b) == 0);
    CHECK(pthread_join(thread, NULL) == 0);
  } else if (strcmp(mode, "copy") == 0) {
    touch(0);
    usleep(100000);
    static char chunk[1 << 20];
    for (long off = sizeof(chunk); off + (long)sizeof(chunk) <= size; off += sizeof(chunk)) {
      long w0, w1;
      uint64_t d0 = run_delay_ns();
      thread_major_waits(&w0);
      uint64_t c0 = cpu_now_ns(), t0 = now_ns();
      memcpy(chunk, m + off, sizeof(chunk));
      uint64_t t1 = now_ns(), c1 = cpu_now_ns();
      thread_major_waits(&w1);
      uint64_t d1 = run_delay_ns();
      printf("COPY\toffset=%ld\tt0=%llu\tt1=%llu\tcpu=%llu\tdelay=%llu\twaits=%ld\n", off,
             (unsigned long long)t0, (unsigned long long)t1, (unsigned long long)(c1 - c0),
             (unsigned long long)(d1 - d0), w1 - w0);
    }
    g_sink += (unsigned char)chunk[17];
  } else if (strcmp(mode, "pool") == 0) {
    for (long round = 0; round < 4; ++round) {
      pthread_t pool[4];
      for (long i = 0; i < 4; ++i) {
        CHECK(pthread_create(&pool[i], NULL, short_toucher, (void*)(round * 4 + i)) == 0);
      }
      for (long i = 0; i < 4; ++i) CHECK(pthread_join(pool[i], NULL) == 0);
    }
  } else {
    fprintf(stderr, "map_touch: unknown mode %s\n", mode);
    return 2;
  }
  CHECK(munmap(m, (size_t)size) == 0);
  return 0;
}
