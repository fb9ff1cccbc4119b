// Reading memory the program points a request at, before the kernel has
// checked the pointer, without crashing the program when it is bad.
//
// An io_uring entry's path, iovec array or open_how, and a Linux AIO
// iocb's iovec array, are the program's pointers: the kernel answers a bad
// one with EFAULT (the program may be probing, or wrong and handling the
// error), where a plain read by the tracer would end it with SIGSEGV.
// process_vm_readv on the process itself copies what is readable and fails,
// with no signal, on what is not. It costs two system calls (getpid and the
// copy): used only for what is rare and already costly to describe
// (vectored requests, paths), never for a plain read or write's fields.
// Where the system refuses it (a seccomp filter), nothing is read: the
// caller records the size or path as unknown, and it is said once.
#ifndef DLPROF_LIB_INTERCEPT_PROGRAM_MEMORY_H_
#define DLPROF_LIB_INTERCEPT_PROGRAM_MEMORY_H_

#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "lib/core/raw_log.h"

namespace dlprof::intercept {

// Copies the program's memory at `remote` (n pieces) into `local` (as
// many bytes): the bytes copied, from the first, up to the first that
// cannot be read; -1 when the system refuses the copy (said once). errno is
// left as it was.
inline long ReadProgram(const struct iovec* local, size_t nlocal, const struct iovec* remote,
                        size_t nremote) {
  const int saved = errno;
  const long got = syscall(SYS_process_vm_readv, syscall(SYS_getpid), local, nlocal, remote,
                           nremote, 0UL);
  const bool refused = got < 0 && (errno == ENOSYS || errno == EPERM);
  errno = saved;
  if (refused) {
    static std::atomic<bool> noted{false};
    if (!noted.exchange(true, std::memory_order_relaxed)) {
      core::RawLog(
          "process_vm_readv is refused: the paths and iovec arrays of asynchronous requests "
          "are not read (their sizes and files unknown)");
    }
    return -1;
  }
  return got < 0 ? 0 : got;
}

// Copies `len` bytes at the program's `from` into `to`; false when any of
// them cannot be read (errno is left as it was).
inline bool CopyFromProgram(void* to, const void* from, size_t len) {
  if (len == 0) return true;
  if (from == nullptr) return false;
  struct iovec local = {to, len};
  struct iovec remote = {const_cast<void*>(from), len};
  return ReadProgram(&local, 1, &remote, 1) == static_cast<long>(len);
}

// Copies the NUL-terminated string at the program's `from` into `to` (of
// `cap` bytes); false when it cannot be read or does not end within them.
// Read a page at a time: the string may end just before an unmapped page.
inline bool CopyStringFromProgram(char* to, const char* from, size_t cap) {
  constexpr uintptr_t kPage = 4096;
  size_t done = 0;
  while (done < cap) {
    const uintptr_t at = reinterpret_cast<uintptr_t>(from) + done;
    size_t chunk = kPage - (at & (kPage - 1));
    if (chunk > cap - done) chunk = cap - done;
    if (!CopyFromProgram(to + done, from + done, chunk)) return false;
    if (memchr(to + done, '\0', chunk) != nullptr) return true;
    done += chunk;
  }
  return false;
}

// The bytes an iovec array of the program's asks for; false when the array
// cannot be read (or holds more than IOV_MAX entries: the kernel refuses it).
// (Copied 64 entries at a time: a kilobyte of the calling thread's stack.)
inline bool ProgramIovBytes(const void* iov, int64_t count, uint64_t* bytes) {
  constexpr int64_t kIovMax = 1024, kBatch = 64;
  *bytes = 0;
  if (count <= 0) return true;
  if (count > kIovMax) return false;
  const auto* from = static_cast<const struct iovec*>(iov);
  struct iovec copy[kBatch];
  for (int64_t done = 0; done < count; done += kBatch) {
    const int64_t n = count - done < kBatch ? count - done : kBatch;
    if (!CopyFromProgram(copy, from + done, sizeof(struct iovec) * static_cast<size_t>(n))) {
      return false;
    }
    for (int64_t i = 0; i < n; ++i) *bytes += copy[i].iov_len;
  }
  return true;
}

}  // namespace dlprof::intercept

#endif  // DLPROF_LIB_INTERCEPT_PROGRAM_MEMORY_H_
