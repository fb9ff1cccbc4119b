/* Reads and writes files through the cuFile API, as a GPU data loader does,
 * and prints what each call did, for tests/gds/test_gds.py to check the
 * trace against. Built twice: linked with libcufile.so.0 (gds_linked), and
 * opening it with dlopen and looking every function up with dlsym, as
 * kvikio and DALI do, but cuFileRead and cuFileReadAsync with dlvsym
 * (gds_dlopen, -DGDS_DLOPEN; the fake library's version, fake_cufile.map).
 *
 *   gds_program DATA OUT    DATA: a file of at least 300,000 bytes
 *
 * Each call prints "CALL name fd offset size ret buffer" (buffer: the
 * device address the I/O worked at, 0 if none); the device memory is host
 * memory, as the fake libcufile (fake_cufile.c) takes it. A stream I/O
 * also prints "STREAM name stream": the read and the write are queued on
 * two streams.
 *
 *   gds_program --dlsym    prints which object dlsym(RTLD_NEXT, "read") and
 *                          dlsym(RTLD_DEFAULT, "read") found, from here, and
 *                          dlvsym's of read@GLIBC_2.2.5: an interposed dlsym
 *                          or dlvsym must answer as the C library's
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "cufile_abi.h"

#define API(X)                                                                                \
  X(CUfileError_t, cuFileDriverOpen, (void))                                                  \
  X(CUfileError_t, cuFileDriverClose_v2, (void))                                              \
  X(CUfileError_t, cuFileHandleRegister, (CUfileHandle_t*, CUfileDescr_t*))                   \
  X(void, cuFileHandleDeregister, (CUfileHandle_t))                                           \
  X(CUfileError_t, cuFileBufRegister, (const void*, size_t, int))                             \
  X(CUfileError_t, cuFileBufDeregister, (const void*))                                        \
  X(ssize_t, cuFileRead, (CUfileHandle_t, void*, size_t, off_t, off_t))                       \
  X(ssize_t, cuFileWrite, (CUfileHandle_t, const void*, size_t, off_t, off_t))                \
  X(CUfileError_t, cuFileReadAsync,                                                           \
    (CUfileHandle_t, void*, size_t*, off_t*, off_t*, ssize_t*, CUstream))                     \
  X(CUfileError_t, cuFileWriteAsync,                                                          \
    (CUfileHandle_t, void*, size_t*, off_t*, off_t*, ssize_t*, CUstream))                     \
  X(CUfileError_t, cuFileBatchIOSetUp, (CUfileBatchHandle_t*, unsigned))                      \
  X(CUfileError_t, cuFileBatchIOSubmit, (CUfileBatchHandle_t, unsigned, CUfileIOParams_t*,    \
                                         unsigned))                                           \
  X(CUfileError_t, cuFileBatchIOGetStatus, (CUfileBatchHandle_t, unsigned, unsigned*,         \
                                            CUfileIOEvents_t*, struct timespec*))             \
  X(CUfileError_t, cuFileBatchIOCancel, (CUfileBatchHandle_t))                                \
  X(void, cuFileBatchIODestroy, (CUfileBatchHandle_t))                                        \
  X(int, cuStreamSynchronize, (CUstream))

#ifdef GDS_DLOPEN
#define DECLARE(ret, name, args) static ret(*p_##name) args;
API(DECLARE)
/* Looked up with dlvsym rather than dlsym. */
static int versioned(const char* name) {
  return strcmp(name, "cuFileRead") == 0 || strcmp(name, "cuFileReadAsync") == 0;
}
static void load(void) {
  /* As kvikio does: a local scope, so only dlsym finds the functions. */
  void* lib = dlopen("libcufile.so.0", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) { fprintf(stderr, "dlopen: %s\n", dlerror()); exit(2); }
#define LOOKUP(ret, name, args)                                              \
  p_##name = (ret(*) args)(versioned(#name) ? dlvsym(lib, #name, "FAKE_CUFILE_1") \
                                            : dlsym(lib, #name));        \
  if (p_##name == NULL) { fprintf(stderr, "dlsym %s\n", #name); exit(2); }
  API(LOOKUP)
}
#define CALL(name) p_##name
#else
#define DECLARE(ret, name, args) ret name args;
API(DECLARE)
static void load(void) {}
#define CALL(name) name
#endif

static void report(const char* name, int fd, long long offset, unsigned long long size,
                   long long ret, const void* buffer) {
  printf("CALL %s %d %lld %llu %lld %llu\n", name, fd, offset, size, ret,
         (unsigned long long)(uintptr_t)buffer);
}

static void check(CUfileError_t s, const char* what) {
  if (s.err != 0) { fprintf(stderr, "%s failed: %d\n", what, s.err); exit(1); }
}

static const char* object_of(void* p) {
  Dl_info info;
  return p != NULL && dladdr(p, &info) && info.dli_fname ? info.dli_fname : "none";
}

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "--dlsym") == 0) {
    printf("NEXT %s\nDEFAULT %s\n", object_of(dlsym(RTLD_NEXT, "read")),
           object_of(dlsym(RTLD_DEFAULT, "read")));
    printf("VNEXT %s\nVDEFAULT %s\n", object_of(dlvsym(RTLD_NEXT, "read", "GLIBC_2.2.5")),
           object_of(dlvsym(RTLD_DEFAULT, "read", "GLIBC_2.2.5")));
    return 0;
  }
  if (argc != 3) { fprintf(stderr, "usage: %s DATA OUT\n", argv[0]); return 2; }
  load();
  const size_t kBuf = 1 << 20;
  char* dev = malloc(kBuf);  /* "device memory" to the fake library */
  memset(dev, 0, kBuf);

  check(CALL(cuFileDriverOpen)(), "cuFileDriverOpen");
  int fd = open(argv[1], O_RDONLY);
  int out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || out < 0) { perror("open"); return 1; }
  CUfileDescr_t d = {0};
  d.type = 1;
  d.handle.fd = fd;
  CUfileHandle_t fh, oh;
  check(CALL(cuFileHandleRegister)(&fh, &d), "cuFileHandleRegister");
  d.handle.fd = out;
  check(CALL(cuFileHandleRegister)(&oh, &d), "cuFileHandleRegister");
  printf("HANDLE %d %llu\nHANDLE %d %llu\n", fd, (unsigned long long)(uintptr_t)fh, out,
         (unsigned long long)(uintptr_t)oh);
  check(CALL(cuFileBufRegister)(dev, kBuf, 0), "cuFileBufRegister");

  /* Synchronous: a whole read in four bounce-buffer chunks, one cut short
   * by the end of the file, and a write. */
  ssize_t r = CALL(cuFileRead)(fh, dev, 200000, 0, 0);
  report("cuFileRead", fd, 0, 200000, r, dev);
  r = CALL(cuFileRead)(fh, dev, 200000, 200000, 4096);
  report("cuFileRead", fd, 200000, 200000, r, dev + 4096);
  r = CALL(cuFileWrite)(oh, dev, 150000, 0, 0);
  report("cuFileWrite", out, 0, 150000, r, dev);

  /* On a stream: done when the stream is synchronized. */
  size_t size = 65536;
  off_t off = 1000, boff = 8192;
  ssize_t bytes = 0;
  CUstream stream = (CUstream)(uintptr_t)0x5000;
  check(CALL(cuFileReadAsync)(fh, dev, &size, &off, &boff, &bytes, stream), "cuFileReadAsync");
  CALL(cuStreamSynchronize)(stream);
  report("cufile_async_read", fd, off, size, bytes, dev + boff);
  printf("STREAM cufile_async_read %llu\n", (unsigned long long)(uintptr_t)stream);
  size_t wsize = 4096;
  off_t woff = 150000, wboff = 0;
  ssize_t wbytes = 0;
  CUstream wstream = (CUstream)(uintptr_t)0x6000;
  check(CALL(cuFileWriteAsync)(oh, dev, &wsize, &woff, &wboff, &wbytes, wstream),
        "cuFileWriteAsync");
  CALL(cuStreamSynchronize)(wstream);
  report("cufile_async_write", out, woff, wsize, wbytes, dev);
  printf("STREAM cufile_async_write %llu\n", (unsigned long long)(uintptr_t)wstream);

  /* A batch of three reads, the last cut short by the end of the file. */
  CUfileBatchHandle_t batch;
  check(CALL(cuFileBatchIOSetUp)(&batch, 4), "cuFileBatchIOSetUp");
  CUfileIOParams_t io[3];
  memset(io, 0, sizeof io);
  const off_t offsets[3] = {0, 8192, 299000};
  for (int i = 0; i < 3; ++i) {
    io[i].mode = 1;
    io[i].u.batch.devPtr_base = dev;
    io[i].u.batch.devPtr_offset = 4096 * i;
    io[i].u.batch.file_offset = offsets[i];
    io[i].u.batch.size = 4096;
    io[i].fh = fh;
    io[i].opcode = 0;
    io[i].cookie = (void*)(uintptr_t)(i + 1);
  }
  check(CALL(cuFileBatchIOSubmit)(batch, 3, io, 0), "cuFileBatchIOSubmit");
  CUfileIOEvents_t ev[4];
  unsigned n = 4;
  struct timespec timeout = {1, 0};
  check(CALL(cuFileBatchIOGetStatus)(batch, 3, &n, ev, &timeout), "cuFileBatchIOGetStatus");
  for (unsigned i = 0; i < n; ++i) {
    int k = (int)(uintptr_t)ev[i].cookie - 1;
    report("cufile_batch_read", fd, offsets[k], 4096, (long long)ev[i].ret, dev + 4096 * k);
  }
  check(CALL(cuFileBatchIOCancel)(batch), "cuFileBatchIOCancel");
  CALL(cuFileBatchIODestroy)(batch);

  check(CALL(cuFileBufDeregister)(dev), "cuFileBufDeregister");
  CALL(cuFileHandleDeregister)(fh);
  CALL(cuFileHandleDeregister)(oh);
  close(fd);
  close(out);
  check(CALL(cuFileDriverClose_v2)(), "cuFileDriverClose");
  free(dev);
  return 0;
}
