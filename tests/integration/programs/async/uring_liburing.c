/* io_uring through liburing (liburing-dev), as a loader or checkpoint path
 * uses it. For each completion it prints, in the order it reaped them, the
 * event the tracer must record: "EV\tname=...\tpath=...\t...".
 *
 *   uring_liburing basic DIR    reads; a registered file and a registered
 *                               buffer; a direct descriptor opened into a
 *                               fixed slot, read and closed; a linked
 *                               writev -> fsync -> read; a failing write
 *                               (-EBADF) linked to a read (-ECANCELED);
 *                               another file put in the registered slot
 *                               by a files-update request, and read;
 *                               openat, statx and close as requests
 *   uring_liburing reaper DIR   eight reads submitted by the main thread,
 *                               reaped by another
 *   uring_liburing fork DIR     a read of a FIFO in flight across a fork:
 *                               the child writes what completes it, the
 *                               parent reaps it (with two file reads)
 *   uring_liburing sqpoll DIR   reads on an SQPOLL ring (prints SKIP where
 *                               the kernel refuses one)
 *   uring_liburing skip DIR     175 writes that post no completion when they
 *                               succeed (IOSQE_CQE_SKIP_SUCCESS: recorded as
 *                               done, with no duration), more than
 *                               the tracer's table of requests in flight
 *                               holds, 7 to a round linked to an fsync;
 *                               then one that fails (and posts it), a read
 *   uring_liburing shared DIR   requests that share their user_data (0, as
 *                               liburing leaves it): a NOP beside a read;
 *                               a write that posts nothing when it
 *                               succeeds, linked to a read
 *   uring_liburing closed DIR   rings whose fd goes without the C library
 *                               (as liburing >= 2.4's io_uring_close_ring_fd
 *                               closes it): one let go by queue_exit, whose
 *                               registered pipe writer must go with it
 *                               ("EOF\t1"); one never let go, whose fd
 *                               number the next ring gets: its reads
 *   uring_liburing crowded DIR  reads of a pipe (not recorded) in flight,
 *                               more than the tracer's table holds; then
 *                               reads of a file, to be recorded all the same
 *   uring_liburing sigexit DIR  children reading in a loop until a timer's
 *                               handler calls _exit(3): "EXITED\tN of N"
 *
 * The sqpoll mode also prepares a read, waits with a timeout (which with
 * IORING_FEAT_EXT_ARG submits nothing), makes a marker pread of one byte,
 * and only then submits the read.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <semaphore.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "async_want.h"

static struct want wants[256];
static int submit_tid;

static void want(unsigned ud, const char* name, const char* path, long long offset,
                 long long size, int fd, int flags) {
  wants[ud] = (struct want){name, path, offset, size, fd, flags, submit_tid};
}

static void print_ev(const struct io_uring_cqe* c) { print_want(&wants[c->user_data], c->res); }

/* Waits for and reaps `n` completions, printing each. */
static void reap(struct io_uring* ring, int n) {
  for (int i = 0; i < n; ++i) {
    struct io_uring_cqe* c;
    CHECK(io_uring_wait_cqe(ring, &c) == 0);
    print_ev(c);
    io_uring_cqe_seen(ring, c);
  }
}

static struct io_uring_sqe* sqe_for(struct io_uring* ring, unsigned ud) {
  struct io_uring_sqe* sqe = io_uring_get_sqe(ring);
  CHECK(sqe != NULL);
  io_uring_sqe_set_data64(sqe, ud);
  return sqe;
}

static char path_a[4096], path_b[4096], path_c[4096], path_f[4096];
static char bufs[16][4096];

