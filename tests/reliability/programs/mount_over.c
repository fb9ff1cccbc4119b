/* Makes a user and mount namespace of its own, then mounts a tmpfs over the
 * trace's directory (the order of a rootless container's start: unshare,
 * then mount, pivot_root or chroot), and reads a file on, from new threads
 * too (test_namespaces.py).
 *
 *   mount_over FILE DIR
 *
 * One pread of 2 bytes of FILE before; unshare(CLONE_NEWUSER|CLONE_NEWNS),
 * / made private, a tmpfs mounted on DIR; then 4 threads one after another
 * make 50 preads of 7 bytes each, and the main thread 100 of 9. Prints
 * "UNSHARE r errno", "MOUNT r errno" and "PREADS n" (the preads it made);
 * exit status 0 whatever the calls return (the reads are made all the same). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mount.h>

#include "rel.h"

static int data;
static long preads;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void read_n(int count, int size) {
  char buf[16];
  for (int i = 0; i < count; i++) {
    CHECK(pread(data, buf, (size_t)size, 0) == size);
    pthread_mutex_lock(&mu);
    ++preads;
    pthread_mutex_unlock(&mu);
  }
}

static void* reader(void* arg) {
  (void)arg;
  read_n(50, 7);
  return NULL;
}

int main(int argc, char** argv) {
  CHECK(argc == 3);
  data = open(argv[1], O_RDONLY);
  CHECK(data >= 0);
  read_n(1, 2);
  int r = unshare(CLONE_NEWUSER | CLONE_NEWNS);
  printf("UNSHARE %d %d\n", r, r == 0 ? 0 : errno);
  r = mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL);
  if (r == 0) r = mount("tmpfs", argv[2], "tmpfs", 0, NULL);
  printf("MOUNT %d %d\n", r, r == 0 ? 0 : errno);
  fflush(stdout);
  for (int i = 0; i < 4; i++) {
    pthread_t t;
    CHECK(pthread_create(&t, NULL, reader, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
  }
  read_n(100, 9);
  printf("PREADS %ld\n", preads);
  return 0;
}
