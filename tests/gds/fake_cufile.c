/* A stand-in for NVIDIA's libcufile.so.0 with the real C ABI (the calls,
 * their argument and result types, the structures' layout), for testing
 * dlprof's cuFile interposition on machines without a GPU.
 *
 * It behaves as cuFile's compatibility mode does without GDS hardware, on
 * the threads where the real library (CUDA 13.0's, seen on an H100 by
 * tests/gpu/gds_check.py) does its POSIX calls, here pread/pwrite in chunks
 * of at most 64 KiB (a bounce buffer's size); "device memory" is host
 * memory:
 *   - cuFileRead/Write: inside the call, on the caller's thread;
 *   - cuFileReadAsync/WriteAsync and batch entries: later, on a thread of
 *     the library's own, as the real one's worker threads do them.
 * Here that thread is the stream's: a queue of host functions run in order
 * (as the CUDA driver runs them on its callback thread), which stream I/O
 * and batch entries are queued on too. cuLaunchHostFunc and
 * cuStreamSynchronize, which the real libcuda.so.1 defines, are defined here
 * so that the tests need no CUDA. cuFileBatchIOGetStatus waits for min_nr
 * entries done and reports those done.
 *
 * What it is not: any measure of GDS performance.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "cufile_abi.h"

enum { OK = 0, NOT_INITIALIZED = 5001, INVALID_VALUE = 5022, HANDLE_NOT_REGISTERED = 5027,
       BATCH_FULL = 5037 };
enum { COMPLETE = 0x10, FAILED = 0x40 };
#define CHUNK (64 * 1024)

static CUfileError_t status(int err) { CUfileError_t s = {err, 0}; return s; }
static int g_open;

struct handle { uint32_t magic; int fd; };
#define HANDLE_MAGIC 0x46494c45u

static struct handle* as_handle(CUfileHandle_t h) {
  struct handle* p = (struct handle*)h;
  return p != NULL && p->magic == HANDLE_MAGIC ? p : NULL;
}

CUfileError_t cuFileDriverOpen(void) { g_open = 1; return status(OK); }
CUfileError_t cuFileDriverClose(void) { g_open = 0; return status(OK); }
CUfileError_t cuFileDriverClose_v2(void) { g_open = 0; return status(OK); }
long cuFileUseCount(void) { return g_open; }

CUfileError_t cuFileHandleRegister(CUfileHandle_t* fh, CUfileDescr_t* descr) {
  if (!g_open) return status(NOT_INITIALIZED);
  if (fh == NULL || descr == NULL || descr->type != 1 || fcntl(descr->handle.fd, F_GETFL) < 0)
    return status(INVALID_VALUE);
  struct handle* h = malloc(sizeof *h);
  h->magic = HANDLE_MAGIC;
  h->fd = descr->handle.fd;
  *fh = h;
  return status(OK);
}

void cuFileHandleDeregister(CUfileHandle_t fh) {
  struct handle* h = as_handle(fh);
  if (h != NULL) { h->magic = 0; free(h); }
}

CUfileError_t cuFileBufRegister(const void* base, size_t length, int flags) {
  (void)flags;
  return base != NULL && length > 0 ? status(OK) : status(INVALID_VALUE);
}
CUfileError_t cuFileBufDeregister(const void* base) {
  return base != NULL ? status(OK) : status(INVALID_VALUE);
}

/* Compatibility mode: POSIX I/O in bounce-buffer chunks. */
static ssize_t do_io(int write, CUfileHandle_t fh, char* buf, size_t size, off_t offset) {
  struct handle* h = as_handle(fh);
  if (h == NULL) return -HANDLE_NOT_REGISTERED;
  size_t done = 0;
  while (done < size) {
    size_t n = size - done < CHUNK ? size - done : CHUNK;
    ssize_t r = write ? pwrite(h->fd, buf + done, n, offset + (off_t)done)
                      : pread(h->fd, buf + done, n, offset + (off_t)done);
    if (r < 0) return done > 0 ? (ssize_t)done : -1;
    if (r == 0) break;
    done += (size_t)r;
  }
  return (ssize_t)done;
}