static void basic(void) {
  struct io_uring ring;
  CHECK(io_uring_queue_init(16, &ring, 0) == 0);
  close(make_file(path_a, 65536));
  close(make_file(path_c, 10000));
  int fa = open(path_a, O_RDONLY);
  int fb = open(path_b, O_RDWR | O_CREAT | O_TRUNC, 0644);
  CHECK(fa >= 0 && fb >= 0);

  /* Plain reads. */
  static const long long offs[3] = {0, 32768, 4096};
  for (unsigned i = 0; i < 3; ++i) {
    io_uring_prep_read(sqe_for(&ring, 1 + i), fa, bufs[i], 4096, offs[i]);
    want(1 + i, "io_uring_read", path_a, offs[i], 4096, fa, 0);
  }
  CHECK(io_uring_submit(&ring) == 3);
  reap(&ring, 3);

  /* A registered file (slot 0), a sparse slot (1), a registered buffer. */
  int files[2] = {fa, -1};
  CHECK(io_uring_register_files(&ring, files, 2) == 0);
  struct iovec reg = {bufs[8], 4096};
  CHECK(io_uring_register_buffers(&ring, &reg, 1) == 0);
  struct io_uring_sqe* sqe = sqe_for(&ring, 10);
  io_uring_prep_read_fixed(sqe, 0, bufs[8], 4096, 8192, 0);
  sqe->flags |= IOSQE_FIXED_FILE;
  want(10, "io_uring_read_fixed", path_a, 8192, 4096, fa, WANT_FIXED_FILE | WANT_FIXED_BUFFER);
  sqe = sqe_for(&ring, 11);
  io_uring_prep_read(sqe, 0, bufs[9], 2048, 16384);
  sqe->flags |= IOSQE_FIXED_FILE;
  want(11, "io_uring_read", path_a, 16384, 2048, fa, WANT_FIXED_FILE);
  CHECK(io_uring_submit(&ring) == 2);
  reap(&ring, 2);

  /* A direct descriptor: c.dat opened into slot 1, read, closed. */
  io_uring_prep_openat_direct(sqe_for(&ring, 20), AT_FDCWD, path_c, O_RDONLY, 0, 1);
  want(20, "io_uring_openat", path_c, -1, 0, -1, WANT_FIXED_FILE);
  CHECK(io_uring_submit(&ring) == 1);
  reap(&ring, 1);
  sqe = sqe_for(&ring, 21);
  io_uring_prep_read(sqe, 1, bufs[10], 4096, 8192);
  sqe->flags |= IOSQE_FIXED_FILE;
  want(21, "io_uring_read", path_c, 8192, 4096, -1, WANT_FIXED_FILE);
  CHECK(io_uring_submit(&ring) == 1);
  reap(&ring, 1);
  io_uring_prep_close_direct(sqe_for(&ring, 22), 1);
  want(22, "io_uring_close", path_c, -1, 0, -1, WANT_FIXED_FILE);
  CHECK(io_uring_submit(&ring) == 1);
  reap(&ring, 1);

  /* Linked: writev -> fsync -> read of b.dat, run in this order. */
  struct iovec wv[2] = {{bufs[11], 1000}, {bufs[12], 3096}};
  sqe = sqe_for(&ring, 30);
  io_uring_prep_writev(sqe, fb, wv, 2, 0);
  sqe->flags |= IOSQE_IO_LINK;
  want(30, "io_uring_writev", path_b, 0, 4096, fb, WANT_LINKED);
  sqe = sqe_for(&ring, 31);
  io_uring_prep_fsync(sqe, fb, 0);
  sqe->flags |= IOSQE_IO_LINK;
  want(31, "io_uring_fsync", path_b, -1, 0, fb, WANT_LINKED);
  io_uring_prep_read(sqe_for(&ring, 32), fb, bufs[13], 4096, 0);
  want(32, "io_uring_read", path_b, 0, 4096, fb, 0);
  CHECK(io_uring_submit(&ring) == 3);
  reap(&ring, 3);

  /* A files-update request puts b.dat (4096 bytes now) in slot 0, a.dat's:
   * the slot's reads are b.dat's from its completion on. */
  int update[1] = {fb};
  io_uring_prep_files_update(sqe_for(&ring, 33), update, 1, 0);
  CHECK(io_uring_submit(&ring) == 1);
  struct io_uring_cqe* u;
  CHECK(io_uring_wait_cqe(&ring, &u) == 0 && u->res == 1);
  io_uring_cqe_seen(&ring, u);
  sqe = sqe_for(&ring, 34);
  io_uring_prep_read(sqe, 0, bufs[10], 1024, 2048);
  sqe->flags |= IOSQE_FIXED_FILE;
  want(34, "io_uring_read", path_b, 2048, 1024, fb, WANT_FIXED_FILE);
  CHECK(io_uring_submit(&ring) == 1);
  reap(&ring, 1);

  /* A failing write (a.dat is read-only here) linked to a read: the read
   * is cancelled. */
  sqe = sqe_for(&ring, 40);
  io_uring_prep_write(sqe, fa, bufs[14], 512, 0);
  sqe->flags |= IOSQE_IO_LINK;
  want(40, "io_uring_write", path_a, 0, 512, fa, WANT_LINKED);
  io_uring_prep_read(sqe_for(&ring, 41), fa, bufs[15], 512, 0);
  want(41, "io_uring_read", path_a, 0, 512, fa, 0);
  CHECK(io_uring_submit(&ring) == 2);
  reap(&ring, 2);

  /* openat, statx and close as requests; the new fd read in between. */
  io_uring_prep_openat(sqe_for(&ring, 50), AT_FDCWD, path_c, O_RDONLY, 0);
  want(50, "io_uring_openat", path_c, -1, 0, -1, 0);
  CHECK(io_uring_submit(&ring) == 1);
  struct io_uring_cqe* c;
  CHECK(io_uring_wait_cqe(&ring, &c) == 0);
  const int fc = c->res;
  CHECK(fc >= 0);
  wants[50].fd = fc;
  print_ev(c);
  io_uring_cqe_seen(&ring, c);
  static struct statx stx;
  io_uring_prep_statx(sqe_for(&ring, 51), AT_FDCWD, path_c, 0, STATX_SIZE, &stx);
  want(51, "io_uring_statx", path_c, -1, 0, -1, 0);
  io_uring_prep_read(sqe_for(&ring, 52), fc, bufs[0], 4096, 8192);
  want(52, "io_uring_read", path_c, 8192, 4096, fc, 0);
  CHECK(io_uring_submit(&ring) == 2);
  reap(&ring, 2);
  io_uring_prep_close(sqe_for(&ring, 53), fc);
  want(53, "io_uring_close", path_c, -1, 0, fc, 0);
  CHECK(io_uring_submit(&ring) == 1);
  reap(&ring, 1);
  CHECK(stx.stx_size == 10000);

  io_uring_queue_exit(&ring);
  close(fa);
  close(fb);
}

