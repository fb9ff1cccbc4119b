/* POSIX AIO: aio_read, aio_write and aio_fsync waited for with aio_suspend
 * and aio_error; lio_listio with LIO_WAIT and with LIO_NOWAIT; a failing
 * aio_read (EBADF at completion); the 64-bit names; a read submitted on
 * another thread and reaped on this one. For each request it prints, in
 * the order it reaped them (aio_return), the event the tracer must record:
 * "EV\tname=...\tpath=...\t...".
 *
 *   posix_aio DIR
 *   posix_aio DIR reused   aiocbs reused without aio_return (below)
 *   posix_aio DIR append   three aio_writes at aio_offset 0 on an O_APPEND
 *                          fd: they land at its end, offset not known
 */
#define _GNU_SOURCE
#include <aio.h>
#include <fcntl.h>
#include <pthread.h>

#include "async_want.h"

/* aio_return gave `r`, aio_error `err`: the request's result. */
static void reaped(const struct want* w, ssize_t r, int err) {
  print_want(w, r >= 0 ? (long long)r : -(long long)err);
}

/* Waits for `cb` with aio_suspend and aio_error, then reaps it. */
static void wait_and_reap(struct aiocb* cb, const struct want* w) {
  const struct aiocb* list[1] = {cb};
  while (aio_error(cb) == EINPROGRESS) CHECK(aio_suspend(list, 1, NULL) == 0 || errno == EINTR);
  int err = aio_error(cb);
  ssize_t r = aio_return(cb);
  reaped(w, r, err);
}

static char pa[4096], pb[4096];
static int fa;
static struct aiocb other_cb;
static char other_buf[4096];
static int other_tid;

static void* submit_elsewhere(void* arg) {
  (void)arg;
  other_tid = raw_gettid();
  memset(&other_cb, 0, sizeof(other_cb));
  other_cb.aio_fildes = fa;
  other_cb.aio_buf = other_buf;
  other_cb.aio_nbytes = 1024;
  other_cb.aio_offset = 50000;
  CHECK(aio_read(&other_cb) == 0);
  return NULL;
}

/* The program checks each request with aio_error and never calls
 * aio_return, reusing its aiocbs: one aiocb for 5000 reads (more than the
 * tracer's 4096 requests in flight), then lio_listio(LIO_WAIT) twice on one
 * array of three. Each request is recorded once, seen done, with its result,
 * unreaped; in the order submitted, the three of one lio_listio by offset. */
static int reused(const char* path) {
  const int fd = make_file(path, 65536);
  static char buf[3][1024];
  struct aiocb cb;
  for (int i = 0; i < 5000; ++i) {
    memset(&cb, 0, sizeof(cb));
    cb.aio_fildes = fd;
    cb.aio_buf = buf[0];
    cb.aio_nbytes = 512;
    cb.aio_offset = (i % 128) * 512;
    CHECK(aio_read(&cb) == 0);
    const struct aiocb* one[1] = {&cb};
    while (aio_error(&cb) == EINPROGRESS) CHECK(aio_suspend(one, 1, NULL) == 0 || errno == EINTR);
    CHECK(aio_error(&cb) == 0);
    print_want(&(struct want){"aio_read", path, (i % 128) * 512, 512, fd, WANT_UNREAPED, 0}, 512);
  }
  struct aiocb batch[3];
  struct aiocb* list[3];
  for (int round = 0; round < 2; ++round) {
    for (int k = 0; k < 3; ++k) {
      memset(&batch[k], 0, sizeof(batch[k]));
      batch[k].aio_fildes = fd;
      batch[k].aio_buf = buf[k];
      batch[k].aio_nbytes = 1024;
      batch[k].aio_offset = 1024LL * (round * 3 + k);
      batch[k].aio_lio_opcode = LIO_READ;
      list[k] = &batch[k];
    }
    CHECK(lio_listio(LIO_WAIT, list, 3, NULL) == 0);
    for (int k = 0; k < 3; ++k) {
      CHECK(aio_error(&batch[k]) == 0);
      print_want(&(struct want){"aio_read", path, 1024LL * (round * 3 + k), 1024, fd,
                                WANT_UNREAPED, 0}, 1024);
    }
  }
  return 0;  /* (fd left open: the requests' file to the end) */
}

static int appended(const char* path) {
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  CHECK(fd >= 0);
  static char buf[1000];
  struct aiocb cb;
  for (int i = 0; i < 3; ++i) {
    memset(&cb, 0, sizeof(cb));
    cb.aio_fildes = fd;
    cb.aio_buf = buf;
    cb.aio_nbytes = sizeof(buf);
    cb.aio_offset = 0;
    CHECK(aio_write(&cb) == 0);
    wait_and_reap(&cb, &(struct want){"aio_write", path, -1, 1000, fd, 0, 0});
    CHECK(raw_file_size(fd) == 1000 * (i + 1));  /* appended */
  }
  return close(fd);
}

