/* What the asynchronous I/O programs (programs/async/) say the tracer must
 * record for each request they reap: one "EV\tkey=value..." line, with the
 * keys test_async_io.py compares against the trace's event. */
#ifndef DLPROF_TESTS_INTEGRATION_PROGRAMS_ASYNC_WANT_H_
#define DLPROF_TESTS_INTEGRATION_PROGRAMS_ASYNC_WANT_H_

#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "../common.h"

/* A file of `size` bytes (at most 64 KiB) of a known pattern made at `path`
 * (by a pwrite: the trace has it too); its fd, open for reading and writing. */
static char want_block[65536];
static inline int make_file(const char* path, size_t size) {
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0);
  for (size_t i = 0; i < sizeof(want_block); ++i) want_block[i] = (char)(i * 13);
  CHECK(size <= sizeof(want_block) && pwrite(fd, want_block, size, 0) == (ssize_t)size);
  return fd;
}

enum { WANT_FIXED_FILE = 1, WANT_FIXED_BUFFER = 2, WANT_LINKED = 4, WANT_UNREAPED = 8 };

struct want {
  const char* name;
  const char* path;
  long long offset; /* -1: none */
  long long size;
  int fd;           /* -1: none (a direct descriptor's) */
  int flags;        /* WANT_* */
  int submit_tid;   /* 0: the thread that reaps it */
};

/* The request completed with `ret` (bytes, a new fd, 0 or -errno) and was
 * reaped on this thread. */
static inline void print_want(const struct want* w, long long ret) {
  printf("EV\tname=%s\tpath=%s\tsize=%lld\tret=%lld\terrno=%lld", w->name, w->path, w->size, ret,
         ret < 0 ? -ret : 0);
  if (w->offset >= 0) printf("\toffset=%lld", w->offset);
  if (w->fd >= 0) printf("\tfd=%d", w->fd);
  if (strstr(w->name, "read") != NULL || strstr(w->name, "write") != NULL) {
    printf("\tbytes=%lld", ret > 0 ? ret : 0);
  }
  if (w->flags & WANT_FIXED_FILE) printf("\tfixed_file=1");
  if (w->flags & WANT_FIXED_BUFFER) printf("\tfixed_buffer=1");
  if (w->flags & WANT_LINKED) printf("\tlinked=1");
  if (w->flags & WANT_UNREAPED) printf("\tunreaped=1");
  printf("\tsubmit_tid=%d\ttid=%d\n", w->submit_tid ? w->submit_tid : raw_gettid(), raw_gettid());
}

#endif /* DLPROF_TESTS_INTEGRATION_PROGRAMS_ASYNC_WANT_H_ */
