/* io_uring driven through raw syscall(), as fio's io_uring engine drives it:
 * the program sets the ring up with io_uring_setup, maps its three regions
 * itself, fills SQEs and the SQ array, enters with io_uring_enter and reaps
 * by reading the CQ ring and moving its head.
 *
 *   uring_raw DIR          reads, a readv, a failing write, an fadvise (an
 *                          opcode the tracer has no kind for), then a read
 *                          of a registered file submitted and waited for by
 *                          two separate io_uring_enter calls
 *   uring_raw DIR sqpoll   the same first round on an SQPOLL ring (the
 *                          tracer does not follow such a ring; prints
 *                          SKIP when the kernel refuses SQPOLL)
 *   uring_raw DIR gone HOW a pipe's write end registered in a ring, then
 *                          the program's own descriptor of it closed, the
 *                          ring unmapped and its fd closed by HOW: dup2
 *                          (another file onto it), close_range or
 *                          syscall(SYS_close). With the ring freed, the pipe
 *                          has no writer: its reader sees the hang-up
 *                          ("HANGUP\t1"; "HANGUP\t0" after 20 s without)
 *   uring_raw DIR badptr   requests whose pointers are bad: an openat's and
 *                          a statx's path, a readv's iovec array, an
 *                          openat2's open_how. Each completes with -EFAULT
 *                          ("RES\tud=N\tres=R"), as untraced; then a files
 *                          update of 2 slots whose fd array ends after its
 *                          first: the kernel updates 1 ("CALL\t...")
 *   uring_raw DIR shared   a read reaped; a forked child submits a read on
 *                          the same ring; the parent submits another
 *   uring_raw DIR append   writes that land at the file's end whatever their
 *                          offset: at offset 7 on an O_APPEND fd, then with
 *                          RWF_APPEND at offset 0 of another fd of the file
 *                          (no offset recorded: where is not known), then a
 *                          write at that fd's position (offset -1), which
 *                          the appending write did not move: at 0; then
 *                          one with RWF_APPEND at that position, which
 *                          moves it to the end, and a write() there
 *   uring_raw DIR closed   a read of the FIFO DIR/w.fifo submitted, then a
 *                          thread waits for it in io_uring_enter while the
 *                          main thread closes the ring's fd (the ring lives
 *                          on in the program's mappings) and writes the
 *                          FIFO: the waiting call returns and the thread
 *                          reaps the read ("REAPED\tres=1")
 *
 * For each completion it prints the event the tracer must record, in the
 * order it reaped them: "EV\tname=...\tpath=...\t...".
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/openat2.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "async_want.h"

struct ring {
  int fd;
  unsigned *sq_head, *sq_tail, *sq_mask, *sq_array;
  unsigned *cq_head, *cq_tail, *cq_mask;
  struct io_uring_sqe* sqes;
  struct io_uring_cqe* cqes;
  unsigned queued;
  void* maps[3];      /* the SQ ring, the CQ ring, the SQEs */
  size_t map_len[3];
};

/* What each request is, by its user_data, to print at its completion. */
static struct want wants[64];

static void setup(struct ring* r, unsigned entries, unsigned flags) {
  struct io_uring_params p;
  memset(&p, 0, sizeof(p));
  p.flags = flags;
  r->fd = (int)syscall(SYS_io_uring_setup, entries, &p);
  if (r->fd < 0 && (flags & IORING_SETUP_SQPOLL)) {
    printf("SKIP\tsqpoll refused: %s\n", strerror(errno));
    exit(0);
  }
  CHECK(r->fd >= 0);
  size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
  size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
  char* sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
                  IORING_OFF_SQ_RING);
  CHECK(sq != MAP_FAILED);
  char* cq = mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
                  IORING_OFF_CQ_RING);
  CHECK(cq != MAP_FAILED);
  r->sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
  CHECK(r->sqes != MAP_FAILED);
  r->maps[0] = sq;
  r->map_len[0] = sq_len;
  r->maps[1] = cq;
  r->map_len[1] = cq_len;
  r->maps[2] = r->sqes;
  r->map_len[2] = p.sq_entries * sizeof(struct io_uring_sqe);
  r->sq_head = (unsigned*)(sq + p.sq_off.head);
  r->sq_tail = (unsigned*)(sq + p.sq_off.tail);
  r->sq_mask = (unsigned*)(sq + p.sq_off.ring_mask);
  r->sq_array = (unsigned*)(sq + p.sq_off.array);
  r->cq_head = (unsigned*)(cq + p.cq_off.head);
  r->cq_tail = (unsigned*)(cq + p.cq_off.tail);
  r->cq_mask = (unsigned*)(cq + p.cq_off.ring_mask);
  r->cqes = (struct io_uring_cqe*)(cq + p.cq_off.cqes);
  r->queued = 0;
}

