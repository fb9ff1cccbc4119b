/* async_overhead: asynchronous reads for dlprof's cost benchmarks
 * (bench/callgrind_async.sh, bench/RESULTS_ASYNC.md): N reads of 4 KiB from a
 * page-cached file at random 4 KiB-aligned offsets, kept DEPTH in flight,
 * through one of the three interfaces the tracer follows:
 *
 *   async_overhead --file F --create [--file-mb 64]
 *   async_overhead --file F --engine uring|linux-aio|posix-aio [--requests N]
 *                  [--depth D] [--batch B] [--interleave K]
 *
 * uring: io_uring by raw syscall(), as fio's engine (SQ array, user-space
 * reaping of the CQ ring): B requests published per io_uring_enter, the
 * completions waited for when the ring holds D. linux-aio: io_submit of B
 * iocbs at a time, io_getevents when D are in flight. posix-aio: aio_read,
 * aio_suspend on the oldest when D are in flight, aio_error and aio_return.
 * Every read is checked to return 4 KiB. It knows nothing about dlprof: the
 * drivers run it with and without LD_PRELOAD=libdlprof.so. Prints one JSON
 * line: requests, wall ns per request.
 *
 * With --interleave K (uring and linux-aio; bench/async_time.py) it
 * alternates bursts of K reads on a ring (a context) entered through
 * syscall() with bursts on a second one entered through the C library's
 * own syscall(), found with dlsym, which no preloaded library sees, timing
 * each burst by wall clock and by the thread's CPU clock (il_syscall_* and
 * il_unseen_* keys, ns per request): as pread_overhead's --interleave, the
 * in-process difference stays stable on a loaded machine.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <dlfcn.h>
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

/* The C library's own syscall(), found in the library itself: a call
 * through this pointer reaches no preloaded library's syscall(), and makes
 * the same system call from the same instruction as the interposed one
 * (on some machines a system call's cost depends on where its instruction
 * sits: the C library's cost 60-300 ns more than one inline on the 2-core
 * VM of bench/RESULTS_ASYNC.md). */
typedef long (*syscall_fn)(long, ...);
static syscall_fn libc_syscall(void) {
  static syscall_fn fn;
  if (fn == NULL) {
    void* libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    fn = libc != NULL ? (syscall_fn)dlsym(libc, "syscall") : NULL;
    if (fn == NULL) {
      fprintf(stderr, "async_overhead: the C library's syscall(): %s\n", dlerror());
      exit(1);
    }
  }
  return fn;
}

/* A ring and the program's view of it, entered through syscall() (what
 * the tracer follows) or, `unseen`, the C library's own (libc_syscall). */
struct uring {
  int fd, unseen;
  unsigned *sq_tail, *sq_array, sq_mask, *cq_head, *cq_tail, cq_mask;
  struct io_uring_sqe* sqes;
  struct io_uring_cqe* cqes;
  char (*bufs)[BLOCK];
  struct pool pool;
};

/* A system call through syscall() or, `unseen`, past any preloaded one. */
static long sys_call(int unseen, long nr, long a, long b, long c, long d, long e) {
  return unseen ? libc_syscall()(nr, a, b, c, d, e, 0) : syscall(nr, a, b, c, d, e, 0);
}

static void uring_open(struct uring* u, int depth, int unseen, char (*bufs)[BLOCK]) {
  struct io_uring_params p;
  memset(&p, 0, sizeof(p));
  memset(u, 0, sizeof(*u));
  u->unseen = unseen;
  u->bufs = bufs;
  u->fd = (int)sys_call(u->unseen, SYS_io_uring_setup, depth, (long)&p, 0, 0, 0);
  if (u->fd < 0) die("io_uring_setup");
  char* sq = mmap(NULL, p.sq_off.array + p.sq_entries * 4, PROT_READ | PROT_WRITE,
                  MAP_SHARED | MAP_POPULATE, u->fd, IORING_OFF_SQ_RING);
  char* cq = mmap(NULL, p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe),
                  PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, u->fd, IORING_OFF_CQ_RING);
  u->sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_POPULATE, u->fd, IORING_OFF_SQES);
  if (sq == MAP_FAILED || cq == MAP_FAILED || u->sqes == MAP_FAILED) die("mmap");
  u->sq_tail = (unsigned*)(sq + p.sq_off.tail);
  u->sq_array = (unsigned*)(sq + p.sq_off.array);
  u->sq_mask = *(unsigned*)(sq + p.sq_off.ring_mask);
  u->cq_head = (unsigned*)(cq + p.cq_off.head);
  u->cq_tail = (unsigned*)(cq + p.cq_off.tail);
  u->cq_mask = *(unsigned*)(cq + p.cq_off.ring_mask);
  u->cqes = (struct io_uring_cqe*)(cq + p.cq_off.cqes);
  pool_init(&u->pool, depth);
}

