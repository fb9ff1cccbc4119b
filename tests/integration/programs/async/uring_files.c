/* io_uring requests that change what an fd or a fixed slot is, through
 * liburing (liburing-dev). Each mode prints, for the calls the tracer must
 * record, "EV\tkey=value..." for a request (in the order reaped) and
 * "CALL\tname=...\tpath=...\toffset=..." for a plain call on a file.
 *
 *   uring_files late DIR   an openat request that completes after its submit
 *                          returns (held back by a timeout hard-linked before
 *                          it), taken with io_uring_peek_cqe (no call the
 *                          tracer sees); then writes on its fd, an fsync
 *                          request, more writes. Then the same with a second
 *                          file, whose fd the program closes, and an open of
 *                          a third that gets the same fd number: an fsync
 *                          request and preads of the third. Then a
 *                          fourth file opened so, the third's fd dup2'ed
 *                          onto its fd: an fsync request, reads of both fds.
 *   uring_files direct DIR a direct descriptor's whole life in one submit:
 *                          openat into fixed slot 1, linked to a read of
 *                          slot 1, linked to its close
 *   uring_files reused DIR two files registered at their positions (100
 *                          and 0); the first's fd closed and its number
 *                          reused by an open of a third; reads at the file
 *                          position (offset -1) of both slots -- the first
 *                          named by no fd now, the second's position
 *                          shared with its fd, read by read() between --
 *                          and a read() of the third
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <liburing.h>

#include "async_want.h"

static char path_l[4096], path_m[4096], path_n[4096], path_o[4096];
static char buf[8192];

static struct io_uring_sqe* sqe_for(struct io_uring* ring, unsigned ud) {
  struct io_uring_sqe* sqe = io_uring_get_sqe(ring);
  CHECK(sqe != NULL);
  io_uring_sqe_set_data64(sqe, ud);
  return sqe;
}

/* Peeks (liburing's inline function: no call the tracer sees) until the
 * completion of `ud` is there, taking the others; its result. */
static int peek_for(struct io_uring* ring, unsigned ud) {
  for (;;) {
    struct io_uring_cqe* c = NULL;
    if (io_uring_peek_cqe(ring, &c) != 0) {
      usleep(2000);
      continue;
    }
    const unsigned got = (unsigned)c->user_data;
    const int res = c->res;
    io_uring_cqe_seen(ring, c);
    if (got == ud) return res;
  }
}

/* An openat request of `path` that completes 30 ms after its submit
 * returns (a timeout hard-linked before it), taken by peeking; its fd. */
static int open_late(struct io_uring* ring, const char* path, int flags) {
  static struct __kernel_timespec wait = {0, 30 * 1000 * 1000};
  struct io_uring_sqe* sqe = sqe_for(ring, 1);
  io_uring_prep_timeout(sqe, &wait, 0, 0);
  sqe->flags |= IOSQE_IO_HARDLINK;
  io_uring_prep_openat(sqe_for(ring, 2), AT_FDCWD, path, flags, 0644);
  CHECK(io_uring_submit(ring) == 2);
  const int fd = peek_for(ring, 2);
  CHECK(fd >= 0);
  print_want(&(struct want){"io_uring_openat", path, -1, 0, fd, 0, 0}, fd);
  return fd;
}

/* An fsync request of `fd`, submitted and waited for. */
static void fsync_request(struct io_uring* ring, int fd, const char* path) {
  io_uring_prep_fsync(sqe_for(ring, 3), fd, 0);
  CHECK(io_uring_submit_and_wait(ring, 1) == 1);
  struct io_uring_cqe* c;
  CHECK(io_uring_wait_cqe(ring, &c) == 0 && c->user_data == 3);
  print_want(&(struct want){"io_uring_fsync", path, -1, 0, fd, 0, 0}, c->res);
  io_uring_cqe_seen(ring, c);
}

static void write_at_position(int fd, const char* path) {
  const long long at = raw_tell(fd);
  CHECK(write(fd, buf, 1000) == 1000);
  printf("CALL\tname=write\tpath=%s\toffset=%lld\n", path, at);
}

static void late(void) {
  struct io_uring ring;
  CHECK(io_uring_queue_init(8, &ring, 0) == 0);
  const int fl = open_late(&ring, path_l, O_WRONLY | O_CREAT | O_TRUNC);
  for (int i = 0; i < 3; ++i) write_at_position(fl, path_l);
  fsync_request(&ring, fl, path_l);
  for (int i = 0; i < 2; ++i) write_at_position(fl, path_l);
  CHECK(close(fl) == 0);
  printf("CALL\tname=close\tpath=%s\n", path_l);

  close(make_file(path_n, 8192));
  printf("CALL\tname=close\tpath=%s\n", path_n);
  const int fm = open_late(&ring, path_m, O_WRONLY | O_CREAT | O_TRUNC);
  CHECK(close(fm) == 0);
  printf("CALL\tname=close\tpath=%s\n", path_m);
  const int fn = open(path_n, O_RDONLY);
  CHECK(fn == fm);
  fsync_request(&ring, fn, path_n);
  for (int i = 0; i < 2; ++i) {
    CHECK(pread(fn, buf, 4096, i * 4096) == 4096);
    printf("CALL\tname=pread\tpath=%s\toffset=%d\n", path_n, i * 4096);
  }

  /* The third file's fd dup2'ed onto a late openat's: the fd is the third
   * file's, its position shared with fn. */
  const int fo = open_late(&ring, path_o, O_WRONLY | O_CREAT | O_TRUNC);
  CHECK(dup2(fn, fo) == fo);
  fsync_request(&ring, fo, path_n);
  const int readers[3] = {fo, fn, fo};
  for (int i = 0; i < 3; ++i) {
    const long long at = raw_tell(readers[i]);
    CHECK(read(readers[i], buf, 500) == 500);
    printf("CALL\tname=read\tpath=%s\toffset=%lld\n", path_n, at);
  }
  io_uring_queue_exit(&ring);
}

