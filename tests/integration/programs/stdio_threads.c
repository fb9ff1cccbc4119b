/* Threads writing to one stream (tests/integration/test_stdio.py).
 *
 *   stdio_threads FILE
 *
 * 4 threads each fwrite 25000 records of 4 bytes to one stream opened on
 * FILE. glibc takes the stream's lock for each call, so every record lands
 * at its own offset: 0, 4, ..., 399996, in whatever order the threads take
 * turns. Prints "SIZE <bytes>" (the stream's position at the end). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>

#include "common.h"

static FILE* g_stream;

static void* writer(void* record) {
  for (int i = 0; i < 25000; ++i) CHECK(fwrite(record, 1, 4, g_stream) == 4);
  return NULL;
}

int main(int argc, char** argv) {
  CHECK(argc == 2);
  g_stream = fopen(argv[1], "w");
  CHECK(g_stream != NULL);
  pthread_t threads[4];
  static const char* records[4] = {"AAAA", "BBBB", "CCCC", "DDDD"};
  for (int k = 0; k < 4; ++k) {
    CHECK(pthread_create(&threads[k], NULL, writer, (void*)records[k]) == 0);
  }
  for (int k = 0; k < 4; ++k) CHECK(pthread_join(threads[k], NULL) == 0);
  printf("SIZE %ld\n", ftell(g_stream));
  CHECK(fclose(g_stream) == 0);
  return 0;
}
