/* Linux AIO through syscall(), as libaio makes its calls: io_setup, io_submit
 * of preads, a pwrite, a preadv and an fsync, io_getevents, an iocb the
 * kernel refuses at submission (not a request: no event), io_destroy. For
 * each completion it prints, in the order io_getevents returned them, the
 * event the tracer must record: "EV\tname=...\tpath=...\t...".
 *
 *   linux_aio DIR
 *   linux_aio DIR reused   one iocb: a pread reaped from the kernel's ring
 *                          by the program itself (as fio's userspace_reap:
 *                          no io_getevents), then the iocb submitted again
 *                          at another offset and reaped by io_getevents;
 *                          the first is "UNSEEN\t..." (no call saw it done)
 *   linux_aio DIR nocontext  io_submit and io_getevents on a context the
 *                          kernel has not (one destroyed, an address that
 *                          never was one): each fails with EINVAL, as
 *                          untraced; prints "CALL\tname=...\tret=..\terrno=.."
 *   linux_aio DIR contexts  80 contexts alive at once, a pread on each
 *   linux_aio DIR badptr   io_submit of a preadv whose iovec array pointer
 *                          is bad, of an iocb array or an iocb whose pointer
 *                          is bad, of a good pread before a bad iocb, of
 *                          2^32 - 1 iocbs (four good ones before an
 *                          unreadable page), of -1: each returns as
 *                          untraced ("CALL\t..."); then a pread; each read
 *                          submitted is reaped ("EV\t...")
 *   linux_aio DIR append   pwrites that land at the file's end whatever their
 *                          aio_offset: at 5 on an O_APPEND fd, then with
 *                          RWF_APPEND at 0 on another fd (no offset
 *                          recorded: where is not known); then a pwritev at
 *                          0 on that fd, which lands there
 *   linux_aio DIR handover  the main thread submits 64 preads and reaps each
 *                          itself, then a second thread reaps while the main
 *                          thread submits 2000 more (page-cache reads: each
 *                          is complete when io_submit returns, and the
 *                          reaper, waiting in io_getevents, takes it at once)
 *   linux_aio DIR blocked  the main thread reaps its context, then submits a
 *                          read of a pipe (done inside io_submit: it blocks)
 *                          that a second thread, after its own first
 *                          io_getevents on the context, writes; then, on a
 *                          second context it reaps, a read of a pipe left by
 *                          a timer's siglongjmp out of io_submit, and a
 *                          third thread's first io_getevents; then a pread
 *                          on each, reaped ("EV\t..."): no call waits on
 *                          another (the tracer's first reaper of a context
 *                          waited for a submission under way: a deadlock)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/time.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>

#include "async_want.h"

static struct want wants[32];
static struct iocb cbs[32];

static struct iocb* prep(unsigned i, int op, int fd, void* buf, unsigned long long n,
                         long long off) {
  struct iocb* cb = &cbs[i];
  memset(cb, 0, sizeof(*cb));
  cb->aio_data = i;
  cb->aio_lio_opcode = (uint16_t)op;
  cb->aio_fildes = (uint32_t)fd;
  cb->aio_buf = (uint64_t)(uintptr_t)buf;
  cb->aio_nbytes = n;
  cb->aio_offset = off;
  return cb;
}

static void reap(aio_context_t ctx, int n) {
  struct io_event ev[32];
  int got = 0;
  while (got < n) {
    int r = (int)syscall(SYS_io_getevents, ctx, 1, n - got, ev, NULL);
    CHECK(r > 0);
    for (int i = 0; i < r; ++i) print_want(&wants[ev[i].data], (long long)ev[i].res);
    got += r;
  }
}

/* The head of the kernel's completion ring of a context (fs/aio.c). */
struct aio_ring_head {
  unsigned id, nr, head, tail, magic, compat_features, incompat_features, header_length;
};

