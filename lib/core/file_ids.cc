#include "lib/core/file_ids.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "lib/core/runtime.h"

namespace dlprof::core {
namespace {

// readlink through the raw system call: the tracer never traces itself.
size_t ReadFdLink(int fd, char* out, size_t cap) {
  char link[64];
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  long n = syscall(SYS_readlink, link, out, cap - 1);
  if (n <= 0) return 0;
  out[n] = '\0';
  return static_cast<size_t>(n);
}

// A memfd (memfd_create) is memory, as a pipe is, no file on any storage,
// though its link reads as a path at the root: "/memfd:NAME (deleted)". Its
// calls were recorded, and its reads summed up as the data set's.
bool IsMemfdLink(const char* target, size_t len) {
  static constexpr char kMemfd[] = "/memfd:";
  return len >= sizeof(kMemfd) - 1 && std::memcmp(target, kMemfd, sizeof(kMemfd) - 1) == 0;
}

uint32_t InternIfTraced(Runtime& rt, const char* abs, size_t len) {
  if (!rt.filter().Traced(abs, len)) return FdTable::kIgnored;
  uint32_t id = rt.strings().Intern(abs, len);
  return id == 0 ? FdTable::kLost : id;
}

}  // namespace

void CountLostEvent(Runtime& rt) {
  ThreadContext& t = CurrentThread();
  ThreadBuffer* b = t.buffer != nullptr ? t.buffer : rt.AttachThread(t);
  // The owner's counter, which the flusher reports as dropped.
  if (b != nullptr) b->dropped.store(b->dropped.load(std::memory_order_relaxed) + 1,
                                     std::memory_order_relaxed);
}

uint32_t ResolvePath(Runtime& rt, int dirfd, const char* path) {
  // "" names no file (ENOENT), not the directory it would be relative to: a
  // failed open("") or openat(fd, "") was recorded on the working
  // directory's or fd's file. (AT_EMPTY_PATH: DescribePath.)
  if (path == nullptr || path[0] == '\0') return FdTable::kIgnored;
  char base[PATH_MAX];
  char abs[PATH_MAX];
  const char* base_ptr = nullptr;
  if (path[0] != '/') {
    if (dirfd == AT_FDCWD) {
      if (syscall(SYS_getcwd, base, sizeof(base)) <= 0) return FdTable::kIgnored;
    } else {
      size_t len = 0;
      const char* known = rt.strings().Lookup(rt.fds().File(dirfd), &len);
      if (known && len < sizeof(base)) {
        std::memcpy(base, known, len);
        base[len] = '\0';
      } else if (ReadFdLink(dirfd, base, sizeof(base)) == 0) {
        return FdTable::kIgnored;
      }
    }
    base_ptr = base;
  }
  size_t len = NormalizePath(base_ptr, path, abs, sizeof(abs));
  if (len == 0) return FdTable::kIgnored;
  return InternIfTraced(rt, abs, len);
}

uint32_t IdentifyFd(Runtime& rt, int fd) {
  // A vfork child shares its parent's memory, not its descriptors: what it
  // opened itself (unseen: open and close step aside there) went into the
  // parent's table, which then named the parent's next fd of that number
  // (a pipe's reads recorded as the child's file's; a mkstemp'd file's
  // writes lost as /dev/null's). Only on first sight: the getpid stays off
  // the path of known fds.
  if (!rt.InOwnProcess()) return FdTable::kIgnored;
  char target[PATH_MAX];
  size_t len = ReadFdLink(fd, target, sizeof(target));
  if (len == 0) return FdTable::kIgnored;  // closed or unknowable: retry later
  uint32_t file = IsMemfdLink(target, len) ? FdTable::kIgnored : InternIfTraced(rt, target, len);
  int64_t pos = syscall(SYS_lseek, fd, 0, SEEK_CUR);
  long flags = syscall(SYS_fcntl, fd, F_GETFL);
  bool append = flags >= 0 && (flags & O_APPEND);
  rt.fds().Set(fd, file, pos < 0 || append ? FdTable::kNoPosition : pos, append);
  return file;
}


}  // namespace dlprof::core
