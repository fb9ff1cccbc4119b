// The part of NVIDIA's cuFile (GPUDirect Storage) C ABI that dlprof
// interposes, declared here from the public documentation so that dlprof
// builds without the CUDA toolkit's cufile.h. Sizes and offsets are pinned
// below: they are the library's ABI (x86-64 and aarch64 Linux, LP64), the
// same from GDS 1.0 to CUDA 13.
#ifndef DLPROF_LIB_INTERCEPT_CUFILE_ABI_H_
#define DLPROF_LIB_INTERCEPT_CUFILE_ABI_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <ctime>

extern "C" {

// Returned by value, in one register: {CUfileOpError, CUresult}.
typedef struct CUfileError {
  int32_t err;     // CUfileOpError: 0 success, 5001... failures
  int32_t cu_err;  // the CUDA driver's CUresult when err is CU_FILE_CUDA_DRIVER_ERROR
} CUfileError_t;

constexpr int32_t kCuFileSuccess = 0;
constexpr int32_t kCuFileInternalError = 5030;  // CUFILEOP_BASE_ERR + 30
constexpr int kCuFileHandleTypeOpaqueFd = 1;    // CU_FILE_HANDLE_TYPE_OPAQUE_FD

typedef void* CUfileHandle_t;
typedef void* CUfileBatchHandle_t;
typedef struct CUstream_st* CUstream;

typedef struct CUfileDescr_t {
  int type;  // enum CUfileFileHandleType
  union {
    int fd;
    void* handle;
  } handle;
  const void* fs_ops;  // const CUfileFSOps_t*
} CUfileDescr_t;

// cuFileBatchIOSubmit's entries: mode CUFILE_BATCH (1), opcode CUFILE_READ
// (0) or CUFILE_WRITE (1).
typedef struct CUfileIOParams {
  int mode;
  union {
    struct {
      void* devPtr_base;
      off_t file_offset;
      off_t devPtr_offset;
      size_t size;
    } batch;
  } u;
  CUfileHandle_t fh;
  int opcode;
  void* cookie;
} CUfileIOParams_t;

// CUfileStatus_t values (a bit each).
constexpr int kCuFileWaiting = 0x1, kCuFilePending = 0x2, kCuFileInvalid = 0x4,
              kCuFileCanceled = 0x8, kCuFileComplete = 0x10, kCuFileTimeout = 0x20,
              kCuFileFailed = 0x40;
constexpr int kCuFileOpRead = 0, kCuFileOpWrite = 1;

typedef struct CUfileIOEvents {
  void* cookie;
  int status;  // CUfileStatus_t
  size_t ret;  // bytes moved, or a negative error
} CUfileIOEvents_t;

// The functions, as libcufile defines them and as dlprof's wrappers do.
CUfileError_t cuFileDriverOpen();
CUfileError_t cuFileDriverClose();
CUfileError_t cuFileDriverClose_v2();
CUfileError_t cuFileHandleRegister(CUfileHandle_t* fh, CUfileDescr_t* descr);
void cuFileHandleDeregister(CUfileHandle_t fh);
CUfileError_t cuFileBufRegister(const void* base, size_t length, int flags);
CUfileError_t cuFileBufDeregister(const void* base);
ssize_t cuFileRead(CUfileHandle_t fh, void* base, size_t size, off_t file_offset,
                   off_t buf_offset);
ssize_t cuFileWrite(CUfileHandle_t fh, const void* base, size_t size, off_t file_offset,
                    off_t buf_offset);
CUfileError_t cuFileReadAsync(CUfileHandle_t fh, void* base, size_t* size_p,
                              off_t* file_offset_p, off_t* buf_offset_p, ssize_t* bytes_p,
                              CUstream stream);
CUfileError_t cuFileWriteAsync(CUfileHandle_t fh, void* base, size_t* size_p,
                               off_t* file_offset_p, off_t* buf_offset_p, ssize_t* bytes_p,
                               CUstream stream);
CUfileError_t cuFileBatchIOSetUp(CUfileBatchHandle_t* batch, unsigned nr);
CUfileError_t cuFileBatchIOSubmit(CUfileBatchHandle_t batch, unsigned nr, CUfileIOParams_t* io,
                                  unsigned flags);
CUfileError_t cuFileBatchIOGetStatus(CUfileBatchHandle_t batch, unsigned min_nr, unsigned* nr,
                                     CUfileIOEvents_t* events, struct timespec* timeout);
CUfileError_t cuFileBatchIOCancel(CUfileBatchHandle_t batch);
void cuFileBatchIODestroy(CUfileBatchHandle_t batch);

}  // extern "C"