static void reused(const char* dir) {
  static char pa[4096];
  snprintf(pa, sizeof(pa), "%s/a.dat", dir);
  const int fa = make_file(pa, 65536);
  aio_context_t ctx = 0;
  CHECK(syscall(SYS_io_setup, 4, &ctx) == 0);
  static char buf[4096];
  struct iocb* list[1] = {prep(0, IOCB_CMD_PREAD, fa, buf, 4096, 0)};
  CHECK(syscall(SYS_io_submit, ctx, 1, list) == 1);
  /* Its completion, from the ring itself. */
  struct aio_ring_head* ring = (struct aio_ring_head*)(uintptr_t)ctx;
  CHECK(ring->magic == 0xa10a10a1);
  while (__atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE) == ring->head) {
    struct timespec pause = {0, 1000 * 1000};
    nanosleep(&pause, NULL);
  }
  const struct io_event* ev =
      (const struct io_event*)((const char*)ring + ring->header_length) + ring->head;
  CHECK(ev->obj == (uint64_t)(uintptr_t)list[0] && ev->res == 4096);
  __atomic_store_n(&ring->head, (ring->head + 1) % ring->nr, __ATOMIC_RELEASE);
  printf("UNSEEN\tname=linux_aio_pread\tpath=%s\toffset=0\tsize=4096\tfd=%d\n", pa, fa);
  /* The same iocb again, reaped by io_getevents. */
  prep(0, IOCB_CMD_PREAD, fa, buf, 4096, 12288);
  wants[0] = (struct want){"linux_aio_pread", pa, 12288, 4096, fa, 0, 0};
  CHECK(syscall(SYS_io_submit, ctx, 1, list) == 1);
  reap(ctx, 1);
  CHECK(syscall(SYS_io_destroy, ctx) == 0);
  CHECK(close(fa) == 0);
}

/* The calls on a context that is none (the tracer read the kernel's ring
 * at its address, and crashed, in io_getevents). */
static void nocontext(const char* dir) {
  static char pa[4096];
  snprintf(pa, sizeof(pa), "%s/a.dat", dir);
  int fa = make_file(pa, 65536);
  aio_context_t destroyed = 0;
  CHECK(syscall(SYS_io_setup, 4, &destroyed) == 0);
  CHECK(syscall(SYS_io_destroy, destroyed) == 0);
  const aio_context_t contexts[2] = {destroyed, 0x10000};
  static char buf[4096];
  for (int k = 0; k < 2; ++k) {
    struct iocb* list[1] = {prep(0, IOCB_CMD_PREAD, fa, buf, 4096, 0)};
    errno = 0;
    long r = syscall(SYS_io_submit, contexts[k], 1, list);
    printf("CALL\tname=io_submit\tret=%ld\terrno=%d\n", r, r < 0 ? errno : 0);
    struct io_event ev[1];
    struct timespec none = {0, 0};
    errno = 0;
    r = syscall(SYS_io_getevents, contexts[k], 0, 1, ev, &none);
    printf("CALL\tname=io_getevents\tret=%ld\terrno=%d\n", r, r < 0 ? errno : 0);
  }
  close(fa);
}

static void call_line(const char* what, long r) {
  printf("CALL\tname=io_submit\twhat=%s\tret=%ld\terrno=%d\n", what, r, r < 0 ? errno : 0);
}

/* The "badptr" mode (the tracer read the iovec array, the iocb array and
 * the iocbs before the kernel, all `nr` of them, and ended the program with
 * SIGSEGV). */
