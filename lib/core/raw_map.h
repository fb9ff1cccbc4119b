// The tracer's own memory maps, made by the system call itself. The C
// library's mmap and munmap are interposed (lib/intercept/posix_fd.cc): a
// map of ours made while a thread fills an event -- the rings sidecar's
// region for a thread's first event, or the ring it drains when full --
// would go through the interposer with the thread's window open
// (lib/intercept/wrapper.h), be taken for a signal handler's call and be
// recorded as the program's, on whatever file the fd table last held at
// our descriptor's number (a stress run: two mmaps of a file the program
// only pread, its descriptor just closed by another thread). Through
// syscall(), which passes such numbers straight on, they reach no figure.
#ifndef DLPROF_LIB_CORE_RAW_MAP_H_
#define DLPROF_LIB_CORE_RAW_MAP_H_

#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstddef>

namespace dlprof::core {

// As mmap(2): MAP_FAILED (with errno) on failure.
inline void* RawMmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  return reinterpret_cast<void*>(syscall(SYS_mmap, addr, len, prot, flags, fd, off));
}

inline int RawMunmap(void* addr, size_t len) {
  return static_cast<int>(syscall(SYS_munmap, addr, len));
}

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_RAW_MAP_H_
