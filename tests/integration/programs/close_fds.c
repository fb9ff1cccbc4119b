/* Programs that sweep the descriptor table, then do I/O.
 *
 * usage: close_fds MODE DIR
 *
 * MODE:
 *   loop         close(fd) for every fd from 3 to 1024, counting results
 *   fork_loop    the same in a forked child, which does the rest too and
 *                leaves with _exit; the parent waits for it
 *   close_range  close_range(3, ~0U, 0)
 *   closefrom    closefrom(3)
 *   closefrom_enosys  closefrom(3) where close_range fails with ENOSYS (a
 *                seccomp filter, as a kernel before 5.9 or a container's
 *                profile answers): glibc closes what /proc/self/fd lists
 *   proc         close every fd listed in /proc/self/fd from 3 up
 *   dup2         dup2() DIR/dup.dat onto every fd from 3 to 1023, write
 *                through some copies and read back through others, then
 *                close them all
 *   dup2_limit   the same up to the soft RLIMIT_NOFILE, lowered to 256
 *                first: every fd number is taken
 *   close_range_loop  50000 times: a stat, close_range(3, ~0U, 0), an open
 *                of DIR/victim.dat (O_APPEND), a write of one byte and a
 *                close -- sweeps while the tracer writes its trace
 *   close_loop_while_reading  a daemon's close(fd) loop from 3 to 1023,
 *                again and again while a thread makes 400000 preads of
 *                DIR/victim.dat (whose fd the loop leaves open)
 *
 * Then opens DIR/after.dat, writes 4096 bytes, reads them back and closes
 * it. Prints what it saw; nothing in the output depends on the pid. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "common.h"

static char dir[PATH_MAX / 2];
static char buf[8192];

static void path_in(char* out, const char* name) {
  snprintf(out, PATH_MAX, "%s/%s", dir, name);
}

static void after(void) {
  char path[PATH_MAX];
  path_in(path, "after.dat");
  int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
  CHECK(fd >= 0);
  memset(buf, 'z', 4096);
  ssize_t w = write(fd, buf, 4096);
  off_t o = lseek(fd, 0, SEEK_SET);
  memset(buf, 0, 4096);
  ssize_t r = read(fd, buf, 4096);
  int same = memchr(buf, 0, 4096) == NULL && buf[0] == 'z';
  int c = close(fd);
  printf("AFTER fd=%d wrote=%zd seek=%lld read=%zd same=%d close=%d\n", fd, w,
         (long long)o, r, same, c);
}

static int victim_fd;
static volatile int reading = 1;

static void* read_victim(void* arg) {
  (void)arg;
  long* reads = calloc(1, sizeof(long));
  for (int i = 0; i < 400000; ++i) *reads += pread(victim_fd, buf, 64, 0) == 64;
  reading = 0;
  return reads;
}

/* Every number the program could have but the victim's, closed again and
 * again: the tracer's descriptor among them whenever it writes its trace. */
static void close_loop_while_reading(void) {
  char victim[PATH_MAX];
  path_in(victim, "victim.dat");
  victim_fd = open(victim, O_RDWR | O_CREAT | O_TRUNC, 0644);
  CHECK(victim_fd >= 0);
  memset(buf, 'v', 4096);
  CHECK(write(victim_fd, buf, 4096) == 4096);
  pthread_t reader;
  CHECK(pthread_create(&reader, NULL, read_victim, NULL) == 0);
  while (reading) {
    for (int fd = 3; fd <= 1023; ++fd) {
      if (fd != victim_fd) close(fd);
    }
  }
  void* reads;
  CHECK(pthread_join(reader, &reads) == 0);
  printf("CLOSE_LOOP_WHILE_READING reads=%ld\n", *(long*)reads);
  free(reads);
  close(victim_fd);
}