static void bad_pointers(const char* dir) {
  static char pa[4096];
  snprintf(pa, sizeof(pa), "%s/a.dat", dir);
  const int fa = make_file(pa, 65536);
  aio_context_t ctx = 0;
  CHECK(syscall(SYS_io_setup, 16, &ctx) == 0);
  struct iocb* list[2] = {prep(0, IOCB_CMD_PREADV, fa, (void*)(uintptr_t)0x10, 1, 0)};
  errno = 0;
  call_line("iovec", syscall(SYS_io_submit, ctx, 1L, list));
  /* An array, and an iocb, the pointer to which is bad: EFAULT. */
  errno = 0;
  call_line("array", syscall(SYS_io_submit, ctx, 1L, (struct iocb**)(uintptr_t)0x10));
  list[0] = (struct iocb*)(uintptr_t)0x20;
  errno = 0;
  call_line("iocb", syscall(SYS_io_submit, ctx, 1L, list));
  /* A good pread, then a bad iocb: the kernel submits the first. */
  static char bufs[8][4096];
  list[0] = prep(1, IOCB_CMD_PREAD, fa, bufs[1], 4096, 4096);
  wants[1] = (struct want){"linux_aio_pread", pa, 4096, 4096, fa, 0, 0};
  list[1] = (struct iocb*)(uintptr_t)0x20;
  errno = 0;
  const long one = syscall(SYS_io_submit, ctx, 2L, list);
  call_line("second", one);
  reap(ctx, (int)(one > 0 ? one : 0));
  /* A count of 2^32 - 1 (an int's -1 handed on as a long): the kernel cuts
   * it to the context's size and stops at the first pointer it cannot
   * read, here past the end of a page of four good preads. */
  char* pages = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(pages != MAP_FAILED && mprotect(pages + 4096, 4096, PROT_NONE) == 0);
  struct iocb** tail = (struct iocb**)(pages + 4096) - 4;
  for (unsigned i = 0; i < 4; ++i) {
    tail[i] = prep(2 + i, IOCB_CMD_PREAD, fa, bufs[2 + i], 1000, 1000 * (long long)i);
    wants[2 + i] = (struct want){"linux_aio_pread", pa, 1000 * (long long)i, 1000, fa, 0, 0};
  }
  errno = 0;
  const long four = syscall(SYS_io_submit, ctx, 0xffffffffL, tail);
  call_line("huge", four);
  reap(ctx, (int)(four > 0 ? four : 0));
  /* A negative count: EINVAL. */
  errno = 0;
  call_line("negative", syscall(SYS_io_submit, ctx, -1L, tail));
  list[0] = prep(6, IOCB_CMD_PREAD, fa, bufs[6], 4096, 8192);
  wants[6] = (struct want){"linux_aio_pread", pa, 8192, 4096, fa, 0, 0};
  CHECK(syscall(SYS_io_submit, ctx, 1L, list) == 1);
  reap(ctx, 1);
  CHECK(syscall(SYS_io_destroy, ctx) == 0);
  CHECK(close(fa) == 0);
}

/* The "contexts" mode: 80 contexts alive at once (one a worker thread, say),
 * a pread submitted and reaped on each. */
static void contexts(const char* dir) {
  static char pa[4096];
  snprintf(pa, sizeof(pa), "%s/a.dat", dir);
  const int fa = make_file(pa, 65536);
  enum { kContexts = 80 };
  static aio_context_t ctx[kContexts];
  static char bufs[kContexts][512];
  static struct want each[kContexts];
  for (int i = 0; i < kContexts; ++i) CHECK(syscall(SYS_io_setup, 4, &ctx[i]) == 0);
  for (int i = 0; i < kContexts; ++i) {
    struct iocb cb;
    memset(&cb, 0, sizeof(cb));
    cb.aio_fildes = (uint32_t)fa;
    cb.aio_lio_opcode = IOCB_CMD_PREAD;
    cb.aio_buf = (uint64_t)(uintptr_t)bufs[i];
    cb.aio_nbytes = 100 + (unsigned)i;
    cb.aio_offset = 700 * (long long)i;
    each[i] = (struct want){"linux_aio_pread", pa, 700 * (long long)i, 100 + i, fa, 0, 0};
    struct iocb* list[1] = {&cb};
    CHECK(syscall(SYS_io_submit, ctx[i], 1L, list) == 1);
    struct io_event ev;
    CHECK(syscall(SYS_io_getevents, ctx[i], 1L, 1L, &ev, NULL) == 1);
    print_want(&each[i], (long long)ev.res);
  }
  for (int i = 0; i < kContexts; ++i) CHECK(syscall(SYS_io_destroy, ctx[i]) == 0);
  CHECK(close(fa) == 0);
}

