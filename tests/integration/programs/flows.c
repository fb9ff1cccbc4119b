/* Flow annotations across processes and threads, as a DataLoader's would be
 * (tests/integration/test_perfetto.py).
 *
 *   flows N   a forked child ("the worker") starts flows "batch" 100..100+N-1,
 *             each inside a region "fetch_batch" holding one pread of 512 bytes
 *             of its own executable, and writes a byte to a pipe after each;
 *             the parent ("the loop") reads each byte inside a region
 *             "load_batch" and finishes that flow there. Then a thread starts
 *             flow "handoff" 7 and the main thread finishes it after joining.
 * Prints "ok" and exits 0; runs the same without dlprof. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dlprof/dlprof.h"

static void* handoff(void* arg) {
  (void)arg;
  dlprof_flow_start("handoff", 7);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: flows N\n");
    return 2;
  }
  const int n = atoi(argv[1]);
  int fds[2];
  if (pipe(fds) != 0) return 2;
  pid_t child = fork();
  if (child < 0) return 2;
  if (child == 0) {
    close(fds[0]);
    int self = open("/proc/self/exe", O_RDONLY);
    char buf[512];
    for (int i = 0; i < n; ++i) {
      dlprof_region_begin("fetch_batch");
      if (pread(self, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf)) _exit(3);
      dlprof_flow_start("batch", (uint64_t)(100 + i));
      dlprof_region_end();
      if (write(fds[1], "b", 1) != 1) _exit(3);
    }
    _exit(0);
  }
  close(fds[1]);
  for (int i = 0; i < n; ++i) {
    char c;
    dlprof_region_begin("load_batch");
    if (read(fds[0], &c, 1) != 1) return 3;
    dlprof_flow_finish("batch", (uint64_t)(100 + i));
    dlprof_region_end();
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return 3;
  }
  pthread_t t;
  if (pthread_create(&t, NULL, handoff, NULL) != 0) return 2;
  pthread_join(t, NULL);
  dlprof_flow_finish("handoff", 7);
  printf("ok\n");
  return 0;
}
