/* Records many events, waits past the flush interval, then SIGKILLs itself.
 *
 * usage: sigkill_self FILE PREADS SLEEP_MS
 *
 * Prints "DONE <pid> <preads>" before the sleep. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <time.h>

#include "common.h"

int main(int argc, char** argv) {
  CHECK(argc == 4);
  long preads = atol(argv[2]);
  long sleep_ms = atol(argv[3]);
  int fd = open(argv[1], O_RDONLY);
  CHECK(fd >= 0);
  char buf[128];
  for (long i = 0; i < preads; ++i) CHECK(pread(fd, buf, sizeof(buf), (i % 32) * 128) == 128);
  printf("DONE %d %ld\n", raw_getpid(), preads);
  fflush(stdout);
  struct timespec ts = {sleep_ms / 1000, (sleep_ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
  kill(getpid(), SIGKILL);
  return 1;
}