/* The next SQE, published at once (tail moved): as fio's queue does. The
 * SQE slot is taken in reverse order of the SQ positions, so that the SQ
 * array is what maps one onto the other. */
static struct io_uring_sqe* next_sqe(struct ring* r, uint64_t user_data) {
  unsigned tail = *r->sq_tail;
  unsigned index = (*r->sq_mask - (tail & *r->sq_mask));
  struct io_uring_sqe* sqe = &r->sqes[index];
  memset(sqe, 0, sizeof(*sqe));
  sqe->user_data = user_data;
  r->sq_array[tail & *r->sq_mask] = index;
  __atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
  r->queued++;
  return sqe;
}

/* An SQE for `op` on `fd` at `off`, of `len` (bytes, iovecs) from `addr`. */
static struct io_uring_sqe* prep(struct ring* r, uint64_t user_data, int op, int fd,
                                 const void* addr, unsigned len, uint64_t off) {
  struct io_uring_sqe* sqe = next_sqe(r, user_data);
  sqe->opcode = (uint8_t)op;
  sqe->fd = fd;
  sqe->addr = (uint64_t)(uintptr_t)addr;
  sqe->len = len;
  sqe->off = off;
  return sqe;
}

static int enter(struct ring* r, unsigned to_submit, unsigned min_complete, unsigned flags) {
  int n = (int)syscall(SYS_io_uring_enter, r->fd, to_submit, min_complete, flags, NULL, 0);
  CHECK(n >= 0);
  return n;
}

/* Reaps every completion there is, printing what the tracer must record. */
static unsigned reap(struct ring* r) {
  unsigned head = *r->cq_head, n = 0;
  unsigned tail = __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE);
  for (; head != tail; ++head, ++n) {
    struct io_uring_cqe* c = &r->cqes[head & *r->cq_mask];
    print_want(&wants[c->user_data], c->res);
  }
  __atomic_store_n(r->cq_head, head, __ATOMIC_RELEASE);
  return n;
}

static int file_fd;  /* the fd every request names (a fixed file's: the fd registered) */
static void want(uint64_t ud, const char* name, const char* path, long long offset,
                 long long size, int flags) {
  wants[ud] = (struct want){name, path, offset, size, file_fd, flags, 0};
}

/* The "closed" mode: the ring a thread waits in while another closes it. */
static struct ring waited;
static int waited_fd;  /* its fd, closed by the main thread meanwhile */

static void* wait_in_ring(void* arg) {
  (void)arg;
  int n;
  do {
    n = (int)syscall(SYS_io_uring_enter, waited_fd, 0, 1, IORING_ENTER_GETEVENTS, NULL, 0);
  } while (n < 0 && errno == EINTR);
  CHECK(n >= 0);
  unsigned head = *waited.cq_head;
  CHECK(head != __atomic_load_n(waited.cq_tail, __ATOMIC_ACQUIRE));
  printf("REAPED\tres=%d\n", waited.cqes[head & *waited.cq_mask].res);
  __atomic_store_n(waited.cq_head, head + 1, __ATOMIC_RELEASE);
  return NULL;
}

/* Whether thread `tid` is blocked in io_uring_enter (/proc's syscall file
 * names the system call a blocked thread is in). */
static int waits_in_enter(int tid) {
  char path[64], text[32] = "";
  snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
  FILE* f = fopen(path, "r");
  CHECK(f != NULL);
  const int got = fgets(text, sizeof(text), f) != NULL;
  fclose(f);
  char want[16];
  snprintf(want, sizeof(want), "%d ", (int)SYS_io_uring_enter);
  return got && strncmp(text, want, strlen(want)) == 0;
}

