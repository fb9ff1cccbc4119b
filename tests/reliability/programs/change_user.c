/* A root process that gives up its user for another without exec, then
 * writes a file, as daemons and privilege-separating tools do.
 *
 *   change_user MODE DIR UID GID
 *
 * Writes 100 bytes to DIR/before.bin as root; then becomes UID:GID with no
 * supplementary groups; then creates DIR/after.bin (DIR must be writable by
 * UID), writes 4096 bytes to it and closes it; prints "IDS ruid euid rgid
 * egid" and "WROTE 4096". Before the change errno is set to 4242, and
 * "ERRNO e" says what the calls (all successful) left there: 4242 untraced
 * (the tracer's preparation around them once left 3, ESRCH). MODE:
 *   setresuid  setgroups(0), setresgid, setresuid (the usual order)
 *   keepcaps   as setpriv --reuid --regid: PR_SET_KEEPCAPS on the main
 *              thread, setresuid first, its capabilities made effective
 *              again (capset, on that thread), then setgroups and
 *              setresgid with them
 *   threads    setresuid's order while a second thread makes one-byte
 *              preads of before.bin until the main thread is done (one at
 *              least); prints "PREADS n"
 *   fork       setresuid's order, then a forked child lists its descriptors
 *              ("CHILD FDS 0 1 2 ...") and writes DIR/child.bin (100 bytes);
 *              the parent waits for it and prints its status */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "rel.h"

static char before_path[PATH_MAX];
static atomic_int done;
static long preads;

static void write_file(const char* dir, const char* name, size_t size) {
  static char buf[4096];
  memset(buf, 'u', sizeof(buf));
  char path[PATH_MAX];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  CHECK(fd >= 0);
  CHECK(write(fd, buf, size) == (ssize_t)size);
  CHECK(close(fd) == 0);
}

static void* reader(void* arg) {
  (void)arg;
  int fd = open(before_path, O_RDONLY);
  CHECK(fd >= 0);
  char c;
  while (!atomic_load(&done) || preads == 0) {
    CHECK(pread(fd, &c, 1, preads % 100) == 1);
    ++preads;
  }
  CHECK(close(fd) == 0);
  return NULL;
}

static void list_fds(void) {
  DIR* d = opendir("/proc/self/fd");
  CHECK(d != NULL);
  int fds[64], n = 0, self = dirfd(d);
  for (struct dirent* e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.' || atoi(e->d_name) == self) continue;
    if (n < 64) fds[n++] = atoi(e->d_name);
  }
  closedir(d);
  for (int i = 0; i < n; ++i) {  /* sorted: the kernel's order is not promised */
    for (int j = i + 1; j < n; ++j) {
      if (fds[j] < fds[i]) {
        int t = fds[i];
        fds[i] = fds[j];
        fds[j] = t;
      }
    }
  }
  printf("CHILD FDS");
  for (int i = 0; i < n; ++i) printf(" %d", fds[i]);
  printf("\n");
}

int main(int argc, char** argv) {
  CHECK(argc == 5);
  const char* mode = argv[1];
  const char* dir = argv[2];
  uid_t uid = (uid_t)atol(argv[3]);
  gid_t gid = (gid_t)atol(argv[4]);
  snprintf(before_path, sizeof(before_path), "%s/before.bin", dir);
  write_file(dir, "before.bin", 100);
  pthread_t thread;
  if (strcmp(mode, "threads") == 0) CHECK(pthread_create(&thread, NULL, reader, NULL) == 0);
  errno = 4242;
  if (strcmp(mode, "keepcaps") == 0) {
    CHECK(prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) == 0);
    CHECK(setresuid(uid, uid, uid) == 0);
    /* The uid change emptied the effective set (kept: the permitted one);
     * back, on this thread alone, as libcap-ng's capng_apply does. */
    struct __user_cap_header_struct head = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct caps[2];
    CHECK(syscall(SYS_capget, &head, caps) == 0);
    caps[0].effective = caps[0].permitted;
    caps[1].effective = caps[1].permitted;
    CHECK(syscall(SYS_capset, &head, caps) == 0);
    CHECK(setgroups(0, NULL) == 0);
    CHECK(setresgid(gid, gid, gid) == 0);
  } else {
    CHECK(setgroups(0, NULL) == 0);
    CHECK(setresgid(gid, gid, gid) == 0);
    CHECK(setresuid(uid, uid, uid) == 0);
  }
  printf("ERRNO %d\n", errno);
  write_file(dir, "after.bin", 4096);
  if (strcmp(mode, "threads") == 0) {
    atomic_store(&done, 1);
    CHECK(pthread_join(thread, NULL) == 0);
    printf("PREADS %ld\n", preads);
  }
  if (strcmp(mode, "fork") == 0) {
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      list_fds();
      write_file(dir, "child.bin", 100);
      fflush(stdout);
      _exit(0);
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    printf("CHILD STATUS %d\n", status);
  }
  printf("IDS %d %d %d %d\n", (int)getuid(), (int)geteuid(), (int)getgid(), (int)getegid());
  printf("WROTE 4096\n");
  return 0;
}