static struct io_uring shared_ring;
static sem_t submitted;

static void* reaper_main(void* arg) {
  (void)arg;
  CHECK(sem_wait(&submitted) == 0);
  reap(&shared_ring, 8);
  /* The reaps are seen at the next call on the ring: its exit, here. */
  io_uring_queue_exit(&shared_ring);
  return NULL;
}

static void reaper(void) {
  close(make_file(path_a, 65536));
  int fa = open(path_a, O_RDONLY);
  CHECK(fa >= 0);
  CHECK(io_uring_queue_init(16, &shared_ring, 0) == 0);
  CHECK(sem_init(&submitted, 0, 0) == 0);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, reaper_main, NULL) == 0);
  for (unsigned i = 0; i < 8; ++i) {
    io_uring_prep_read(sqe_for(&shared_ring, 1 + i), fa, bufs[i], 4096, 4096LL * (7 - i));
    want(1 + i, "io_uring_read", path_a, 4096LL * (7 - i), 4096, fa, 0);
  }
  CHECK(io_uring_submit(&shared_ring) == 8);
  CHECK(sem_post(&submitted) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  close(fa);
}

static void forked(void) {
  close(make_file(path_a, 65536));
  CHECK(mkfifo(path_f, 0644) == 0);
  int ff = open(path_f, O_RDWR);
  int fa = open(path_a, O_RDONLY);
  CHECK(ff >= 0 && fa >= 0);
  struct io_uring ring;
  CHECK(io_uring_queue_init(8, &ring, 0) == 0);
  /* At the FIFO's position (-1): where the tracer's position for the fd
   * is, as for a read() of it. */
  io_uring_prep_read(sqe_for(&ring, 1), ff, bufs[0], 16, -1);
  want(1, "io_uring_read", path_f, 0, 16, ff, 0);
  io_uring_prep_read(sqe_for(&ring, 2), fa, bufs[1], 4096, 12288);
  want(2, "io_uring_read", path_a, 12288, 4096, fa, 0);
  io_uring_prep_read(sqe_for(&ring, 3), fa, bufs[2], 100, 65500);
  want(3, "io_uring_read", path_a, 65500, 100, fa, 0);
  CHECK(io_uring_submit(&ring) == 3);
  fflush(stdout);
  pid_t child = fork();
  CHECK(child >= 0);
  if (child == 0) {
    /* What completes the parent's FIFO read. */
    CHECK(write(ff, "sixteen bytes!!\n", 16) == 16);
    exit(0);
  }
  int status;
  CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  printf("CHILD\t%d\n", (int)child);
  reap(&ring, 3);
  io_uring_queue_exit(&ring);
  close(fa);
  close(ff);
}