static void closed_while_waiting(const char* dir) {
  static char path[4096];
  snprintf(path, sizeof(path), "%s/w.fifo", dir);
  CHECK(mkfifo(path, 0600) == 0);
  const int fifo = open(path, O_RDWR);  /* (no wait for the other end) */
  CHECK(fifo >= 0);
  setup(&waited, 8, 0);
  waited_fd = waited.fd;
  static char byte;
  prep(&waited, 1, IORING_OP_READ, fifo, &byte, 1, (uint64_t)-1);
  CHECK(enter(&waited, 1, 0, 0) == 1);
  int tid = 0;
  pthread_t t;
  CHECK(pthread_create(&t, NULL, wait_in_ring, NULL) == 0);
  /* Its tid, then until it waits in the kernel (not a timing: its state). */
  for (;;) {
    DIR* d = opendir("/proc/self/task");
    CHECK(d != NULL);
    struct dirent* e;
    while ((e = readdir(d)) != NULL) {
      const int id = atoi(e->d_name);
      if (id > 0 && id != raw_gettid()) tid = id;
    }
    closedir(d);
    if (tid != 0 && waits_in_enter(tid)) break;
    usleep(1000);
  }
  CHECK(close(waited_fd) == 0);
  CHECK(write(fifo, "x", 1) == 1);
  CHECK(pthread_join(t, NULL) == 0);
  CHECK(close(fifo) == 0);
}

/* The "gone" mode: a ring whose fd goes another way than close(). */
static void ring_gone(const char* how) {
  int p[2];
  CHECK(pipe(p) == 0);
  struct ring r;
  setup(&r, 8, 0);
  CHECK(syscall(SYS_io_uring_register, r.fd, IORING_REGISTER_FILES, &p[1], 1) == 0);
  CHECK(close(p[1]) == 0);  /* the ring holds the pipe's only writer now */
  for (int i = 0; i < 3; ++i) CHECK(munmap(r.maps[i], r.map_len[i]) == 0);
  if (strcmp(how, "dup2") == 0) {
    const int other = open("/dev/null", O_RDONLY);
    CHECK(other >= 0 && dup2(other, r.fd) == r.fd && close(other) == 0);
  } else if (strcmp(how, "close_range") == 0) {
    CHECK(close_range((unsigned)r.fd, (unsigned)r.fd, 0) == 0);
  } else {
    CHECK(syscall(SYS_close, r.fd) == 0);
  }
  struct pollfd pf = {p[0], POLLIN, 0};
  const int n = poll(&pf, 1, 20000);
  printf("HANGUP\t%d\n", n == 1 && (pf.revents & POLLHUP) ? 1 : 0);
}

/* The "badptr" mode: the tracer reads these before the kernel does (the
 * tracer's plain reads of them ended the program with SIGSEGV). */
static void bad_pointers(const char* dir) {
  static char path[4096];
  snprintf(path, sizeof(path), "%s/a.dat", dir);
  CHECK(close(make_file(path, 65536)) == 0);
  const int fd = open(path, O_RDONLY);
  CHECK(fd >= 0);
  file_fd = fd;
  struct ring r;
  setup(&r, 8, 0);
  const void* bad = (const void*)(uintptr_t)0x10;
  static struct statx stx;
  prep(&r, 1, IORING_OP_OPENAT, AT_FDCWD, bad, 0, 0);
  prep(&r, 2, IORING_OP_READV, fd, bad, 1, 0);
  want(2, "io_uring_readv", path, 0, 0, 0);  /* its size unknown: 0 */
  prep(&r, 3, IORING_OP_STATX, AT_FDCWD, bad, STATX_SIZE, (uint64_t)(uintptr_t)&stx);
  prep(&r, 4, IORING_OP_OPENAT2, AT_FDCWD, path, sizeof(struct open_how), 0x10);
  wants[4] = (struct want){"io_uring_openat", path, -1, 0, -1, 0, 0};
  /* (The kernel stops a submission at a request that fails as it takes it.) */
  for (int taken = 0; taken < 4;) taken += enter(&r, 4 - taken, 0, 0);
  while (__atomic_load_n(r.cq_tail, __ATOMIC_ACQUIRE) - *r.cq_head < 4) {
    enter(&r, 0, 4, IORING_ENTER_GETEVENTS);
  }
  unsigned head = *r.cq_head;
  const unsigned tail = __atomic_load_n(r.cq_tail, __ATOMIC_ACQUIRE);
  for (; head != tail; ++head) {
    const struct io_uring_cqe* c = &r.cqes[head & *r.cq_mask];
    printf("RES\tud=%llu\tres=%d\n", (unsigned long long)c->user_data, c->res);
    if (c->user_data == 2 || c->user_data == 4) print_want(&wants[c->user_data], c->res);
  }
  __atomic_store_n(r.cq_head, head, __ATOMIC_RELEASE);
  /* A files update whose fd array ends at an unreadable page after its
   * first fd: the kernel updates that slot and returns 1. */
  int four[4] = {fd, fd, fd, fd};
  CHECK(syscall(SYS_io_uring_register, r.fd, IORING_REGISTER_FILES, four, 4) == 0);
  char* pages = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(pages != MAP_FAILED && mprotect(pages + 4096, 4096, PROT_NONE) == 0);
  int* fds = (int*)(pages + 4096) - 1;
  *fds = fd;
  struct io_uring_files_update u;
  memset(&u, 0, sizeof(u));
  u.offset = 1;
  u.fds = (uint64_t)(uintptr_t)fds;
  errno = 0;
  const long n = syscall(SYS_io_uring_register, r.fd, IORING_REGISTER_FILES_UPDATE, &u, 2);
  printf("CALL\tname=files_update\tret=%ld\terrno=%d\n", n, n < 0 ? errno : 0);
  CHECK(close(r.fd) == 0);
  CHECK(close(fd) == 0);
}