/* n reads, start to finish: BATCH published per io_uring_enter, the
 * completions waited for when DEPTH are in flight, the ring empty at the end. */
static long uring_reads(struct uring* u, int fd, long long blocks, long n, int batch) {
  long submitted = 0, done = 0;
  while (done < n) {
    int queued = 0;
    while (queued < batch && u->pool.n > 0 && submitted < n) {
      int slot = u->pool.free[--u->pool.n];
      struct io_uring_sqe* sqe = &u->sqes[slot];
      memset(sqe, 0, sizeof(*sqe));
      sqe->opcode = IORING_OP_READ;
      sqe->fd = fd;
      sqe->addr = (uint64_t)(uintptr_t)u->bufs[slot];
      sqe->len = BLOCK;
      sqe->off = (uint64_t)next_offset(blocks);
      sqe->user_data = (uint64_t)slot;
      unsigned tail = *u->sq_tail;
      u->sq_array[tail & u->sq_mask] = (unsigned)slot;
      __atomic_store_n(u->sq_tail, tail + 1, __ATOMIC_RELEASE);
      ++queued;
      ++submitted;
    }
    const int wait = u->pool.n == 0 || submitted == n;
    if (sys_call(u->unseen, SYS_io_uring_enter, u->fd, queued, wait ? 1 : 0,
                   wait ? IORING_ENTER_GETEVENTS : 0, 0) < 0) {
      die("io_uring_enter");
    }
    unsigned head = *u->cq_head, tail = __atomic_load_n(u->cq_tail, __ATOMIC_ACQUIRE);
    for (; head != tail; ++head) {
      struct io_uring_cqe* c = &u->cqes[head & u->cq_mask];
      if (c->res != BLOCK) die("short read");
      u->pool.free[u->pool.n++] = (int)c->user_data;
      ++done;
    }
    __atomic_store_n(u->cq_head, head, __ATOMIC_RELEASE);
  }
  return done;
}

__attribute__((noinline)) static long run_uring(int fd, long long blocks, long n, int depth,
                                                int batch) {
  struct uring u;
  uring_open(&u, depth, 0, bufs);
  const long done = uring_reads(&u, fd, blocks, n, batch);
  close(u.fd);
  return done;
}

/* ---- Linux AIO by syscall() ---- */

/* A context, entered through syscall() or, `unseen`, past any preloaded one. */
struct laio {
  aio_context_t ctx;
  int unseen, depth;
  struct iocb cbs[MAX_DEPTH];
  char (*bufs)[BLOCK];
  struct pool pool;
};

static void laio_open(struct laio* a, int depth, int unseen, char (*bufs)[BLOCK]) {
  memset(a, 0, sizeof(*a));
  a->unseen = unseen;
  a->depth = depth;
  a->bufs = bufs;
  if (sys_call(unseen, SYS_io_setup, depth, (long)&a->ctx, 0, 0, 0) != 0) die("io_setup");
  pool_init(&a->pool, depth);
}

/* n reads, start to finish: io_submit of BATCH iocbs at a time,
 * io_getevents when DEPTH are in flight, none in flight at the end. */
static long laio_reads(struct laio* a, int fd, long long blocks, long n, int batch) {
  struct iocb* list[MAX_DEPTH];
  struct io_event ev[MAX_DEPTH];
  long submitted = 0, done = 0;
  while (done < n) {
    int queued = 0;
    while (queued < batch && a->pool.n > 0 && submitted < n) {
      int slot = a->pool.free[--a->pool.n];
      struct iocb* cb = &a->cbs[slot];
      memset(cb, 0, sizeof(*cb));
      cb->aio_data = (uint64_t)slot;
      cb->aio_lio_opcode = IOCB_CMD_PREAD;
      cb->aio_fildes = (uint32_t)fd;
      cb->aio_buf = (uint64_t)(uintptr_t)a->bufs[slot];
      cb->aio_nbytes = BLOCK;
      cb->aio_offset = next_offset(blocks);
      list[queued++] = cb;
      ++submitted;
    }
    if (queued > 0 &&
        sys_call(a->unseen, SYS_io_submit, (long)a->ctx, queued, (long)list, 0, 0) != queued) {
      die("io_submit");
    }
    if (a->pool.n == 0 || submitted == n) {
      long r = sys_call(a->unseen, SYS_io_getevents, (long)a->ctx, 1, a->depth, (long)ev, 0);
      if (r < 0) die("io_getevents");
      for (long i = 0; i < r; ++i) {
        if (ev[i].res != BLOCK) die("short read");
        a->pool.free[a->pool.n++] = (int)ev[i].data;
        ++done;
      }
    }
  }
  return done;
}

