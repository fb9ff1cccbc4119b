/* Several threads hammer one file with pread at known offsets.
 *
 * usage: threads_pread FILE THREADS ITERATIONS [WAVES]
 *
 * Thread k reads 64 bytes at offset ((i + k) % 50) * 64 for i in
 * [0, ITERATIONS) and prints "TID <tid> <reads> <bytes>" once done; the
 * threads of a wave start together, and WAVES (default 1) waves of THREADS
 * threads run one after the other (threads that end while others start). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>

#include "common.h"

static int fd;
static long iterations;
static pthread_barrier_t start;
static pthread_mutex_t out = PTHREAD_MUTEX_INITIALIZER;

static void* worker(void* arg) {
  long k = (long)arg;
  char buf[64];
  long reads = 0, bytes = 0;
  pthread_barrier_wait(&start);
  for (long i = 0; i < iterations; ++i) {
    ssize_t r = pread(fd, buf, sizeof(buf), ((i + k) % 50) * 64);
    CHECK(r == 64);
    ++reads;
    bytes += r;
  }
  pthread_mutex_lock(&out);
  printf("TID %d %ld %ld\n", raw_gettid(), reads, bytes);
  pthread_mutex_unlock(&out);
  return NULL;
}

int main(int argc, char** argv) {
  CHECK(argc == 4 || argc == 5);
  int threads = atoi(argv[2]);
  iterations = atol(argv[3]);
  fd = open(argv[1], O_RDONLY);
  CHECK(fd >= 0);
  CHECK(raw_file_size(fd) >= 50 * 64);
  printf("FD %d\n", fd);
  int waves = argc > 4 ? atoi(argv[4]) : 1;
  pthread_t t[64];
  CHECK(threads > 0 && threads <= 64);
  pthread_barrier_init(&start, NULL, (unsigned)threads);
  for (int w = 0; w < waves; ++w) {
    for (long k = 0; k < threads; ++k) {
      CHECK(pthread_create(&t[k], NULL, worker, (void*)k) == 0);
    }
    for (int k = 0; k < threads; ++k) pthread_join(t[k], NULL);
  }
  close(fd);
  return 0;
}
