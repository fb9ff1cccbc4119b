// A directory's entries listed, and a small file read, with the raw system
// calls: the tracer's own, never traced, and no allocation (a wrapper may
// list its process's threads). The numbered entries of a directory of /proc (a
// process's threads in /proc/self/task, its descriptors in /proc/self/fd),
// and the tracer's own files in /dev/shm (shm_file.h).
#ifndef DLPROF_LIB_CORE_PROC_DIR_H_
#define DLPROF_LIB_CORE_PROC_DIR_H_

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

namespace dlprof::core {

// Calls `f(name, dir_fd)` for each entry of `path` (dir_fd: the listing's
// own descriptor, which /proc/self/fd lists too). False when the directory
// cannot be opened.
template <typename F>
bool ForEachEntry(const char* path, F&& f) {
  const int dir = static_cast<int>(
      syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir < 0) return false;
  alignas(8) char buf[4096];
  for (;;) {
    const long n = syscall(SYS_getdents64, dir, buf, sizeof(buf));
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      struct Dirent64 {
        uint64_t ino;
        int64_t off;
        unsigned short reclen;
        unsigned char type;
        char name[1];
      };
      auto* d = reinterpret_cast<Dirent64*>(buf + off);
      off += d->reclen;
      f(static_cast<const char*>(d->name), dir);
    }
  }
  syscall(SYS_close, dir);
  return true;
}

// The start of a small file (of /proc, /sys) read into `buf`, NUL-ended:
// its length, or -1 when it cannot be read.
inline long ReadSmallFile(const char* path, char* buf, size_t cap) {
  const int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC));
  if (fd < 0) return -1;
  const long n = syscall(SYS_read, fd, buf, cap - 1);
  syscall(SYS_close, fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  return n;
}

// Calls `f(number, dir_fd)` for each entry of `path` whose name is a number.
template <typename F>
bool ForEachNumberedEntry(const char* path, F&& f) {
  return ForEachEntry(path, [&](const char* name, int dir) {
    if (name[0] >= '0' && name[0] <= '9') f(atoi(name), dir);
  });
}

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_PROC_DIR_H_
