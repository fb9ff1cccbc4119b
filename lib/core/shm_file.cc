// The tracer's own named shared memory files (shm_file.h).
#include "lib/core/shm_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "lib/core/own_fd.h"
#include "lib/core/proc_dir.h"
#include "lib/core/raw_log.h"
#include "lib/core/raw_map.h"

namespace dlprof::core {
namespace {

// This process's pid namespace's inode ("pid:[4026531836]"), or 0 where
// /proc does not say: pids are compared within one namespace only.
unsigned long long PidNamespace() {
  char link[64];
  const long n = syscall(SYS_readlinkat, AT_FDCWD, "/proc/self/ns/pid", link, sizeof(link) - 1);
  if (n <= 0) return 0;
  link[n] = '\0';
  const char* open = strchr(link, '[');
  return open == nullptr ? 0 : strtoull(open + 1, nullptr, 10);
}

// "dlprof-<kind>-<namespace>-", the start of every name of `kind` made in
// this pid namespace; false where it does not fit.
bool NamePrefix(const char* kind, char* out, size_t bytes) {
  const int n = snprintf(out, bytes, "dlprof-%s-%llu-", kind, PidNamespace());
  return n > 0 && static_cast<size_t>(n) < bytes;
}

bool Alive(long pid) {
  return syscall(SYS_kill, pid, 0) == 0 || errno == EPERM;
}

void* MapFd(int fd, size_t bytes) {
  void* p = RawMmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : p;
}

}  // namespace

ShmFile CreateShmFile(const char* kind, size_t bytes, const char* dir) {
  ErrnoSaver errno_saver;
  ShmFile out;
  char prefix[64];
  if (!NamePrefix(kind, prefix, sizeof(prefix))) return out;
  SweepShmFiles(kind, dir);
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &now);
  const int n = snprintf(out.path, sizeof(out.path), "%s/%s%ld-%llx", dir, prefix,
                         static_cast<long>(syscall(SYS_getpid)),
                         static_cast<unsigned long long>(now.tv_sec) * 1000000000ull +
                             static_cast<unsigned long long>(now.tv_nsec));
  if (n <= 0 || static_cast<size_t>(n) >= sizeof(out.path)) {
    out.path[0] = '\0';
    return out;
  }
  OwnFdScope scope;
  const int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, out.path,
                                          O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                                          0600));
  if (fd < 0) {
    out.path[0] = '\0';
    return out;
  }
  if (AllocateOwnFile(fd, 0, bytes)) out.map = MapFd(fd, bytes);
  syscall(SYS_close, fd);
  if (out.map == nullptr) {
    syscall(SYS_unlinkat, AT_FDCWD, out.path, 0);
    out.path[0] = '\0';
  }
  return out;
}

void* OpenShmFile(const char* path, size_t bytes) {
  ErrnoSaver errno_saver;
  OwnFdScope scope;
  const int fd = static_cast<int>(
      syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_NOFOLLOW | O_CLOEXEC));
  if (fd < 0) return nullptr;
  struct stat st {};
  void* map = nullptr;
  if (syscall(SYS_fstat, fd, &st) == 0 && S_ISREG(st.st_mode) &&
      st.st_uid == static_cast<uid_t>(syscall(SYS_geteuid)) &&
      static_cast<uint64_t>(st.st_size) == bytes) {
    map = MapFd(fd, bytes);
  }
  syscall(SYS_close, fd);
  return map;
}

void RemoveShmFile(const char* path) {
  ErrnoSaver errno_saver;
  if (path != nullptr && *path) syscall(SYS_unlinkat, AT_FDCWD, path, 0);
}

int SweepShmFiles(const char* kind, const char* dir) {
  ErrnoSaver errno_saver;
  char prefix[64];
  if (!NamePrefix(kind, prefix, sizeof(prefix)) || PidNamespace() == 0) return 0;
  const size_t prefix_len = strlen(prefix);
  OwnFdScope scope;
  int removed = 0;
  ForEachEntry(dir, [&](const char* name, int dir_fd) {
    if (strncmp(name, prefix, prefix_len) != 0) return;
    char* end = nullptr;
    const long pid = strtol(name + prefix_len, &end, 10);
    if (end == name + prefix_len || *end != '-' || pid <= 0 || Alive(pid)) return;
    if (syscall(SYS_unlinkat, dir_fd, name, 0) == 0) ++removed;
  });
  return removed;
}

}  // namespace dlprof::core