/* The "handover" mode's reaper: the completions of `handover_n` requests,
 * each iocb let go (its `free` flag) once printed. */
enum { kHandoverSlots = 32, kHandoverReads = 2000 };
static struct iocb handover_cbs[kHandoverSlots];
static struct want handover_wants[kHandoverSlots];
static int handover_free[kHandoverSlots];
static aio_context_t handover_ctx;

static void* handover_reaper(void* arg) {
  (void)arg;
  struct io_event ev[kHandoverSlots];
  for (int got = 0; got < kHandoverReads;) {
    int r = (int)syscall(SYS_io_getevents, handover_ctx, 1, kHandoverSlots, ev, NULL);
    CHECK(r > 0);
    for (int i = 0; i < r; ++i) {
      print_want(&handover_wants[ev[i].data], (long long)ev[i].res);
      __atomic_store_n(&handover_free[ev[i].data], 1, __ATOMIC_RELEASE);
    }
    got += r;
  }
  return NULL;
}

static void handover_submit(int fd, unsigned slot, const char* path, long long off, int tid) {
  static char bufs[kHandoverSlots][1024];
  struct iocb* cb = &handover_cbs[slot];
  memset(cb, 0, sizeof(*cb));
  cb->aio_data = slot;
  cb->aio_lio_opcode = IOCB_CMD_PREAD;
  cb->aio_fildes = (uint32_t)fd;
  cb->aio_buf = (uint64_t)(uintptr_t)bufs[slot];
  cb->aio_nbytes = 1024;
  cb->aio_offset = off;
  handover_wants[slot] = (struct want){"linux_aio_pread", path, off, 1024, fd, 0, tid};
  struct iocb* list[1] = {cb};
  CHECK(syscall(SYS_io_submit, handover_ctx, 1L, list) == 1);
}

static void handover(const char* dir) {
  static char pa[4096];
  snprintf(pa, sizeof(pa), "%s/a.dat", dir);
  const int fa = make_file(pa, 65536);
  CHECK(syscall(SYS_io_setup, kHandoverSlots, &handover_ctx) == 0);
  for (unsigned i = 0; i < 64; ++i) {
    handover_submit(fa, 0, pa, 1024LL * i, 0);
    struct io_event ev;
    CHECK(syscall(SYS_io_getevents, handover_ctx, 1L, 1L, &ev, NULL) == 1);
    print_want(&handover_wants[0], (long long)ev.res);
  }
  fflush(stdout);
  for (unsigned i = 0; i < kHandoverSlots; ++i) handover_free[i] = 1;
  pthread_t reaper;
  CHECK(pthread_create(&reaper, NULL, handover_reaper, NULL) == 0);
  for (unsigned i = 0; i < kHandoverReads; ++i) {
    const unsigned slot = i % kHandoverSlots;
    while (!__atomic_load_n(&handover_free[slot], __ATOMIC_ACQUIRE)) sched_yield();
    handover_free[slot] = 0;
    handover_submit(fa, slot, pa, 1024LL * (i % 64), raw_gettid());
  }
  CHECK(pthread_join(reaper, NULL) == 0);
  CHECK(syscall(SYS_io_destroy, handover_ctx) == 0);
  CHECK(close(fa) == 0);
}

/* The "blocked" mode. */
static int blocked_pipe[2];
static aio_context_t blocked_ctx[2];
static sigjmp_buf blocked_jump;

static void blocked_on_timer(int sig) {
  (void)sig;
  siglongjmp(blocked_jump, 1);
}

static void* blocked_other(void* arg) {
  const long which = (long)arg;
  struct io_event ev[4];
  struct timespec zero = {0, 0};
  if (which == 0) usleep(100000); /* the main thread is in io_submit by now */
  CHECK(syscall(SYS_io_getevents, blocked_ctx[which], 0L, 4L, ev, &zero) >= 0);
  if (which == 0) CHECK(write(blocked_pipe[1], "hello", 5) == 5);
  return NULL;
}