static void sqpoll(void) {
  close(make_file(path_a, 65536));
  int fa = open(path_a, O_RDONLY);
  CHECK(fa >= 0);
  struct io_uring ring;
  int r = io_uring_queue_init(8, &ring, IORING_SETUP_SQPOLL);
  if (r < 0) {
    printf("SKIP\tSQPOLL refused: %s\n", strerror(-r));
    return;
  }
  for (unsigned i = 0; i < 4; ++i) {
    io_uring_prep_read(sqe_for(&ring, 1 + i), fa, bufs[i], 4096, 8192LL * i);
    want(1 + i, "io_uring_read", path_a, 8192LL * i, 4096, fa, 0);
  }
  CHECK(io_uring_submit(&ring) == 4);
  reap(&ring, 4);
  /* A wait that submits nothing: the read is submitted after the marker. */
  io_uring_prep_read(sqe_for(&ring, 5), fa, bufs[4], 4096, 40960);
  want(5, "io_uring_read", path_a, 40960, 4096, fa, 0);
  struct __kernel_timespec brief = {0, 1000 * 1000};
  struct io_uring_cqe* c;
  const int waited = io_uring_wait_cqe_timeout(&ring, &c, &brief);
  printf("EXT_ARG\t%d\n", (ring.features & IORING_FEAT_EXT_ARG) != 0 && waited == -ETIME);
  CHECK(pread(fa, bufs[5], 1, 0) == 1);
  CHECK(io_uring_submit(&ring) >= 0);
  reap(&ring, 1);
  io_uring_queue_exit(&ring);
  close(fa);
}

/* a.dat (64 KiB of the pattern) open for reading, b.dat empty for writing. */
static void open_a_and_b(int* fa, int* fb) {
  close(make_file(path_a, 65536));
  *fa = open(path_a, O_RDONLY);
  *fb = open(path_b, O_RDWR | O_CREAT | O_TRUNC, 0644);
  CHECK(*fa >= 0 && *fb >= 0);
}

static void skipped(void) {
  int fa, fb;
  open_a_and_b(&fa, &fb);
  struct io_uring ring;
  CHECK(io_uring_queue_init(8, &ring, 0) == 0);
  if (!(ring.features & IORING_FEAT_CQE_SKIP)) {
    printf("SKIP\tthe kernel has no IOSQE_CQE_SKIP_SUCCESS\n");
    return;
  }
  /* A write that succeeds posts nothing: none of failure posted, it is
   * taken as done (its 512 bytes), at a time not known, unreaped. */
  const struct want unposted = {"io_uring_write", path_b, 0, 512, fb,
                                WANT_LINKED | WANT_UNREAPED, 0};
  for (unsigned round = 0; round < 25; ++round) {
    for (unsigned i = 0; i < 7; ++i) {
      struct io_uring_sqe* sqe = sqe_for(&ring, 100);
      const long long offset = 512LL * (7 * round + i);
      io_uring_prep_write(sqe, fb, bufs[i], 512, offset);
      sqe->flags |= IOSQE_CQE_SKIP_SUCCESS | IOSQE_IO_LINK;
      struct want w = unposted;
      w.offset = offset;
      print_want(&w, 512);
    }
    /* The chain's end: it runs once the writes before it are done (a
     * ring that skips completions refuses IOSQE_IO_DRAIN). */
    io_uring_prep_fsync(sqe_for(&ring, 1), fb, 0);
    want(1, "io_uring_fsync", path_b, -1, 0, fb, 0);
    CHECK(io_uring_submit(&ring) == 8);
    reap(&ring, 1);
  }
  struct stat st;
  CHECK(fstat(fb, &st) == 0 && st.st_size == 175 * 512);
  /* A failure is posted: a.dat is open for reading only. */
  struct io_uring_sqe* sqe = sqe_for(&ring, 2);
  io_uring_prep_write(sqe, fa, bufs[0], 512, 0);
  sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
  want(2, "io_uring_write", path_a, 0, 512, fa, 0);
  io_uring_prep_read(sqe_for(&ring, 3), fa, bufs[1], 4096, 4096);
  want(3, "io_uring_read", path_a, 4096, 4096, fa, 0);
  CHECK(io_uring_submit(&ring) == 2);
  reap(&ring, 2);
  io_uring_queue_exit(&ring);
  close(fa);
  close(fb);
}