ssize_t cuFileRead(CUfileHandle_t fh, void* base, size_t size, off_t file_offset,
                   off_t buf_offset) {
  return do_io(0, fh, (char*)base + buf_offset, size, file_offset);
}

ssize_t cuFileWrite(CUfileHandle_t fh, const void* base, size_t size, off_t file_offset,
                    off_t buf_offset) {
  return do_io(1, fh, (char*)base + buf_offset, size, file_offset);
}

/* ---- the stream: host functions run in order on one thread ---- */
typedef void (*host_fn)(void*);
struct task { host_fn fn; void* arg; };
static struct task g_queue[1024];
static unsigned g_head, g_tail;  /* g_tail - g_head tasks queued */
static int g_running;            /* a task is running */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static pthread_t g_thread;
static int g_started;

static void* stream_thread(void* unused) {
  (void)unused;
  pthread_mutex_lock(&g_mu);
  for (;;) {
    while (g_head == g_tail) pthread_cond_wait(&g_cv, &g_mu);
    struct task t = g_queue[g_head % 1024];
    g_running = 1;
    pthread_mutex_unlock(&g_mu);
    t.fn(t.arg);
    pthread_mutex_lock(&g_mu);
    g_running = 0;
    ++g_head;
    pthread_cond_broadcast(&g_cv);
  }
  return NULL;
}

int cuLaunchHostFunc(CUstream stream, host_fn fn, void* arg) {
  (void)stream;
  pthread_mutex_lock(&g_mu);
  if (!g_started) {
    pthread_create(&g_thread, NULL, stream_thread, NULL);
    g_started = 1;
  }
  if (g_tail - g_head >= 1024) { pthread_mutex_unlock(&g_mu); return 2; /* out of memory */ }
  g_queue[g_tail % 1024].fn = fn;
  g_queue[g_tail % 1024].arg = arg;
  ++g_tail;
  pthread_cond_broadcast(&g_cv);
  pthread_mutex_unlock(&g_mu);
  return 0;
}

int cuStreamIsCapturing(CUstream stream, int* capture) {
  (void)stream;
  *capture = 0;
  return 0;
}

int cuStreamSynchronize(CUstream stream) {
  (void)stream;
  pthread_mutex_lock(&g_mu);
  while (g_head != g_tail || g_running) pthread_cond_wait(&g_cv, &g_mu);
  pthread_mutex_unlock(&g_mu);
  return 0;
}

/* Stream I/O: queued on the stream, done when the stream reaches it. */
struct stream_io { int write; CUfileHandle_t fh; char* buf; size_t size; off_t offset; ssize_t* bytes; };

static void run_stream_io(void* arg) {
  struct stream_io* io = arg;
  *io->bytes = do_io(io->write, io->fh, io->buf, io->size, io->offset);
  free(io);
}

static CUfileError_t async_io(int write, CUfileHandle_t fh, void* base, size_t* size_p,
                              off_t* file_offset_p, off_t* buf_offset_p, ssize_t* bytes_p) {
  if (size_p == NULL || file_offset_p == NULL || buf_offset_p == NULL || bytes_p == NULL)
    return status(INVALID_VALUE);
  if (as_handle(fh) == NULL) return status(HANDLE_NOT_REGISTERED);
  struct stream_io* io = malloc(sizeof *io);
  if (io == NULL) return status(INVALID_VALUE);
  *io = (struct stream_io){write, fh, (char*)base + *buf_offset_p, *size_p, *file_offset_p, bytes_p};
  if (cuLaunchHostFunc(NULL, run_stream_io, io) != 0) { free(io); return status(INVALID_VALUE); }
  return status(OK);
}

CUfileError_t cuFileReadAsync(CUfileHandle_t fh, void* base, size_t* size_p,
                              off_t* file_offset_p, off_t* buf_offset_p, ssize_t* bytes_p,
                              CUstream stream) {
  (void)stream;
  return async_io(0, fh, base, size_p, file_offset_p, buf_offset_p, bytes_p);
}