static void blocked_pread(aio_context_t ctx, int fd, const char* path, long long off) {
  static char buf[512];
  struct iocb* list[1] = {prep(0, IOCB_CMD_PREAD, fd, buf, 512, off)};
  wants[0] = (struct want){"linux_aio_pread", path, off, 512, fd, 0, 0};
  CHECK(syscall(SYS_io_submit, ctx, 1L, list) == 1);
  reap(ctx, 1);
}

static void blocked(const char* dir) {
  static char pa[4096], buf[16];
  snprintf(pa, sizeof(pa), "%s/a.dat", dir);
  const int fa = make_file(pa, 65536);
  CHECK(pipe(blocked_pipe) == 0);
  struct io_event ev[4];
  struct timespec zero = {0, 0};
  for (int k = 0; k < 2; ++k) {
    CHECK(syscall(SYS_io_setup, 8, &blocked_ctx[k]) == 0);
    CHECK(syscall(SYS_io_getevents, blocked_ctx[k], 0L, 4L, ev, &zero) == 0);
  }
  struct iocb* list[1] = {prep(1, IOCB_CMD_PREAD, blocked_pipe[0], buf, 5, 0)};
  pthread_t other;
  CHECK(pthread_create(&other, NULL, blocked_other, (void*)0L) == 0);
  CHECK(syscall(SYS_io_submit, blocked_ctx[0], 1L, list) == 1);
  CHECK(pthread_join(other, NULL) == 0);
  CHECK(syscall(SYS_io_getevents, blocked_ctx[0], 1L, 4L, ev, NULL) == 1 && ev[0].res == 5);
  /* A timer's handler jumps out of a read of the (now empty) pipe. */
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = blocked_on_timer;
  CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
  struct itimerval in = {{0, 0}, {0, 100000}};
  list[0] = prep(1, IOCB_CMD_PREAD, blocked_pipe[0], buf, 5, 0);
  if (sigsetjmp(blocked_jump, 1) == 0) {
    CHECK(setitimer(ITIMER_REAL, &in, NULL) == 0);
    syscall(SYS_io_submit, blocked_ctx[1], 1L, list);
    CHECK(!"io_submit of an empty pipe's read returned");
  }
  CHECK(pthread_create(&other, NULL, blocked_other, (void*)1L) == 0);
  CHECK(pthread_join(other, NULL) == 0);
  blocked_pread(blocked_ctx[0], fa, pa, 1024);
  blocked_pread(blocked_ctx[1], fa, pa, 2048);
  CHECK(close(fa) == 0);
}

static void appends(const char* dir) {
  static char path[4096], buf[100];
  snprintf(path, sizeof(path), "%s/c.dat", dir);
  CHECK(close(make_file(path, 1000)) == 0);
  const int fa = open(path, O_WRONLY | O_APPEND), fw = open(path, O_WRONLY);
  CHECK(fa >= 0 && fw >= 0);
  aio_context_t ctx = 0;
  CHECK(syscall(SYS_io_setup, 4, &ctx) == 0);
  struct iocb* list[1] = {prep(0, IOCB_CMD_PWRITE, fa, buf, 100, 5)};
  wants[0] = (struct want){"linux_aio_pwrite", path, -1, 100, fa, 0, 0};  /* at 1000 */
  CHECK(syscall(SYS_io_submit, ctx, 1L, list) == 1);
  reap(ctx, 1);
  list[0] = prep(1, IOCB_CMD_PWRITE, fw, buf, 100, 0);
  list[0]->aio_rw_flags = RWF_APPEND;
  wants[1] = (struct want){"linux_aio_pwrite", path, -1, 100, fw, 0, 0};  /* at 1100 */
  CHECK(syscall(SYS_io_submit, ctx, 1L, list) == 1);
  reap(ctx, 1);
  struct iovec iov = {buf, 100};
  list[0] = prep(2, IOCB_CMD_PWRITEV, fw, &iov, 1, 0);
  wants[2] = (struct want){"linux_aio_pwritev", path, 0, 100, fw, 0, 0};
  CHECK(syscall(SYS_io_submit, ctx, 1L, list) == 1);
  reap(ctx, 1);
  struct stat st;
  CHECK(fstat(fw, &st) == 0 && st.st_size == 1200);
  CHECK(syscall(SYS_io_destroy, ctx) == 0 && close(fa) == 0 && close(fw) == 0);
}

