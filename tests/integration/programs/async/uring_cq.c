/* io_uring completion rings that fill, through liburing (liburing-dev). For
 * each completion it prints, in the order it reaped them, the event the
 * tracer must record: "EV\tname=...\tpath=...\t...".
 *
 *   uring_cq batch DIR     a ring of 16 completions, 60 rounds of 16 preads
 *                          submitted and waited for in one call
 *                          (io_uring_submit_and_wait): the ring exactly
 *                          full when the call returns
 *   uring_cq fifo DIR      the default ring of liburing's examples (4
 *                          entries, 8 completions), 8 reads of a FIFO in
 *                          flight, their data written, then one wait for
 *                          all 8 (io_uring_wait_cqe_nr); two rounds
 *   uring_cq overflow DIR  48 preads in flight on a ring of 16 completions:
 *                          the kernel keeps what does not fit (overflow)
 *                          and flushes it into the ring as it empties, full
 *                          each time
 *   uring_cq lost DIR      completions taken with io_uring_peek_cqe (no call
 *                          the tracer sees): 16 reads of a FIFO in flight on
 *                          a ring of 8 completions, all 16 reaped between
 *                          two calls, 10 rounds; then 16 preads reaped as
 *                          usual. Of a round's 16 the first 8 were written
 *                          over before the tracer could look, and the 9th
 *                          it cannot tell from one written over (its slot
 *                          free for the kernel's next): those 9 are printed
 *                          "in flight" (-EINPROGRESS), the tracer's record
 *                          of a request it never saw complete; the
 *                          others as they completed.
 *   uring_cq backlog DIR   20 rounds of 64 preads on a ring of 64 entries,
 *                          then 40 rounds of 4 on a ring of 4, each ring's
 *                          all submitted before any is reaped: the kernel
 *                          holds them all (completions beyond the ring in
 *                          its overflow list)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <liburing.h>
#include <sys/stat.h>

#include "async_want.h"

static char path_f[4096], path_p[4096];
static char bufs[64][4096];
static struct want wants[4096];

static void prep(struct io_uring* ring, unsigned ud, int fd, const char* path, unsigned size,
                 long long offset) {
  struct io_uring_sqe* sqe = io_uring_get_sqe(ring);
  CHECK(sqe != NULL);
  io_uring_prep_read(sqe, fd, bufs[ud % 64], size, offset < 0 ? (__u64)-1 : (__u64)offset);
  io_uring_sqe_set_data64(sqe, ud);
  wants[ud] = (struct want){"io_uring_read", path, offset, size, fd, 0, 0};
}

/* The FIFO's reads are at its position (-1): where a read() of it would be
 * recorded, after the bytes read from it before. */
static long long fifo_at;

static void print_reaped(const struct io_uring_cqe* c, int res) {
  struct want* w = &wants[c->user_data];
  if (w->path == path_p) w->offset = res >= 0 ? fifo_at : -1;
  print_want(w, res);
  if (w->path == path_p && res > 0) fifo_at += res;
}

/* Reaps `n` completions (waiting for each), printing each. */
static void reap(struct io_uring* ring, int n) {
  for (int i = 0; i < n; ++i) {
    struct io_uring_cqe* c;
    CHECK(io_uring_wait_cqe(ring, &c) == 0);
    print_reaped(c, c->res);
    io_uring_cqe_seen(ring, c);
  }
}

static void batch(void) {
  const int fd = make_file(path_f, 65536);
  struct io_uring ring;
  struct io_uring_params p;
  memset(&p, 0, sizeof(p));
  p.flags = IORING_SETUP_CQSIZE;
  p.cq_entries = 16;
  CHECK(io_uring_queue_init_params(16, &ring, &p) == 0 && p.cq_entries == 16);
  for (int k = 0; k < 60; ++k) {
    for (int i = 0; i < 16; ++i) prep(&ring, k * 16 + i, fd, path_f, 100 + i, 4096 * i + k);
    CHECK(io_uring_submit_and_wait(&ring, 16) == 16);
    reap(&ring, 16);
  }
  io_uring_queue_exit(&ring);
  close(fd);
}

/* A FIFO at path_p: its reading end (open for writing too, so that its
 * open does not wait) in *rfd, its writing end in *wfd. */
static void make_fifo(int* rfd, int* wfd) {
  unlink(path_p);
  CHECK(mkfifo(path_p, 0644) == 0);
  *rfd = open(path_p, O_RDWR);
  *wfd = open(path_p, O_WRONLY);
  CHECK(*rfd >= 0 && *wfd >= 0);
}