static void dup2_sweep(int last) {
  char path[PATH_MAX];
  path_in(path, "dup.dat");
  int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
  CHECK(fd >= 0);
  int fails = 0;
  for (int k = 3; k <= last; ++k) {
    if (k == fd) continue;
    if (dup2(fd, k) != k) ++fails;
  }
  printf("DUP2 last=%d fails=%d\n", last, fails);
  /* Write 100 records through different copies (one description: the
   * position is shared), then read them all back through another. */
  for (int i = 0; i < 100; ++i) {
    int via = 3 + (i * 37) % (last - 2);
    char rec[32];
    int n = snprintf(rec, sizeof(rec), "record %03d via %04d\n", i, via);
    CHECK(write(via, rec, (size_t)n) == n);
  }
  CHECK(lseek(last, 0, SEEK_SET) == 0);
  ssize_t r = read(last - 1, buf, sizeof(buf));
  int ok = 1;
  for (int i = 0, at = 0; i < 100; ++i) {
    char rec[32];
    int via = 3 + (i * 37) % (last - 2);
    int n = snprintf(rec, sizeof(rec), "record %03d via %04d\n", i, via);
    if (at + n > r || memcmp(buf + at, rec, (size_t)n) != 0) ok = 0;
    at += n;
  }
  printf("READBACK bytes=%zd ok=%d\n", r, ok);
  int closed = 0;
  for (int k = 3; k <= last; ++k) closed += close(k) == 0;
  printf("CLOSED %d\n", closed);
}

int main(int argc, char** argv) {
  CHECK(argc == 3);
  const char* mode = argv[1];
  snprintf(dir, sizeof(dir), "%s", argv[2]);
  char path[PATH_MAX];
  path_in(path, "before.dat");
  int before = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  CHECK(before >= 0);
  CHECK(write(before, "before\n", 7) == 7);

  if (strcmp(mode, "fork_loop") == 0) {
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid > 0) {
      int status;
      CHECK(waitpid(pid, &status, 0) == pid);
      printf("PARENT child status=%d\n", status);
      return 0;
    }
    mode = "loop";
  }
  if (strcmp(mode, "loop") == 0) {
    int ok = 0, ebadf = 0, other = 0;
    for (int fd = 3; fd <= 1024; ++fd) {
      errno = 0;
      if (close(fd) == 0) ++ok;
      else if (errno == EBADF) ++ebadf;
      else ++other;
    }
    printf("LOOP ok=%d ebadf=%d other=%d\n", ok, ebadf, other);
  } else if (strcmp(mode, "close_range") == 0) {
    printf("CLOSE_RANGE %d\n", close_range(3, ~0U, 0));
  } else if (strcmp(mode, "close_range_loop") == 0) {
    char victim[PATH_MAX];
    snprintf(victim, sizeof(victim), "%s/victim.dat", dir);
    close(open(victim, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    int failed = 0;
    for (int i = 0; i < 50000; ++i) {
      struct stat st;
      stat(dir, &st);
      close_range(3, ~0U, 0);
      int fd = open(victim, O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd < 0 || write(fd, "X", 1) != 1) ++failed;
      close(fd);
    }
    struct stat st;
    CHECK(stat(victim, &st) == 0);
    printf("CLOSE_RANGE_LOOP size=%lld failed=%d\n", (long long)st.st_size, failed);
  } else if (strcmp(mode, "close_loop_while_reading") == 0) {
    close_loop_while_reading();
  } else if (strcmp(mode, "closefrom") == 0) {
    closefrom(3);
    printf("CLOSEFROM\n");
  } else if (strcmp(mode, "closefrom_enosys") == 0) {
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_close_range, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    struct sock_fprog prog = {sizeof(filter) / sizeof(filter[0]), filter};
    CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
    CHECK(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0);
    closefrom(3);
    printf("CLOSEFROM_ENOSYS\n");
  } else if (strcmp(mode, "proc") == 0) {
    int fds[4096], n = 0;
    DIR* d = opendir("/proc/self/fd");
    CHECK(d != NULL);
    struct dirent* e;
    while ((e = readdir(d)) != NULL && n < 4096) {
      if (e->d_name[0] >= '0' && e->d_name[0] <= '9') fds[n++] = atoi(e->d_name);
    }
    closedir(d);
    for (int i = 0; i < n; ++i) {
      if (fds[i] >= 3) close(fds[i]);
    }
    printf("PROC\n");
  } else if (strcmp(mode, "dup2") == 0) {
    dup2_sweep(1023);
  } else if (strcmp(mode, "dup2_limit") == 0) {
    struct rlimit lim;
    CHECK(getrlimit(RLIMIT_NOFILE, &lim) == 0);
    lim.rlim_cur = 256;
    CHECK(setrlimit(RLIMIT_NOFILE, &lim) == 0);
    dup2_sweep(255);
  } else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  /* `before` was closed by every sweep. */
  errno = 0;
  int r = write(before, "x", 1);
  printf("BEFORE_FD write=%d errno=%d\n", r, errno);
  after();
  fflush(stdout);
  if (strcmp(argv[1], "fork_loop") == 0) _exit(0);
  return 0;
}