int main(int argc, char** argv) {
  CHECK(argc == 2 || argc == 3);
  if (argc == 3) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/a.dat", argv[1]);
    if (strcmp(argv[2], "append") == 0) return appended(path);
    CHECK(strcmp(argv[2], "reused") == 0);
    return reused(path);
  }
  const int me = raw_gettid();
  snprintf(pa, sizeof(pa), "%s/a.dat", argv[1]);
  snprintf(pb, sizeof(pb), "%s/b.dat", argv[1]);
  fa = make_file(pa, 65536);
  int fb = open(pb, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(fb >= 0);

  static char bufs[8][4096];
  struct aiocb cb[8];
  memset(cb, 0, sizeof(cb));

  /* aio_read, aio_write, then aio_fsync of the written file. */
  cb[0].aio_fildes = fa;
  cb[0].aio_buf = bufs[0];
  cb[0].aio_nbytes = 4096;
  cb[0].aio_offset = 16384;
  CHECK(aio_read(&cb[0]) == 0);
  cb[1].aio_fildes = fb;
  cb[1].aio_buf = want_block;
  cb[1].aio_nbytes = 6000;
  cb[1].aio_offset = 100;
  CHECK(aio_write(&cb[1]) == 0);
  wait_and_reap(&cb[0], &(struct want){"aio_read", pa, 16384, 4096, fa, 0, me});
  wait_and_reap(&cb[1], &(struct want){"aio_write", pb, 100, 6000, fb, 0, me});
  cb[2].aio_fildes = fb;
  CHECK(aio_fsync(O_SYNC, &cb[2]) == 0);
  wait_and_reap(&cb[2], &(struct want){"aio_fsync", pb, -1, 0, fb, 0, me});

  /* lio_listio, waiting: all done when it returns. */
  struct aiocb* list[4];
  for (int i = 0; i < 3; ++i) {
    memset(&cb[3 + i], 0, sizeof(cb[3 + i]));
    cb[3 + i].aio_fildes = fa;
    cb[3 + i].aio_buf = bufs[3 + i];
    cb[3 + i].aio_nbytes = 2048;
    cb[3 + i].aio_offset = 8192LL * (i + 1);
    cb[3 + i].aio_lio_opcode = LIO_READ;
    list[i] = &cb[3 + i];
  }
  list[3] = NULL;
  CHECK(lio_listio(LIO_WAIT, list, 4, NULL) == 0);
  for (int i = 0; i < 3; ++i) {
    CHECK(aio_error(&cb[3 + i]) == 0);
    ssize_t r = aio_return(&cb[3 + i]);
    reaped(&(struct want){"aio_read", pa, 8192LL * (i + 1), 2048, fa, 0, me}, r, 0);
  }

  /* lio_listio without waiting (the 64-bit name), then aio_suspend. */
  struct aiocb64 cb64[2];
  memset(cb64, 0, sizeof(cb64));
  struct aiocb64* list64[2];
  for (int i = 0; i < 2; ++i) {
    cb64[i].aio_fildes = fa;
    cb64[i].aio_buf = bufs[6 + i];
    cb64[i].aio_nbytes = 512;
    cb64[i].aio_offset = 1000 * (i + 1);
    cb64[i].aio_lio_opcode = LIO_READ;
    list64[i] = &cb64[i];
  }
  CHECK(lio_listio64(LIO_NOWAIT, list64, 2, NULL) == 0);
  for (int i = 0; i < 2; ++i) {
    const struct aiocb64* one[1] = {&cb64[i]};
    while (aio_error64(&cb64[i]) == EINPROGRESS) CHECK(aio_suspend64(one, 1, NULL) == 0 || errno == EINTR);
    ssize_t r = aio_return64(&cb64[i]);
    reaped(&(struct want){"aio_read", pa, 1000 * (i + 1), 512, fa, 0, me}, r, 0);
  }

  /* A read of a write-only fd: accepted, it fails with EBADF. */
  memset(&cb[0], 0, sizeof(cb[0]));
  cb[0].aio_fildes = fb;
  cb[0].aio_buf = bufs[0];
  cb[0].aio_nbytes = 100;
  cb[0].aio_offset = 0;
  CHECK(aio_read(&cb[0]) == 0);
  wait_and_reap(&cb[0], &(struct want){"aio_read", pb, 0, 100, fb, 0, me});

  /* Submitted on another thread, reaped here. */
  pthread_t t;
  CHECK(pthread_create(&t, NULL, submit_elsewhere, NULL) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  wait_and_reap(&other_cb, &(struct want){"aio_read", pa, 50000, 1024, fa, 0, other_tid});

  close(fa);
  close(fb);
  return 0;
}
