/* lseek_loop: the job-scale benchmark's workload (bench/job_scale.sh).
 *
 *   lseek_loop FILE N
 *
 * Opens FILE and calls lseek on it N times (offsets stepping through the
 * first MiB), then closes it: N + 2 traced calls, the cheapest I/O event
 * there is, so that traces of many events are quick to make. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: lseek_loop FILE N\n");
    return 2;
  }
  const long n = atol(argv[2]);
  int fd = open(argv[1], O_RDONLY);
  if (fd < 0) {
    perror(argv[1]);
    return 1;
  }
  for (long i = 0; i < n; ++i) {
    if (lseek(fd, (off_t)((i * 4096) & 0xfffff), SEEK_SET) < 0) {
      perror("lseek");
      return 1;
    }
  }
  close(fd);
  return 0;
}
