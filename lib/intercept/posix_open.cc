// open family and close.
#include <fcntl.h>
#include <unistd.h>

#include <cstdarg>

#include "lib/core/own_fd.h"
#include "lib/intercept/describe.h"
#include "lib/intercept/glibc_decls.h"
#include "lib/intercept/uring_ring.h"
#include "lib/intercept/wrapper.h"

using dlprof::Event;
using dlprof::EventKind;
using dlprof::core::WhenNoLowOwnFd;
using dlprof::intercept::Traced;
using namespace dlprof::intercept;

// The mode argument exists only when the flags ask for one.
#define DLPROF_READ_MODE(flags, mode)   \
  mode_t mode = 0;                      \
  if (OpenNeedsMode(flags)) {           \
    va_list ap;                         \
    va_start(ap, flags);                \
    mode = va_arg(ap, mode_t);          \
    va_end(ap);                         \
  }

#define DLPROF_OPEN(fn, kind)                                                       \
  DLPROF_REAL(fn)                                                                   \
  extern "C" int fn(const char* path, int flags, ...) {                             \
    DLPROF_READ_MODE(flags, mode)                                                   \
    if (InVforkChild()) return real_##fn(path, flags, mode);                        \
    return Traced<int>(                                                             \
        EventKind::kind,                                                            \
        [&] { return WhenNoLowOwnFd([&] { return real_##fn(path, flags, mode); }); }, \
        [&](Event& e, int fd, int) { return DescribeOpen(e, AT_FDCWD, path, flags, fd); }); \
  }

#define DLPROF_OPENAT(fn, kind)                                                     \
  DLPROF_REAL(fn)                                                                   \
  extern "C" int fn(int dirfd, const char* path, int flags, ...) {                  \
    DLPROF_READ_MODE(flags, mode)                                                   \
    if (InVforkChild()) return real_##fn(dirfd, path, flags, mode);                 \
    return Traced<int>(                                                             \
        EventKind::kind,                                                            \
        [&] { return WhenNoLowOwnFd([&] { return real_##fn(dirfd, path, flags, mode); }); }, \
        [&](Event& e, int fd, int) { return DescribeOpen(e, dirfd, path, flags, fd); }); \
  }

#define DLPROF_CREAT(fn, kind)                                                      \
  DLPROF_REAL(fn)                                                                   \
  extern "C" int fn(const char* path, mode_t mode) {                                \
    constexpr int kFlags = O_CREAT | O_WRONLY | O_TRUNC;                            \
    if (InVforkChild()) return real_##fn(path, mode);                               \
    return Traced<int>(                                                             \
        EventKind::kind,                                                            \
        [&] { return WhenNoLowOwnFd([&] { return real_##fn(path, mode); }); },      \
        [&](Event& e, int fd, int) { return DescribeOpen(e, AT_FDCWD, path, kFlags, fd); }); \
  }

#define DLPROF_OPEN_CHK(fn, kind)                                                   \
  DLPROF_REAL(fn)                                                                   \
  extern "C" int fn(const char* path, int flags) {                                  \
    if (InVforkChild()) return real_##fn(path, flags);                              \
    return Traced<int>(                                                             \
        EventKind::kind,                                                            \
        [&] { return WhenNoLowOwnFd([&] { return real_##fn(path, flags); }); },     \
        [&](Event& e, int fd, int) { return DescribeOpen(e, AT_FDCWD, path, flags, fd); }); \
  }

#define DLPROF_OPENAT_CHK(fn, kind)                                                 \
  DLPROF_REAL(fn)                                                                   \
  extern "C" int fn(int dirfd, const char* path, int flags) {                       \
    if (InVforkChild()) return real_##fn(dirfd, path, flags);                       \
    return Traced<int>(                                                             \
        EventKind::kind,                                                            \
        [&] { return WhenNoLowOwnFd([&] { return real_##fn(dirfd, path, flags); }); }, \
        [&](Event& e, int fd, int) { return DescribeOpen(e, dirfd, path, flags, fd); }); \
  }

DLPROF_OPEN(open, Open)
DLPROF_OPEN(open64, Open64)
DLPROF_OPENAT(openat, Openat)
DLPROF_OPENAT(openat64, Openat64)
DLPROF_CREAT(creat, Creat)
DLPROF_CREAT(creat64, Creat64)
DLPROF_OPEN_CHK(__open_2, Open2Chk)
DLPROF_OPEN_CHK(__open64_2, Open64_2Chk)
DLPROF_OPENAT_CHK(__openat_2, Openat2Chk)
DLPROF_OPENAT_CHK(__openat64_2, Openat64_2Chk)

DLPROF_REAL(close)
extern "C" int close(int fd) {
  if (InVforkChild()) return real_close(fd);
  dlprof::intercept::uring::BeforeClose(fd);  // a followed io_uring's fd: let go first
  const uint32_t file = ForgetBeforeClose(fd);
  return Traced<int>(
      EventKind::Close,
      [&] { return CloseOfNumber(file, [&] { return real_close(fd); }); },
      [&](Event& e, int, int) { return DescribeClose(e, fd, file); });
}