CUfileError_t cuFileWriteAsync(CUfileHandle_t fh, void* base, size_t* size_p,
                               off_t* file_offset_p, off_t* buf_offset_p, ssize_t* bytes_p,
                               CUstream stream) {
  (void)stream;
  return async_io(1, fh, base, size_p, file_offset_p, buf_offset_p, bytes_p);
}

/* ---- batches: each entry done on the library's thread, in order; ---- */
/* ---- GetStatus waits for min_nr done and reports those done       ---- */
struct batch { unsigned max, submitted, done, reported; CUfileIOEvents_t* events; };
struct batch_entry { struct batch* b; CUfileIOParams_t p; };

static void run_batch_entry(void* arg) {
  struct batch_entry* e = arg;
  CUfileIOParams_t* p = &e->p;
  ssize_t r = do_io(p->opcode == 1, p->fh, (char*)p->u.batch.devPtr_base + p->u.batch.devPtr_offset,
                    p->u.batch.size, p->u.batch.file_offset);
  pthread_mutex_lock(&g_mu);  /* GetStatus reads done under it */
  CUfileIOEvents_t* ev = &e->b->events[e->b->done % e->b->max];
  ev->cookie = p->cookie;
  ev->status = r >= 0 ? COMPLETE : FAILED;
  ev->ret = (size_t)r;
  ++e->b->done;
  pthread_mutex_unlock(&g_mu);  /* the stream thread broadcasts after each task */
  free(e);
}

CUfileError_t cuFileBatchIOSetUp(CUfileBatchHandle_t* batch_idp, unsigned nr) {
  if (batch_idp == NULL || nr == 0) return status(INVALID_VALUE);
  struct batch* b = calloc(1, sizeof *b);
  b->max = nr;
  b->events = calloc(nr, sizeof *b->events);
  *batch_idp = b;
  return status(OK);
}

CUfileError_t cuFileBatchIOSubmit(CUfileBatchHandle_t batch_idp, unsigned nr,
                                  CUfileIOParams_t* iocbp, unsigned flags) {
  (void)flags;
  struct batch* b = batch_idp;
  if (b == NULL || iocbp == NULL) return status(INVALID_VALUE);
  if (b->submitted - b->reported + nr > b->max) return status(BATCH_FULL);
  for (unsigned i = 0; i < nr; ++i) {
    struct batch_entry* e = malloc(sizeof *e);
    if (e == NULL) return status(INVALID_VALUE);
    e->b = b;
    e->p = iocbp[i];
    if (cuLaunchHostFunc(NULL, run_batch_entry, e) != 0) { free(e); return status(INVALID_VALUE); }
    ++b->submitted;
  }
  return status(OK);
}

CUfileError_t cuFileBatchIOGetStatus(CUfileBatchHandle_t batch_idp, unsigned min_nr,
                                     unsigned* nr, CUfileIOEvents_t* iocbp,
                                     struct timespec* timeout) {
  (void)timeout;
  struct batch* b = batch_idp;
  if (b == NULL || nr == NULL || iocbp == NULL) return status(INVALID_VALUE);
  pthread_mutex_lock(&g_mu);
  if (min_nr > b->submitted - b->reported) min_nr = b->submitted - b->reported;
  while (b->done - b->reported < min_nr) pthread_cond_wait(&g_cv, &g_mu);
  unsigned n = 0;
  while (n < *nr && b->reported < b->done) iocbp[n++] = b->events[b->reported++ % b->max];
  pthread_mutex_unlock(&g_mu);
  *nr = n;
  return status(OK);
}

CUfileError_t cuFileBatchIOCancel(CUfileBatchHandle_t batch_idp) {
  return batch_idp != NULL ? status(OK) : status(INVALID_VALUE);
}

void cuFileBatchIODestroy(CUfileBatchHandle_t batch_idp) {
  struct batch* b = batch_idp;
  if (b != NULL) { free(b->events); free(b); }
}
