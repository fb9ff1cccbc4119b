/* async_overhead: asynchronous reads for dlprof's cost benchmarks
 * (bench/callgrind_async.sh, bench/RESULTS_DATA.md): N reads of 4 KiB from a
 * page-cached file at random 4 KiB-aligned offsets, kept DEPTH in flight,
 * through one of the three interfaces the tracer follows:
 *
 *   async_overhead --file F --create [--file-mb 64]
 *   async_overhead --file F --engine uring|linux-aio|posix-aio [--requests N]
 *                  [--depth D] [--batch B]
 *
 * uring: io_uring by raw syscall(), as fio's engine (SQ array, user-space
 * reaping of the CQ ring): B requests published per io_uring_enter, the
 * completions waited for when the ring holds D. linux-aio: io_submit of B
 * iocbs at a time, io_getevents when D are in flight. posix-aio: aio_read,
 * aio_suspend on the oldest when D are in flight, aio_error and aio_return.
 * Every read is checked to return 4 KiB. It knows nothing about dlprof: the
 * drivers run it with and without LD_PRELOAD=libdlprof.so. Prints one JSON
 * line: requests, wall ns per request.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <linux/io_uring.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define BLOCK 4096
#define MAX_DEPTH 256

static void die(const char* what) {
  fprintf(stderr, "async_overhead: %s: %s\n", what, strerror(errno));
  exit(1);
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t rng = 88172645463325252ull;
static long long next_offset(long long blocks) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (long long)(rng % (uint64_t)blocks) * BLOCK;
}

static char bufs[MAX_DEPTH][BLOCK] __attribute__((aligned(4096)));

/* The buffers (and request slots) not in flight. */
struct pool {
  int free[MAX_DEPTH];
  int n;
};
static void pool_init(struct pool* p, int depth) {
  for (p->n = 0; p->n < depth; ++p->n) p->free[p->n] = p->n;
}

/* ---- io_uring by syscall() ---- */
__attribute__((noinline)) static long run_uring(int fd, long long blocks, long n, int depth, int batch) {
  struct io_uring_params p;
  memset(&p, 0, sizeof(p));
  int ring = (int)syscall(SYS_io_uring_setup, depth, &p);
  if (ring < 0) die("io_uring_setup");
  char* sq = mmap(NULL, p.sq_off.array + p.sq_entries * 4, PROT_READ | PROT_WRITE,
                  MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQ_RING);
  char* cq = mmap(NULL, p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe),
                  PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_CQ_RING);
  struct io_uring_sqe* sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe),
                                   PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring,
                                   IORING_OFF_SQES);
  if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED) die("mmap");
  unsigned* sq_tail = (unsigned*)(sq + p.sq_off.tail);
  unsigned* sq_array = (unsigned*)(sq + p.sq_off.array);
  unsigned sq_mask = *(unsigned*)(sq + p.sq_off.ring_mask);
  unsigned* cq_head = (unsigned*)(cq + p.cq_off.head);
  unsigned* cq_tail = (unsigned*)(cq + p.cq_off.tail);
  unsigned cq_mask = *(unsigned*)(cq + p.cq_off.ring_mask);
  struct io_uring_cqe* cqes = (struct io_uring_cqe*)(cq + p.cq_off.cqes);
  struct pool pool;
  pool_init(&pool, depth);
  long submitted = 0, done = 0;
  while (done < n) {
    int queued = 0;
    while (queued < batch && pool.n > 0 && submitted < n) {
      int slot = pool.free[--pool.n];
      struct io_uring_sqe* sqe = &sqes[slot];
      memset(sqe, 0, sizeof(*sqe));
      sqe->opcode = IORING_OP_READ;
      sqe->fd = fd;
      sqe->addr = (uint64_t)(uintptr_t)bufs[slot];
      sqe->len = BLOCK;
      sqe->off = (uint64_t)next_offset(blocks);
      sqe->user_data = (uint64_t)slot;
      unsigned tail = *sq_tail;
      sq_array[tail & sq_mask] = (unsigned)slot;
      __atomic_store_n(sq_tail, tail + 1, __ATOMIC_RELEASE);
      ++queued;
      ++submitted;
    }
    const int wait = pool.n == 0 || submitted == n;
    if (syscall(SYS_io_uring_enter, ring, queued, wait ? 1 : 0, wait ? IORING_ENTER_GETEVENTS : 0,
                NULL, 0) < 0) {
      die("io_uring_enter");
    }
    unsigned head = *cq_head, tail = __atomic_load_n(cq_tail, __ATOMIC_ACQUIRE);
    for (; head != tail; ++head) {
      struct io_uring_cqe* c = &cqes[head & cq_mask];
      if (c->res != BLOCK) die("short read");
      pool.free[pool.n++] = (int)c->user_data;
      ++done;
    }
    __atomic_store_n(cq_head, head, __ATOMIC_RELEASE);
  }
  close(ring);
  return done;
}