static void shared(void) {
  int fa, fb;
  open_a_and_b(&fa, &fb);
  struct io_uring ring;
  CHECK(io_uring_queue_init(8, &ring, 0) == 0);
  /* A NOP (no file: not recorded) and a read, both user_data 0; which
   * completion is which, by its result (a NOP's is 0). */
  for (unsigned round = 0; round < 3; ++round) {
    const struct want read = {"io_uring_read", path_a, 4096LL * round, 100 + round, fa, 0,
                              submit_tid};
    io_uring_prep_nop(sqe_for(&ring, 0));
    io_uring_prep_read(sqe_for(&ring, 0), fa, bufs[0], 100 + round, 4096LL * round);
    CHECK(io_uring_submit(&ring) == 2);
    for (int i = 0; i < 2; ++i) {
      struct io_uring_cqe* c;
      CHECK(io_uring_wait_cqe(&ring, &c) == 0);
      if (c->res != 0) print_want(&read, c->res);
      io_uring_cqe_seen(&ring, c);
    }
  }
  if (ring.features & IORING_FEAT_CQE_SKIP) {
    /* Writes that post nothing when they succeed, each linked to a read,
     * all user_data 0: the one completion a round posts is the read's. */
    for (unsigned round = 0; round < 3; ++round) {
      struct io_uring_sqe* sqe = sqe_for(&ring, 0);
      io_uring_prep_write(sqe, fb, bufs[1], 4096, 4096LL * round);
      sqe->flags |= IOSQE_CQE_SKIP_SUCCESS | IOSQE_IO_LINK;
      io_uring_prep_read(sqe_for(&ring, 0), fa, bufs[2], 200, 512LL * round);
      CHECK(io_uring_submit(&ring) == 2);
      struct io_uring_cqe* c;
      CHECK(io_uring_wait_cqe(&ring, &c) == 0);
      const struct want read = {"io_uring_read", path_a, 512LL * round, 200, fa, 0, submit_tid};
      print_want(&read, c->res);
      io_uring_cqe_seen(&ring, c);
    }
  }
  io_uring_queue_exit(&ring);
  /* The writes: no failure posted, recorded as done when the ring goes. */
  for (unsigned round = 0; (ring.features & IORING_FEAT_CQE_SKIP) && round < 3; ++round) {
    const struct want w = {"io_uring_write", path_b, 4096LL * round, 4096, fb,
                           WANT_LINKED | WANT_UNREAPED, submit_tid};
    print_want(&w, 4096);
  }
  close(fa);
  close(fb);
}

#if defined(__x86_64__)
/* What liburing's own close does (built without the C library). */
static long close_without_libc(long fd) {
  long ret;
  __asm__ volatile("syscall" : "=a"(ret) : "a"((long)SYS_close), "D"(fd) : "rcx", "r11", "memory");
  return ret;
}
#endif

static void closed(void) {
#if !defined(__x86_64__)
  printf("SKIP\tthe test closes an fd with the x86-64 syscall instruction\n");
#else
  /* Ring A holds a pipe's only writer; its fd closed as
   * io_uring_close_ring_fd does (ring_fd -1), then queue_exit. */
  int p[2];
  CHECK(pipe(p) == 0);
  struct io_uring a;
  CHECK(io_uring_queue_init(8, &a, 0) == 0);
  CHECK(io_uring_register_files(&a, &p[1], 1) == 0);
  CHECK(close(p[1]) == 0);
  CHECK(close_without_libc(a.ring_fd) == 0);
  a.ring_fd = -1;
  io_uring_queue_exit(&a);
  /* The kernel lets a ring go in a work queue: EOF comes soon after. */
  struct pollfd hup = {p[0], POLLIN, 0};
  char byte;
  printf("EOF\t%d\n", poll(&hup, 1, 5000) == 1 && read(p[0], &byte, 1) == 0);
  close(p[0]);

  /* Ring B's fd closed the same way, B never let go; ring C gets its fd. */
  struct io_uring b, c;
  CHECK(io_uring_queue_init(8, &b, 0) == 0);
  const int b_fd = b.ring_fd;
  CHECK(close_without_libc(b_fd) == 0);
  CHECK(io_uring_queue_init(8, &c, 0) == 0);
  CHECK(c.ring_fd == b_fd);
  close(make_file(path_a, 65536));
  int fa = open(path_a, O_RDONLY);
  CHECK(fa >= 0);
  for (unsigned i = 0; i < 4; ++i) {
    io_uring_prep_read(sqe_for(&c, 1 + i), fa, bufs[i], 4096, 4096LL * i);
    want(1 + i, "io_uring_read", path_a, 4096LL * i, 4096, fa, 0);
  }
  CHECK(io_uring_submit(&c) == 4);
  reap(&c, 4);
  io_uring_queue_exit(&c);
  close(fa);
#endif
}