__attribute__((noinline)) static long run_linux_aio(int fd, long long blocks, long n, int depth,
                                                    int batch) {
  static struct laio a;
  laio_open(&a, depth, 0, bufs);
  const long done = laio_reads(&a, fd, blocks, n, batch);
  sys_call(0, SYS_io_destroy, (long)a.ctx, 0, 0, 0, 0);
  return done;
}

/* ---- both sides of --interleave ---- */

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* In one process, bursts of K reads through syscall() (traced when
 * preloaded) against bursts on a second ring or context entered through
 * libc_syscall() (never seen), each timed by wall clock and by the thread's CPU
 * clock: their difference is immune to the machine's drift. Sums in ns. */
struct interleaved {
  double lib_ns, unseen_ns, lib_cpu, unseen_cpu;
};
static char unseen_bufs[MAX_DEPTH][BLOCK] __attribute__((aligned(4096)));
static long run_interleaved(int uring, int fd, long long blocks, long n, int depth, int batch,
                            long k, struct interleaved* out) {
  static struct uring u[2];
  static struct laio a[2];
  for (int unseen = 0; unseen < 2; ++unseen) {
    if (uring) {
      uring_open(&u[unseen], depth, unseen, unseen ? unseen_bufs : bufs);
    } else {
      laio_open(&a[unseen], depth, unseen, unseen ? unseen_bufs : bufs);
    }
  }
  long done = 0;
  for (long burst = 0, turn = 0; done < n; done += burst, ++turn) {
    burst = n - done < k ? n - done : k;
    uint64_t wall[2], cpu[2];
    for (int i = 0; i < 2; ++i) {
      const int unseen = i ^ (int)(turn & 1);  /* which goes first alternates */
      const uint64_t w0 = now_ns(), c0 = thread_cpu_ns();
      if (uring) {
        uring_reads(&u[unseen], fd, blocks, burst, batch);
      } else {
        laio_reads(&a[unseen], fd, blocks, burst, batch);
      }
      wall[unseen] = now_ns() - w0;
      cpu[unseen] = thread_cpu_ns() - c0;
    }
    out->lib_ns += (double)wall[0];
    out->unseen_ns += (double)wall[1];
    out->lib_cpu += (double)cpu[0];
    out->unseen_cpu += (double)cpu[1];
  }
  for (int unseen = 0; unseen < 2; ++unseen) {
    if (uring) {
      close(u[unseen].fd);
    } else {
      sys_call(unseen, SYS_io_destroy, (long)a[unseen].ctx, 0, 0, 0, 0);
    }
  }
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
  long n = 100000, mb = 64, interleave = 0;
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
    } else if (v && !strcmp(a, "--interleave")) {
      interleave = atol(v), ++i;
    } else if (v && !strcmp(a, "--file-mb")) {
      mb = atol(v), ++i;
    } else {
      fprintf(stderr, "async_overhead: unknown argument %s\n", a);
      return 2;
    }
  }
  if (!file || depth < 1 || depth > MAX_DEPTH || batch < 1 || interleave < 0 ||
      (interleave > 0 && !strcmp(engine, "posix-aio"))) {
    fprintf(stderr, "async_overhead: --file F, --depth 1..%d, --batch >= 1,"
            " --interleave K >= 1 with uring or linux-aio\n", MAX_DEPTH);
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
  struct interleaved il = {0, 0, 0, 0};
  if (interleave > 0) {
    done = run_interleaved(!strcmp(engine, "uring"), fd, blocks, n, depth, batch, interleave,
                           &il);
  } else if (!strcmp(engine, "uring")) {
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
  printf("{\"engine\":\"%s\",\"requests\":%ld,\"depth\":%d,\"batch\":%d,\"ns_per_request\":%.1f",
         engine, done, depth, batch, (double)(t1 - t0) / (double)done);
  if (interleave > 0) {
    const double per = (double)done;  /* requests on each ring */
    printf(",\"interleave\":%ld,\"il_syscall_ns\":%.2f,\"il_unseen_ns\":%.2f,"
           "\"il_syscall_cpu_ns\":%.2f,\"il_unseen_cpu_ns\":%.2f",
           interleave, il.lib_ns / per, il.unseen_ns / per, il.lib_cpu / per, il.unseen_cpu / per);
  }
  printf("}\n");
  close(fd);
  return 0;
}