/* ---- Linux AIO by syscall() ---- */
__attribute__((noinline)) static long run_linux_aio(int fd, long long blocks, long n, int depth, int batch) {
  aio_context_t ctx = 0;
  if (syscall(SYS_io_setup, depth, &ctx) != 0) die("io_setup");
  static struct iocb cbs[MAX_DEPTH];
  struct iocb* list[MAX_DEPTH];
  struct io_event ev[MAX_DEPTH];
  struct pool pool;
  pool_init(&pool, depth);
  long submitted = 0, done = 0;
  while (done < n) {
    int queued = 0;
    while (queued < batch && pool.n > 0 && submitted < n) {
      int slot = pool.free[--pool.n];
      struct iocb* cb = &cbs[slot];
      memset(cb, 0, sizeof(*cb));
      cb->aio_data = (uint64_t)slot;
      cb->aio_lio_opcode = IOCB_CMD_PREAD;
      cb->aio_fildes = (uint32_t)fd;
      cb->aio_buf = (uint64_t)(uintptr_t)bufs[slot];
      cb->aio_nbytes = BLOCK;
      cb->aio_offset = next_offset(blocks);
      list[queued++] = cb;
      ++submitted;
    }
    if (queued > 0 && syscall(SYS_io_submit, ctx, queued, list) != queued) die("io_submit");
    if (pool.n == 0 || submitted == n) {
      long r = syscall(SYS_io_getevents, ctx, 1, depth, ev, NULL);
      if (r < 0) die("io_getevents");
      for (long i = 0; i < r; ++i) {
        if (ev[i].res != BLOCK) die("short read");
        pool.free[pool.n++] = (int)ev[i].data;
        ++done;
      }
    }
  }
  syscall(SYS_io_destroy, ctx);
  return done;
}

/* ---- POSIX AIO ---- */
__attribute__((noinline)) static long run_posix_aio(int fd, long long blocks, long n, int depth) {
  static struct aiocb cbs[MAX_DEPTH];
  long submitted = 0, done = 0;
  int oldest = 0, inflight = 0;
  while (done < n) {
    while (inflight < depth && submitted < n) {
      struct aiocb* cb = &cbs[(oldest + inflight) % depth];
      memset(cb, 0, sizeof(*cb));
      cb->aio_fildes = fd;
      cb->aio_buf = bufs[(oldest + inflight) % depth];
      cb->aio_nbytes = BLOCK;
      cb->aio_offset = next_offset(blocks);
      cb->aio_sigevent.sigev_notify = SIGEV_NONE;
      if (aio_read(cb) != 0) die("aio_read");
      ++inflight;
      ++submitted;
    }
    struct aiocb* cb = &cbs[oldest];
    const struct aiocb* list[1] = {cb};
    while (aio_error(cb) == EINPROGRESS) aio_suspend(list, 1, NULL);
    if (aio_return(cb) != BLOCK) die("short read");
    oldest = (oldest + 1) % depth;
    --inflight;
    ++done;
  }
  return done;
}

int main(int argc, char** argv) {
  const char *file = NULL, *engine = "uring";
  long n = 100000, mb = 64;
  int depth = 8, batch = 1, create = 0;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--create")) {
      create = 1;
    } else if (v && !strcmp(a, "--file")) {
      file = v, ++i;
    } else if (v && !strcmp(a, "--engine")) {
      engine = v, ++i;
    } else if (v && !strcmp(a, "--requests")) {
      n = atol(v), ++i;
    } else if (v && !strcmp(a, "--depth")) {
      depth = atoi(v), ++i;
    } else if (v && !strcmp(a, "--batch")) {
      batch = atoi(v), ++i;
    } else if (v && !strcmp(a, "--file-mb")) {
      mb = atol(v), ++i;
    } else {
      fprintf(stderr, "async_overhead: unknown argument %s\n", a);
      return 2;
    }
  }
  if (!file || depth < 1 || depth > MAX_DEPTH || batch < 1) {
    fprintf(stderr, "async_overhead: --file F, --depth 1..%d, --batch >= 1\n", MAX_DEPTH);
    return 2;
  }
  if (create) {
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) die("open");
    static char block[1 << 20];
    memset(block, 'x', sizeof(block));
    for (long i = 0; i < mb; ++i) {
      if (write(fd, block, sizeof(block)) != (ssize_t)sizeof(block)) die("write");
    }
    close(fd);
    return 0;
  }
  int fd = open(file, O_RDONLY);
  if (fd < 0) die("open");
  const long long blocks = lseek(fd, 0, SEEK_END) / BLOCK;
  if (blocks <= 0) die("empty file");
  const uint64_t t0 = now_ns();
  long done;
  if (!strcmp(engine, "uring")) {
    done = run_uring(fd, blocks, n, depth, batch);
  } else if (!strcmp(engine, "linux-aio")) {
    done = run_linux_aio(fd, blocks, n, depth, batch);
  } else if (!strcmp(engine, "posix-aio")) {
    done = run_posix_aio(fd, blocks, n, depth);
  } else {
    fprintf(stderr, "async_overhead: no engine %s\n", engine);
    return 2;
  }
  const uint64_t t1 = now_ns();
  printf("{\"engine\":\"%s\",\"requests\":%ld,\"depth\":%d,\"batch\":%d,\"ns_per_request\":%.1f}\n",
         engine, done, depth, batch, (double)(t1 - t0) / (double)done);
  close(fd);
  return 0;
}
