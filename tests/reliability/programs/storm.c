/* Thread storms.
 *
 *   storm rounds FILE ROUNDS THREADS PER
 *     ROUNDS times: start THREADS threads at once and join them. Thread i of
 *     round r opens FILE, makes PER 1-byte preads at the offsets
 *     (r*THREADS + i)*PER + k, k < PER (each offset once in the whole run),
 *     and closes its fd. Prints "TOTAL <preads>".
 *
 *   storm burst FILE THREADS N
 *     THREADS threads, released together, each make N 1-byte preads at the
 *     offsets 0, 1, ..., N-1 on one shared fd (FILE must hold N bytes).
 *     Prints "TID <tid> <n>" per thread and "TOTAL <preads>".
 *
 *   storm stale CLOSED SHARED THREADS
 *     Opens SHARED, then CLOSED, and closes CLOSED by the system call itself
 *     (the tracer does not see it: its fd table keeps the descriptor as
 *     CLOSED's); then starts THREADS threads, one at a time, each of which
 *     makes one 1-byte pread of SHARED at offset 0, its first call (the
 *     tracer gives the thread its ring then, and its own descriptor for
 *     it takes the number CLOSED had). Prints "FREED <fd>".
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/syscall.h>

#include "rel.h"

static const char* path;
static int shared_fd;
static long per, rounds_threads;
static pthread_barrier_t start;
static pthread_mutex_t out = PTHREAD_MUTEX_INITIALIZER;

struct arg {
  long round;
  long index;
  long done;
  int tid;
};

static void* round_worker(void* p) {
  struct arg* a = p;
  char c;
  pthread_barrier_wait(&start);
  int fd = open(path, O_RDONLY);
  CHECK(fd >= 0);
  for (long k = 0; k < per; ++k) {
    off_t off = (off_t)((a->round * rounds_threads + a->index) * per + k);
    CHECK(pread(fd, &c, 1, off) == 1);
    ++a->done;
  }
  CHECK(close(fd) == 0);
  return NULL;
}

static void* stale_worker(void* p) {
  char c;
  CHECK(pread(shared_fd, &c, 1, 0) == 1);
  return p;
}

static void* burst_worker(void* p) {
  struct arg* a = p;
  char c;
  a->tid = raw_gettid();
  pthread_barrier_wait(&start);
  for (long k = 0; k < per; ++k) {
    CHECK(pread(shared_fd, &c, 1, (off_t)k) == 1);
    ++a->done;
  }
  return NULL;
}

int main(int argc, char** argv) {
  CHECK(argc >= 2);
  if (strcmp(argv[1], "rounds") == 0) {
    CHECK(argc == 6);
    path = argv[2];
    long rounds = atol(argv[3]);
    rounds_threads = atol(argv[4]);
    per = atol(argv[5]);
    pthread_t* t = calloc((size_t)rounds_threads, sizeof(pthread_t));
    struct arg* args = calloc((size_t)rounds_threads, sizeof(struct arg));
    CHECK(t && args);
    long total = 0;
    for (long r = 0; r < rounds; ++r) {
      pthread_barrier_init(&start, NULL, (unsigned)rounds_threads);
      for (long i = 0; i < rounds_threads; ++i) {
        args[i] = (struct arg){r, i, 0, 0};
        CHECK(pthread_create(&t[i], NULL, round_worker, &args[i]) == 0);
      }
      for (long i = 0; i < rounds_threads; ++i) {
        CHECK(pthread_join(t[i], NULL) == 0);
        total += args[i].done;
      }
      pthread_barrier_destroy(&start);
    }
    printf("TOTAL %ld\n", total);
    return 0;
  }
  if (strcmp(argv[1], "burst") == 0) {
    CHECK(argc == 5);
    path = argv[2];
    long threads = atol(argv[3]);
    per = atol(argv[4]);
    shared_fd = open(path, O_RDONLY);
    CHECK(shared_fd >= 0);
    pthread_t* t = calloc((size_t)threads, sizeof(pthread_t));
    struct arg* args = calloc((size_t)threads, sizeof(struct arg));
    CHECK(t && args);
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    for (long i = 0; i < threads; ++i) {
      CHECK(pthread_create(&t[i], NULL, burst_worker, &args[i]) == 0);
    }
    long total = 0;
    for (long i = 0; i < threads; ++i) {
      CHECK(pthread_join(t[i], NULL) == 0);
      total += args[i].done;
      pthread_mutex_lock(&out);
      printf("TID %d %ld\n", args[i].tid, args[i].done);
      pthread_mutex_unlock(&out);
    }
    CHECK(close(shared_fd) == 0);
    printf("TOTAL %ld\n", total);
    return 0;
  }
  if (strcmp(argv[1], "stale") == 0) {
    CHECK(argc == 5);
    shared_fd = open(argv[3], O_RDONLY);
    CHECK(shared_fd >= 0);
    int fd = open(argv[2], O_RDONLY);
    CHECK(fd >= 0);
    CHECK(syscall(SYS_close, fd) == 0);
    for (long i = 0; i < atol(argv[4]); ++i) {
      pthread_t t;
      CHECK(pthread_create(&t, NULL, stale_worker, NULL) == 0);
      CHECK(pthread_join(t, NULL) == 0);
    }
    printf("FREED %d\n", fd);
    return 0;
  }
  CHECK(!"unknown mode");
  return 1;
}
