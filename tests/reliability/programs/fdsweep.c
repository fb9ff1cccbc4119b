/* Programs that go after every descriptor, the tracer's included.
 *
 *   fdsweep MODE DIR
 *
 * Every mode writes DIR/before.dat (open, write 4096, keep it open), does
 * its sweep, then opens DIR/after.dat, writes 4096 bytes, reads them back
 * and closes it, and prints what it saw ("SWEEP ...", "AFTER ok=1").
 *
 *   limit      close() every fd from 3 to the RLIMIT_NOFILE soft limit
 *   range      close_range(3, ~0U, 0)
 *   findclose  find the tracer's fd in /proc/self/fd (a link to *.dlprof)
 *              and close() it (the program must see EBADF: without the
 *              tracer there is no such fd); with none found, close fd 100
 *   finddup2   dup2() DIR/dup.dat onto the fd /proc/self/fd lists as a
 *              *.dlprof file (or fd 100 when there is none), write 100
 *              records of 20 bytes through it, read them back
 *   stderr     close fd 2, open DIR/err.dat (so it becomes fd 2), write 4096
 *              bytes to it and leave it open until exit
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "rel.h"

static char buf[4096];

static int tracer_fd(void) {
  /* Raw system calls: the program looks, the tracer does not see it. */
  for (int fd = 0; fd < 65536; ++fd) {
    char link[64], target[PATH_MAX];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    long n = syscall(SYS_readlink, link, target, sizeof(target) - 1);
    if (n <= 0) continue;
    target[n] = '\0';
    if (n > 7 && strcmp(target + n - 7, ".dlprof") == 0) return fd;
  }
  return -1;
}

static void path_in(char* out, const char* dir, const char* name) {
  snprintf(out, PATH_MAX, "%s/%s", dir, name);
}

int main(int argc, char** argv) {
  CHECK(argc == 3);
  const char* mode = argv[1];
  const char* dir = argv[2];
  char path[PATH_MAX];
  for (size_t i = 0; i < sizeof(buf); ++i) buf[i] = (char)(i * 7);

  path_in(path, dir, "before.dat");
  int before = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  CHECK(before >= 0);
  CHECK(write(before, buf, sizeof(buf)) == (ssize_t)sizeof(buf));

  if (strcmp(mode, "limit") == 0) {
    struct rlimit lim;
    CHECK(getrlimit(RLIMIT_NOFILE, &lim) == 0);
    long ok = 0, bad = 0;
    for (long fd = 3; fd < (long)lim.rlim_cur; ++fd) {
      if (close((int)fd) == 0) ++ok;
      else if (errno == EBADF) ++bad;
    }
    printf("SWEEP limit closed=%ld\n", ok);
  } else if (strcmp(mode, "range") == 0) {
    printf("SWEEP range ret=%d\n", close_range(3, ~0U, 0));
  } else if (strcmp(mode, "findclose") == 0) {
    int fd = tracer_fd();
    if (fd < 0) fd = 100;
    errno = 0;
    int r = close(fd);
    printf("SWEEP findclose ret=%d errno=%d\n", r, errno);
  } else if (strcmp(mode, "finddup2") == 0) {
    int fd = tracer_fd();
    if (fd < 0) fd = 100;
    path_in(path, dir, "dup.dat");
    int d = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
    CHECK(d >= 0);
    int r = dup2(d, fd);
    printf("SWEEP finddup2 same=%d\n", r == fd);
    CHECK(close(d) == 0);
    char rec[20];
    for (int i = 0; i < 100; ++i) {
      memset(rec, 'a' + i % 26, sizeof(rec));
      CHECK(write(fd, rec, sizeof(rec)) == (ssize_t)sizeof(rec));
    }
    char back[2000];
    CHECK(pread(fd, back, sizeof(back), 0) == (ssize_t)sizeof(back));
    int ok = 1;
    for (int i = 0; i < 100; ++i) ok &= back[i * 20] == 'a' + i % 26;
    printf("READBACK ok=%d\n", ok);
    CHECK(close(fd) == 0);
  } else if (strcmp(mode, "stderr") == 0) {
    CHECK(close(2) == 0);
    path_in(path, dir, "err.dat");
    int e = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    printf("SWEEP stderr fd=%d\n", e);
    CHECK(write(e, buf, sizeof(buf)) == (ssize_t)sizeof(buf));
  } else {
    CHECK(!"unknown mode");
  }

  path_in(path, dir, "after.dat");
  int after = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
  CHECK(after >= 0);
  CHECK(write(after, buf, sizeof(buf)) == (ssize_t)sizeof(buf));
  char back[sizeof(buf)];
  CHECK(pread(after, back, sizeof(back), 0) == (ssize_t)sizeof(back));
  printf("AFTER ok=%d\n", memcmp(back, buf, sizeof(buf)) == 0);
  CHECK(close(after) == 0);
  fflush(stdout);
  return 0;
}