static void direct(void) {
  close(make_file(path_l, 8192));
  struct io_uring ring;
  CHECK(io_uring_queue_init(8, &ring, 0) == 0);
  CHECK(io_uring_register_files_sparse(&ring, 4) == 0);
  static const struct want wants[3] = {
      {"io_uring_openat", path_l, -1, 0, -1, WANT_FIXED_FILE | WANT_LINKED, 0},
      {"io_uring_read", path_l, 100, 4096, -1, WANT_FIXED_FILE | WANT_LINKED, 0},
      {"io_uring_close", path_l, -1, 0, -1, WANT_FIXED_FILE, 0}};
  struct io_uring_sqe* sqe = sqe_for(&ring, 0);
  io_uring_prep_openat_direct(sqe, AT_FDCWD, path_l, O_RDONLY, 0, 1);
  sqe->flags |= IOSQE_IO_LINK;
  sqe = sqe_for(&ring, 1);
  io_uring_prep_read(sqe, 1, buf, 4096, 100);
  sqe->flags |= IOSQE_FIXED_FILE | IOSQE_IO_LINK;
  io_uring_prep_close_direct(sqe_for(&ring, 2), 1);
  CHECK(io_uring_submit(&ring) == 3);
  for (int i = 0; i < 3; ++i) {
    struct io_uring_cqe* c;
    CHECK(io_uring_wait_cqe(&ring, &c) == 0 && c->user_data < 3);
    print_want(&wants[c->user_data], c->res);
    io_uring_cqe_seen(&ring, c);
  }
  io_uring_queue_exit(&ring);
}

/* A read of 1000 bytes at fixed slot `slot`'s file position (`at`, moved
 * by it), submitted and waited for; `fd` the fd that still names it, or -1. */
static void read_slot(struct io_uring* ring, int slot, const char* path, int fd, long long* at) {
  struct io_uring_sqe* sqe = sqe_for(ring, 4);
  io_uring_prep_read(sqe, slot, buf, 1000, (__u64)-1);
  sqe->flags |= IOSQE_FIXED_FILE;
  CHECK(io_uring_submit_and_wait(ring, 1) == 1);
  struct io_uring_cqe* c;
  CHECK(io_uring_wait_cqe(ring, &c) == 0 && c->user_data == 4 && c->res == 1000);
  print_want(&(struct want){"io_uring_read", path, *at, 1000, fd, WANT_FIXED_FILE, 0}, c->res);
  *at += c->res;
  io_uring_cqe_seen(ring, c);
}

static void read_call(int fd, const char* path) {
  const long long at = raw_tell(fd);
  CHECK(read(fd, buf, 10) == 10);
  printf("CALL\tname=read\tpath=%s\toffset=%lld\n", path, at);
}

static void reused(void) {
  close(make_file(path_l, 8192));
  close(make_file(path_n, 8192));
  int fds[2] = {open(path_l, O_RDONLY), open(path_n, O_RDONLY)};
  CHECK(fds[0] >= 0 && fds[1] >= 0 && lseek(fds[0], 100, SEEK_SET) == 100);
  struct io_uring ring;
  CHECK(io_uring_queue_init(8, &ring, 0) == 0);
  CHECK(io_uring_register_files(&ring, fds, 2) == 0);
  CHECK(close(fds[0]) == 0);
  const int fm = make_file(path_m, 8192);
  CHECK(fm == fds[0] && raw_tell(fm) == 0);
  long long at_l = 100, at_n = 0;
  for (int i = 0; i < 3; ++i) read_slot(&ring, 0, path_l, -1, &at_l);
  read_slot(&ring, 1, path_n, fds[1], &at_n);
  read_call(fds[1], path_n);
  at_n += 10;
  read_slot(&ring, 1, path_n, fds[1], &at_n);
  read_call(fm, path_m);
  io_uring_queue_exit(&ring);
}

int main(int argc, char** argv) {
  CHECK(argc == 3);
  snprintf(path_l, sizeof(path_l), "%s/l.dat", argv[2]);
  snprintf(path_m, sizeof(path_m), "%s/m.dat", argv[2]);
  snprintf(path_n, sizeof(path_n), "%s/n.dat", argv[2]);
  snprintf(path_o, sizeof(path_o), "%s/o.dat", argv[2]);
  if (strcmp(argv[1], "late") == 0) {
    late();
  } else if (strcmp(argv[1], "direct") == 0) {
    direct();
  } else if (strcmp(argv[1], "reused") == 0) {
    reused();
  } else {
    fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
  }
  return 0;
}