int main(int argc, char** argv) {
  CHECK(argc == 2 || argc == 3);
  if (argc == 3 && strcmp(argv[2], "append") == 0) {
    appends(argv[1]);
    return 0;
  }
  if (argc == 3 && strcmp(argv[2], "badptr") == 0) {
    bad_pointers(argv[1]);
    return 0;
  }
  if (argc == 3 && strcmp(argv[2], "blocked") == 0) {
    blocked(argv[1]);
    return 0;
  }
  if (argc == 3 && strcmp(argv[2], "handover") == 0) {
    handover(argv[1]);
    return 0;
  }
  if (argc == 3 && strcmp(argv[2], "contexts") == 0) {
    contexts(argv[1]);
    return 0;
  }
  if (argc == 3 && strcmp(argv[2], "reused") == 0) {
    reused(argv[1]);
    return 0;
  }
  if (argc == 3 && strcmp(argv[2], "nocontext") == 0) {
    nocontext(argv[1]);
    return 0;
  }
  static char pa[4096], pb[4096];
  snprintf(pa, sizeof(pa), "%s/a.dat", argv[1]);
  snprintf(pb, sizeof(pb), "%s/b.dat", argv[1]);
  int fa = make_file(pa, 65536);
  int fb = open(pb, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(fb >= 0);

  aio_context_t ctx = 0;
  CHECK(syscall(SYS_io_setup, 16, &ctx) == 0);
  static char bufs[8][4096];
  struct iocb* list[8];
  static const long long offs[4] = {40960, 0, 20480, 4096};
  for (unsigned i = 0; i < 4; ++i) {
    list[i] = prep(i, IOCB_CMD_PREAD, fa, bufs[i], 4096, offs[i]);
    wants[i] = (struct want){"linux_aio_pread", pa, offs[i], 4096, fa, 0, 0};
  }
  list[4] = prep(4, IOCB_CMD_PWRITE, fb, want_block, 8192, 0);
  wants[4] = (struct want){"linux_aio_pwrite", pb, 0, 8192, fb, 0, 0};
  struct iovec iov[2] = {{bufs[5], 100}, {bufs[6], 900}};
  list[5] = prep(5, IOCB_CMD_PREADV, fa, iov, 2, 65000);
  wants[5] = (struct want){"linux_aio_preadv", pa, 65000, 1000, fa, 0, 0};
  CHECK(syscall(SYS_io_submit, ctx, 6, list) == 6);
  reap(ctx, 6);

  list[0] = prep(6, IOCB_CMD_FSYNC, fb, NULL, 0, 0);
  wants[6] = (struct want){"linux_aio_fsync", pb, -1, 0, fb, 0, 0};
  /* A read of a write-only fd: refused at submission (io_submit stops
   * there and returns 1): not a request. */
  list[1] = prep(7, IOCB_CMD_PREAD, fb, bufs[7], 4096, 0);
  CHECK(syscall(SYS_io_submit, ctx, 2, list) == 1);
  reap(ctx, 1);

  /* Nothing left in flight; then a pread the program never reaps: the
   * context's destruction ends it, unseen. */
  list[0] = prep(8, IOCB_CMD_PREAD, fa, bufs[0], 4096, 8192);
  CHECK(syscall(SYS_io_submit, ctx, 1, list) == 1);
  struct timespec pause = {0, 20 * 1000 * 1000};
  nanosleep(&pause, NULL);
  printf("UNREAPED\tname=linux_aio_pread\tpath=%s\toffset=8192\tsize=4096\tfd=%d\n", pa, fa);
  CHECK(syscall(SYS_io_destroy, ctx) == 0);
  close(fa);
  close(fb);
  return 0;
}