static void fifo(void) {
  int rfd, wfd;
  make_fifo(&rfd, &wfd);
  struct io_uring ring;
  CHECK(io_uring_queue_init(4, &ring, 0) == 0);
  static char data[80];
  for (int k = 0; k < 2; ++k) {
    for (int i = 0; i < 8; ++i) {
      if (i == 4) CHECK(io_uring_submit(&ring) == 4);
      prep(&ring, k * 8 + i, rfd, path_p, 10, -1);
    }
    CHECK(io_uring_submit(&ring) == 4);
    CHECK(write(wfd, data, sizeof(data)) == (ssize_t)sizeof(data));
    struct io_uring_cqe* c;
    CHECK(io_uring_wait_cqe_nr(&ring, &c, 8) == 0);
    reap(&ring, 8);
  }
  io_uring_queue_exit(&ring);
  close(rfd);
  close(wfd);
}

static void overflow(void) {
  const int fd = make_file(path_f, 65536);
  struct io_uring ring;
  CHECK(io_uring_queue_init(8, &ring, 0) == 0);
  int submitted = 0;
  for (int k = 0; k < 6; ++k) {
    for (int i = 0; i < 8; ++i) prep(&ring, k * 8 + i, fd, path_f, 64, 8192 * k + 128 * i);
    submitted += io_uring_submit(&ring);
  }
  CHECK(submitted == 48);
  reap(&ring, submitted);
  io_uring_queue_exit(&ring);
  close(fd);
}

/* `rounds` rounds of `entries` preads of 100 bytes submitted on a ring of
 * `entries`, none reaped until all are submitted: the kernel holds them
 * all in flight, their completions beyond the ring in its overflow list
 * (IORING_FEAT_NODROP); then all reaped. */
static void backlog_on(unsigned entries, int rounds) {
  const int fd = make_file(path_f, 65536);
  struct io_uring ring;
  CHECK(io_uring_queue_init(entries, &ring, 0) == 0);
  int submitted = 0;
  for (int k = 0; k < rounds; ++k) {
    for (unsigned i = 0; i < entries; ++i) {
      const unsigned ud = k * entries + i;
      prep(&ring, ud, fd, path_f, 100, 100 * (long long)(ud % 600));
    }
    CHECK(io_uring_submit(&ring) == (int)entries);
    submitted += (int)entries;
  }
  reap(&ring, submitted);
  io_uring_queue_exit(&ring);
  close(fd);
}

static void backlog(void) {
  backlog_on(64, 20);
  backlog_on(4, 40);
}

/* Peeks (liburing's inline function: no call the tracer sees) until `n`
 * completions are taken, printing each: the first `unseen` in flight. */
static void peek(struct io_uring* ring, int n, int unseen) {
  for (int got = 0; got < n;) {
    struct io_uring_cqe* c = NULL;
    if (io_uring_peek_cqe(ring, &c) != 0) {
      usleep(1000);
      continue;
    }
    print_reaped(c, got < unseen ? -EINPROGRESS : c->res);
    io_uring_cqe_seen(ring, c);
    ++got;
  }
}

static void lost(void) {
  int rfd, wfd;
  make_fifo(&rfd, &wfd);
  struct io_uring ring;
  CHECK(io_uring_queue_init(4, &ring, 0) == 0);
  static char data[80];
  for (int k = 0; k < 10; ++k) {
    for (int i = 0; i < 16; ++i) {
      prep(&ring, k * 16 + i, rfd, path_p, 10, -1);
      if (i % 4 == 3) CHECK(io_uring_submit(&ring) == 4);
    }
    CHECK(write(wfd, data, sizeof(data)) == (ssize_t)sizeof(data));
    peek(&ring, 8, 8);
    CHECK(write(wfd, data, sizeof(data)) == (ssize_t)sizeof(data));
    peek(&ring, 8, 1);
  }
  const int fd = make_file(path_f, 65536);
  for (int k = 0; k < 4; ++k) {
    for (int i = 0; i < 4; ++i) prep(&ring, 1000 + k * 4 + i, fd, path_f, 200, 4096 * (k * 4 + i));
    CHECK(io_uring_submit_and_wait(&ring, 4) == 4);
    reap(&ring, 4);
  }
  io_uring_queue_exit(&ring);
  close(fd);
  close(rfd);
  close(wfd);
}

int main(int argc, char** argv) {
  CHECK(argc == 3);
  snprintf(path_f, sizeof(path_f), "%s/f.dat", argv[2]);
  snprintf(path_p, sizeof(path_p), "%s/p.fifo", argv[2]);
  if (strcmp(argv[1], "batch") == 0) {
    batch();
  } else if (strcmp(argv[1], "fifo") == 0) {
    fifo();
  } else if (strcmp(argv[1], "overflow") == 0) {
    overflow();
  } else if (strcmp(argv[1], "lost") == 0) {
    lost();
  } else if (strcmp(argv[1], "backlog") == 0) {
    backlog();
  } else {
    fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
  }
  return 0;
}
