// Where an MPI shared-pointer or ordered call's data really went.
//
// The tracer never asks MPI for the shared file pointer: asking takes MPI's
// lock on it, reads a hidden file (ROMIO's .NAME.shfp.*, Open MPI's
// lockedfile), fails on MPI_MODE_SEQUENTIAL files and is stale as soon as
// another rank moves the pointer. Instead, while such a call runs on a
// thread, the MPI wrapper arms this thread-local watch with the call's file
// and the address of the user's buffer; the POSIX calls the MPI library
// makes underneath (recorded as nested) look at it, and the one that moves
// the buffer's first byte between memory and the data file says at which
// offset it did. That offset is where the call's data starts, exactly; when
// no nested call moved the first byte directly (collective buffering,
// packing into a temporary buffer, asynchronous I/O), the offset stays
// unknown (docs/MPI.md).
#ifndef DLPROF_LIB_INTERCEPT_MPI_WATCH_H_
#define DLPROF_LIB_INTERCEPT_MPI_WATCH_H_

#include <sys/uio.h>

#include <cstdint>

#include "dlprof/format.h"

namespace dlprof::intercept {

struct MpiWatch {
  uint32_t file;      // the MPI call's data file; 0 (FdTable::kUnknown): not armed
  const void* first;  // the user's buffer: where the call's first byte lies
  int64_t offset;     // where a nested call moved that byte; -1 until one did
};

// Initial-exec, like the runtime's own thread state: the POSIX wrappers
// look at it on every read and write, with no lookup and no allocation.
inline thread_local MpiWatch tls_mpi_watch __attribute__((tls_model("initial-exec"))) = {0, nullptr,
                                                                                         -1};

// Called by the POSIX read/write describers after they filled `e`: `buf` is
// where the call's data lay in memory, `r` what the call returned.
__attribute__((always_inline)) inline void NoteMpiData(const Event& e, const void* buf, int64_t r) {
  MpiWatch& w = tls_mpi_watch;
  if (__builtin_expect(w.file == 0, 1)) return;
  if (e.file == w.file && buf == w.first && r >= 0 && w.offset < 0 && e.offset >= 0) {
    w.offset = e.offset;
  }
}
// The memory of a vectored call's first byte (empty entries move nothing).
inline const void* FirstIovBase(const struct iovec* iov, int count) {
  for (int i = 0; iov != nullptr && i < count; ++i) {
    if (iov[i].iov_len != 0) return iov[i].iov_base;
  }
  return nullptr;
}

}  // namespace dlprof::intercept

#endif  // DLPROF_LIB_INTERCEPT_MPI_WATCH_H_