static void crowded(void) {
  int p[2];
  CHECK(pipe(p) == 0);
  close(make_file(path_a, 65536));
  int fa = open(path_a, O_RDONLY);
  CHECK(fa >= 0);
  struct io_uring ring;
  CHECK(io_uring_queue_init(8, &ring, 0) == 0);
  /* The tracer's table holds 64 requests for a ring of 8: 80 wait here. */
  enum { kPipeReads = 80 };
  for (unsigned round = 0; round < kPipeReads / 8; ++round) {
    for (unsigned i = 0; i < 8; ++i) io_uring_prep_read(sqe_for(&ring, 100), p[0], bufs[i], 1, 0);
    CHECK(io_uring_submit(&ring) == 8);
  }
  for (unsigned i = 0; i < 4; ++i) {
    io_uring_prep_read(sqe_for(&ring, 1 + i), fa, bufs[8 + i], 4096, 4096LL * i);
    want(1 + i, "io_uring_read", path_a, 4096LL * i, 4096, fa, 0);
  }
  CHECK(io_uring_submit(&ring) == 4);
  reap(&ring, 4);
  /* End of file for the pipe's reads: each completes with 0. */
  CHECK(close(p[1]) == 0);
  for (int i = 0; i < kPipeReads; ++i) {
    struct io_uring_cqe* c;
    CHECK(io_uring_wait_cqe(&ring, &c) == 0 && c->user_data == 100 && c->res == 0);
    io_uring_cqe_seen(&ring, c);
  }
  io_uring_queue_exit(&ring);
  close(p[0]);
  close(fa);
}

static void exit_now(int sig) {
  (void)sig;
  _exit(3);
}

static void sigexit(void) {
  close(make_file(path_a, 65536));
  enum { kChildren = 24 };
  int exited = 0;
  for (int k = 0; k < kChildren; ++k) {
    const pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      struct io_uring ring;
      int fa = open(path_a, O_RDONLY);
      CHECK(fa >= 0 && io_uring_queue_init(128, &ring, 0) == 0);
      CHECK(signal(SIGALRM, exit_now) != SIG_ERR);
      /* 2 to 25 ms from now: most of a child's time is in its calls. */
      struct itimerval when = {{0, 0}, {0, 2000 + 997 * k}};
      CHECK(setitimer(ITIMER_REAL, &when, NULL) == 0);
      for (;;) {
        for (unsigned j = 0; j < 64; ++j) {
          io_uring_prep_read(io_uring_get_sqe(&ring), fa, bufs[j % 16], 512, 512LL * j);
        }
        io_uring_submit_and_wait(&ring, 64);
        io_uring_cq_advance(&ring, 64);
      }
    }
    int status = 0;
    pid_t done = 0;
    for (int waited_ms = 0; done == 0 && waited_ms < 10000; waited_ms += 5) {
      done = waitpid(pid, &status, WNOHANG);
      if (done == 0) usleep(5000);
    }
    if (done == 0) {
      CHECK(kill(pid, SIGKILL) == 0);
      CHECK(waitpid(pid, &status, 0) == pid);
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
      ++exited;
    }
  }
  printf("EXITED\t%d of %d\n", exited, kChildren);
}

int main(int argc, char** argv) {
  CHECK(argc == 3);
  submit_tid = raw_gettid();
  snprintf(path_a, sizeof(path_a), "%s/a.dat", argv[2]);
  snprintf(path_b, sizeof(path_b), "%s/b.dat", argv[2]);
  snprintf(path_c, sizeof(path_c), "%s/c.dat", argv[2]);
  snprintf(path_f, sizeof(path_f), "%s/f.fifo", argv[2]);
  if (strcmp(argv[1], "basic") == 0) {
    basic();
  } else if (strcmp(argv[1], "reaper") == 0) {
    reaper();
  } else if (strcmp(argv[1], "fork") == 0) {
    forked();
  } else if (strcmp(argv[1], "sqpoll") == 0) {
    sqpoll();
  } else if (strcmp(argv[1], "skip") == 0) {
    skipped();
  } else if (strcmp(argv[1], "shared") == 0) {
    shared();
  } else if (strcmp(argv[1], "closed") == 0) {
    closed();
  } else if (strcmp(argv[1], "crowded") == 0) {
    crowded();
  } else if (strcmp(argv[1], "sigexit") == 0) {
    sigexit();
  } else {
    return 2;
  }
  return 0;
}