/* The "shared" mode: a read, reaped; then a forked child submits a read on
 * the same ring and reaps it, and the parent submits another. */
static void shared(const char* dir) {
  static char path[4096], buf[4096];
  snprintf(path, sizeof(path), "%s/a.dat", dir);
  const int fd = make_file(path, 65536);
  file_fd = fd;
  struct ring r;
  setup(&r, 8, 0);
  prep(&r, 1, IORING_OP_READ, fd, buf, 512, 0);
  want(1, "io_uring_read", path, 0, 512, 0);
  CHECK(enter(&r, 1, 1, IORING_ENTER_GETEVENTS) == 1);
  CHECK(reap(&r) == 1);
  fflush(stdout);
  const pid_t child = fork();
  CHECK(child >= 0);
  if (child == 0) {
    prep(&r, 2, IORING_OP_READ, fd, buf, 512, 512);
    CHECK(enter(&r, 1, 1, IORING_ENTER_GETEVENTS) == 1);
    __atomic_store_n(r.cq_head, *r.cq_head + 1, __ATOMIC_RELEASE);  /* (not printed) */
    _exit(0);
  }
  int status = 0;
  CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  prep(&r, 3, IORING_OP_READ, fd, buf, 512, 1024);
  CHECK(enter(&r, 1, 1, IORING_ENTER_GETEVENTS) == 1);
  __atomic_store_n(r.cq_head, *r.cq_head + 1, __ATOMIC_RELEASE);
  CHECK(close(r.fd) == 0);
  CHECK(close(fd) == 0);
}

static void appends(const char* dir) {
  static char path[4096], buf[100];
  snprintf(path, sizeof(path), "%s/c.dat", dir);
  CHECK(close(make_file(path, 1000)) == 0);
  const int fa = open(path, O_WRONLY | O_APPEND), fw = open(path, O_WRONLY);
  CHECK(fa >= 0 && fw >= 0);
  struct ring r;
  setup(&r, 4, 0);
  file_fd = fa;
  prep(&r, 1, IORING_OP_WRITE, fa, buf, 100, 7);
  want(1, "io_uring_write", path, -1, 100, 0);  /* lands at 1000 */
  CHECK(enter(&r, 1, 1, IORING_ENTER_GETEVENTS) == 1 && reap(&r) == 1);
  file_fd = fw;
  prep(&r, 2, IORING_OP_WRITE, fw, buf, 100, 0)->rw_flags = RWF_APPEND;
  want(2, "io_uring_write", path, -1, 100, 0);  /* lands at 1100 */
  CHECK(enter(&r, 1, 1, IORING_ENTER_GETEVENTS) == 1 && reap(&r) == 1);
  prep(&r, 3, IORING_OP_WRITE, fw, buf, 100, (uint64_t)-1);
  want(3, "io_uring_write", path, 0, 100, 0);  /* fw's position: still 0 */
  CHECK(enter(&r, 1, 1, IORING_ENTER_GETEVENTS) == 1 && reap(&r) == 1);
  /* RWF_APPEND at fw's position: lands at 1200, and moves it to 1300,
   * where a write() then lands. */
  prep(&r, 4, IORING_OP_WRITE, fw, buf, 100, (uint64_t)-1)->rw_flags = RWF_APPEND;
  want(4, "io_uring_write", path, -1, 100, 0);
  CHECK(enter(&r, 1, 1, IORING_ENTER_GETEVENTS) == 1 && reap(&r) == 1);
  CHECK(write(fw, buf, 10) == 10);
  printf("WRITE\toffset=1300\n");
  struct stat st;
  CHECK(fstat(fw, &st) == 0 && st.st_size == 1310 && lseek(fw, 0, SEEK_CUR) == 1310);
  CHECK(close(r.fd) == 0 && close(fa) == 0 && close(fw) == 0);
}

