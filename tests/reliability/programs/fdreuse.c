/* A descriptor number freed by close() and taken at once by another
 * thread's pipe: the pipe's reads and writes are not the closed file's.
 *
 *   fdreuse FILE N
 *
 * Thread A opens FILE and closes it, N times, and never reads or writes it.
 * Thread B, N times, makes a pipe (its fds take the lowest free numbers,
 * often the one A's close just freed), writes 7 bytes into it, reads them
 * back and closes both ends. Prints "OPENS <n> PIPE_READS <r>"; the trace
 * must hold no event on FILE but its opens and closes (test_fds.py). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>

#include "rel.h"

static const char* g_file;
static long g_n;

static void* opener(void* arg) {
  long* opens = arg;
  for (long i = 0; i < g_n; i++) {
    int fd = open(g_file, O_RDONLY);
    CHECK(fd >= 0);
    ++*opens;
    CHECK(close(fd) == 0);
  }
  return NULL;
}

static void* piper(void* arg) {
  long* reads = arg;
  char b[8];
  for (long i = 0; i < g_n; i++) {
    int p[2];
    CHECK(pipe(p) == 0);
    CHECK(write(p[1], "1234567", 7) == 7);
    CHECK(read(p[0], b, 7) == 7);
    ++*reads;
    CHECK(close(p[0]) == 0 && close(p[1]) == 0);
  }
  return NULL;
}

int main(int argc, char** argv) {
  CHECK(argc == 3);
  g_file = argv[1];
  g_n = atol(argv[2]);
  long opens = 0, reads = 0;
  pthread_t a, b;
  CHECK(pthread_create(&a, NULL, opener, &opens) == 0);
  CHECK(pthread_create(&b, NULL, piper, &reads) == 0);
  CHECK(pthread_join(a, NULL) == 0 && pthread_join(b, NULL) == 0);
  char line[100];  /* raw_say: the output is no event of its own */
  snprintf(line, sizeof line, "OPENS %ld PIPE_READS %ld\n", opens, reads);
  raw_say(line);
  return 0;
}