static_assert(sizeof(CUfileError_t) == 8);
static_assert(sizeof(CUfileDescr_t) == 24 && offsetof(CUfileDescr_t, handle) == 8 &&
              offsetof(CUfileDescr_t, fs_ops) == 16);
static_assert(sizeof(CUfileIOParams_t) == 64 && offsetof(CUfileIOParams_t, u) == 8 &&
              offsetof(CUfileIOParams_t, fh) == 40 && offsetof(CUfileIOParams_t, opcode) == 48 &&
              offsetof(CUfileIOParams_t, cookie) == 56);
static_assert(sizeof(CUfileIOEvents_t) == 24 && offsetof(CUfileIOEvents_t, ret) == 16);

namespace dlprof::intercept::gds {

// The functions interposed, in the order of the real-symbol table
// (cufile_calls.cc) and of the dlsym hook's names.
#define DLPROF_CUFILE_FUNCTIONS(X)                                                           \
  X(cuFileDriverOpen, CUfileError_t (*)())                                                   \
  X(cuFileDriverClose, CUfileError_t (*)())                                                  \
  X(cuFileDriverClose_v2, CUfileError_t (*)())                                               \
  X(cuFileHandleRegister, CUfileError_t (*)(CUfileHandle_t*, CUfileDescr_t*))                \
  X(cuFileHandleDeregister, void (*)(CUfileHandle_t))                                        \
  X(cuFileBufRegister, CUfileError_t (*)(const void*, size_t, int))                          \
  X(cuFileBufDeregister, CUfileError_t (*)(const void*))                                     \
  X(cuFileRead, ssize_t (*)(CUfileHandle_t, void*, size_t, off_t, off_t))                    \
  X(cuFileWrite, ssize_t (*)(CUfileHandle_t, const void*, size_t, off_t, off_t))             \
  X(cuFileReadAsync,                                                                         \
    CUfileError_t (*)(CUfileHandle_t, void*, size_t*, off_t*, off_t*, ssize_t*, CUstream))   \
  X(cuFileWriteAsync,                                                                        \
    CUfileError_t (*)(CUfileHandle_t, void*, size_t*, off_t*, off_t*, ssize_t*, CUstream))   \
  X(cuFileBatchIOSetUp, CUfileError_t (*)(CUfileBatchHandle_t*, unsigned))                   \
  X(cuFileBatchIOSubmit,                                                                     \
    CUfileError_t (*)(CUfileBatchHandle_t, unsigned, CUfileIOParams_t*, unsigned))           \
  X(cuFileBatchIOGetStatus, CUfileError_t (*)(CUfileBatchHandle_t, unsigned, unsigned*,      \
                                              CUfileIOEvents_t*, struct timespec*))          \
  X(cuFileBatchIOCancel, CUfileError_t (*)(CUfileBatchHandle_t))                             \
  X(cuFileBatchIODestroy, void (*)(CUfileBatchHandle_t))

enum Fn : int {
#define DLPROF_X(name, type) k_##name,
  DLPROF_CUFILE_FUNCTIONS(DLPROF_X)
#undef DLPROF_X
  kFnCount
};

// The real function's address: libcufile's, found through RTLD_NEXT when
// the program links it, or handed over by the dlsym hook when the program
// loaded it with dlopen; nullptr if neither has happened.
void* RealAddress(Fn f);

// Called by the dlsym hook (cufile_dlsym.cc) when a program looks up a
// cuFile function in a library it opened: remembers `real` and returns our
// wrapper of the same name (`real` itself for names we do not wrap).
void* OnDlsym(const char* name, void* real);

}  // namespace dlprof::intercept::gds

#endif  // DLPROF_LIB_INTERCEPT_CUFILE_ABI_H_