int main(int argc, char** argv) {
  CHECK(argc >= 2);
  if (argc > 2 && strcmp(argv[2], "append") == 0) {
    appends(argv[1]);
    return 0;
  }
  if (argc > 2 && strcmp(argv[2], "shared") == 0) {
    shared(argv[1]);
    return 0;
  }
  if (argc > 2 && strcmp(argv[2], "badptr") == 0) {
    bad_pointers(argv[1]);
    return 0;
  }
  if (argc > 3 && strcmp(argv[2], "gone") == 0) {
    ring_gone(argv[3]);
    return 0;
  }
  if (argc > 2 && strcmp(argv[2], "closed") == 0) {
    closed_while_waiting(argv[1]);
    return 0;
  }
  const int sqpoll = argc > 2 && strcmp(argv[2], "sqpoll") == 0;
  static char path[4096];
  snprintf(path, sizeof(path), "%s/a.dat", argv[1]);
  CHECK(close(make_file(path, 65536)) == 0);
  int fd = open(path, O_RDONLY);
  CHECK(fd >= 0);
  file_fd = fd;

  struct ring r;
  setup(&r, 8, sqpoll ? IORING_SETUP_SQPOLL : 0);
  static char bufs[8][4096];
  static const long long offsets[4] = {0, 12288, 40960, 4096};
  for (int i = 0; i < 4; ++i) {
    prep(&r, 1 + i, IORING_OP_READ, fd, bufs[i], 4096, offsets[i]);
    want(1 + i, "io_uring_read", path, offsets[i], 4096, 0);
  }
  struct iovec iov[2] = {{bufs[4], 1024}, {bufs[5], 2048}};
  prep(&r, 5, IORING_OP_READV, fd, iov, 2, 20000);
  want(5, "io_uring_readv", path, 20000, 3072, 0);
  /* A write on a read-only fd: the kernel's -EBADF is its result. */
  prep(&r, 6, IORING_OP_WRITE, fd, bufs[6], 512, 0);
  want(6, "io_uring_write", path, 0, 512, 0);
  /* An opcode without a kind of its own: what its fd, offset and length say. */
  prep(&r, 7, IORING_OP_FADVISE, fd, NULL, 8192, 0)->fadvise_advice = POSIX_FADV_WILLNEED;
  want(7, "io_uring_op", path, 0, 8192, 0);

  unsigned done = 0;
  if (sqpoll) {
    /* The kernel thread takes them; wait for all seven. */
    while (done < 7) {
      if (__atomic_load_n(r.sq_tail, __ATOMIC_ACQUIRE) != __atomic_load_n(r.sq_head, __ATOMIC_ACQUIRE)) {
        enter(&r, 0, 0, IORING_ENTER_SQ_WAKEUP);
      }
      enter(&r, 0, 1, IORING_ENTER_GETEVENTS);
      done += reap(&r);
    }
    CHECK(close(r.fd) == 0);
    return 0;
  }
  CHECK(enter(&r, 7, 7, IORING_ENTER_GETEVENTS) == 7);
  while (done < 7) {
    done += reap(&r);
    if (done < 7) enter(&r, 0, 1, IORING_ENTER_GETEVENTS);
  }

  /* A registered file: the SQE names slot 0. Submitted by one call, waited
   * for by another. */
  CHECK(syscall(SYS_io_uring_register, r.fd, IORING_REGISTER_FILES, &fd, 1) == 0);
  prep(&r, 8, IORING_OP_READ, 0, bufs[7], 4096, 8192)->flags = IOSQE_FIXED_FILE;
  want(8, "io_uring_read", path, 8192, 4096, WANT_FIXED_FILE);
  CHECK(enter(&r, 1, 0, 0) == 1);
  enter(&r, 0, 1, IORING_ENTER_GETEVENTS);
  CHECK(reap(&r) == 1);
  /* The program's reaps are seen at its next call on the ring: here, its
   * close. */
  CHECK(close(r.fd) == 0);
  CHECK(close(fd) == 0);
  return 0;
}
