// Metadata calls: stat family, access, unlink, rename, mkdir, truncate,
// allocation hints, sync, and directory streams.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "lib/intercept/describe.h"
#include "lib/intercept/glibc_decls.h"
#include "lib/intercept/wrapper.h"

using dlprof::Event;
using dlprof::EventKind;
using namespace dlprof::intercept;

// fn(path, rest...) -> int
#define DLPROF_PATH_CALL(fn, kind, params, args)                                   \
  DLPROF_REAL(fn)                                                                  \
  extern "C" int fn(const char* path DLPROF_UNPAREN params) {                      \
    return Traced<int>(                                                            \
        EventKind::kind, [&] { return real_##fn(path DLPROF_UNPAREN args); },      \
        [&](Event& e, int, int) { return DescribePath(e, AT_FDCWD, path); });      \
  }
// fn(dirfd, path, rest...) -> int; `at_flags`: the argument holding its AT_
// flags (AT_EMPTY_PATH), or 0.
#define DLPROF_PATHAT_CALL(fn, kind, params, args, at_flags)                            \
  DLPROF_REAL(fn)                                                                       \
  extern "C" int fn(int dirfd, const char* path DLPROF_UNPAREN params) {                \
    return Traced<int>(                                                                 \
        EventKind::kind, [&] { return real_##fn(dirfd, path DLPROF_UNPAREN args); },    \
        [&](Event& e, int, int) { return DescribePath(e, dirfd, path, at_flags); });    \
  }
// fn(fd, rest...) -> int
#define DLPROF_FD_CALL(fn, kind, params, args)                                  \
  DLPROF_REAL(fn)                                                               \
  extern "C" int fn(int fd DLPROF_UNPAREN params) {                             \
    return Traced<int>(                                                         \
        EventKind::kind, [&] { return real_##fn(fd DLPROF_UNPAREN args); },     \
        [&](Event& e, int, int) { return DescribeFd(e, fd); });                 \
  }
#define DLPROF_UNPAREN(...) __VA_ARGS__

DLPROF_PATH_CALL(stat, Stat, (, struct stat* b), (, b))
DLPROF_PATH_CALL(stat64, Stat64, (, struct stat64* b), (, b))
DLPROF_PATH_CALL(lstat, Lstat, (, struct stat* b), (, b))
DLPROF_PATH_CALL(lstat64, Lstat64, (, struct stat64* b), (, b))
DLPROF_FD_CALL(fstat, Fstat, (, struct stat* b), (, b))
DLPROF_FD_CALL(fstat64, Fstat64, (, struct stat64* b), (, b))
DLPROF_PATHAT_CALL(fstatat, Fstatat, (, struct stat* b, int f), (, b, f), f)
DLPROF_PATHAT_CALL(fstatat64, Fstatat64, (, struct stat64* b, int f), (, b, f), f)
DLPROF_PATHAT_CALL(statx, Statx, (, int f, unsigned m, struct statx* b), (, f, m, b), f)
DLPROF_PATH_CALL(access, Access, (, int mode), (, mode))
DLPROF_PATHAT_CALL(faccessat, Faccessat, (, int mode, int f), (, mode, f), f)
DLPROF_PATH_CALL(unlink, Unlink, (), ())
DLPROF_PATHAT_CALL(unlinkat, Unlinkat, (, int f), (, f), 0)
DLPROF_PATH_CALL(mkdir, Mkdir, (, mode_t mode), (, mode))
DLPROF_PATHAT_CALL(mkdirat, Mkdirat, (, mode_t mode), (, mode), 0)
DLPROF_PATH_CALL(rmdir, Rmdir, (), ())
DLPROF_FD_CALL(fsync, Fsync, (), ())
DLPROF_FD_CALL(fdatasync, Fdatasync, (), ())
DLPROF_FD_CALL(syncfs, Syncfs, (), ())

// sync() writes every file system's dirty data: an event of no file (a
// checkpoint's `torch.save(path); os.sync()` is settled by it).
DLPROF_REAL(sync)
extern "C" void sync(void) {
  Traced<int>(
      EventKind::Sync,
      [&] {
        real_sync();
        return 0;
      },
      [&](Event&, int, int) { return true; });
}

// The pre-2.33 glibc stat entry points, still called by older binaries;
// glibc keeps them only as compat symbols, hence the explicit version.
#define DLPROF_XSTAT(fn, kind, stat_type)                                             \
  DLPROF_REAL_AS(fn, decltype(&::fn), "GLIBC_2.2.5")                                  \
  extern "C" int fn(int ver, const char* path, stat_type* b) {                        \
    return Traced<int>(                                                               \
        EventKind::kind, [&] { return real_##fn(ver, path, b); },                     \
        [&](Event& e, int, int) { return DescribePath(e, AT_FDCWD, path); });         \
  }
DLPROF_XSTAT(__xstat, Xstat, struct stat)
DLPROF_XSTAT(__xstat64, Xstat64, struct stat64)
DLPROF_XSTAT(__lxstat, Lxstat, struct stat)
DLPROF_XSTAT(__lxstat64, Lxstat64, struct stat64)

#define DLPROF_FXSTAT(fn, kind, stat_type)                                 \
  DLPROF_REAL_AS(fn, decltype(&::fn), "GLIBC_2.2.5")                       \
  extern "C" int fn(int ver, int fd, stat_type* b) {                       \
    return Traced<int>(                                                    \
        EventKind::kind, [&] { return real_##fn(ver, fd, b); },            \
        [&](Event& e, int, int) { return DescribeFd(e, fd); });            \
  }
DLPROF_FXSTAT(__fxstat, Fxstat, struct stat)
DLPROF_FXSTAT(__fxstat64, Fxstat64, struct stat64)

#define DLPROF_FXSTATAT(fn, kind, stat_type)                                        \
  DLPROF_REAL_AS(fn, decltype(&::fn), "GLIBC_2.4")                                  \
  extern "C" int fn(int ver, int dirfd, const char* path, stat_type* b, int f) {    \
    return Traced<int>(                                                             \
        EventKind::kind, [&] { return real_##fn(ver, dirfd, path, b, f); },         \
        [&](Event& e, int, int) { return DescribePath(e, dirfd, path, f); });       \
  }
DLPROF_FXSTATAT(__fxstatat, Fxstatat, struct stat)
DLPROF_FXSTATAT(__fxstatat64, Fxstatat64, struct stat64)

// rename family: aux carries the new path's id.
inline bool DescribeRename(Event& e, int olddir, const char* oldpath, int newdir,
                           const char* newpath) {
  uint32_t to = dlprof::core::ResolvePath(Rt(), newdir, newpath);
  bool traced = DescribePath(e, olddir, oldpath);
  if (FdTable::Named(to)) e.aux = to;
  if (!traced && FdTable::Named(to)) {  // renamed into a traced place
    e.file = to;
    e.aux = 0;
    return true;
  }
  return traced;
}

DLPROF_REAL(rename)
extern "C" int rename(const char* from, const char* to) {
  return Traced<int>(
      EventKind::Rename, [&] { return real_rename(from, to); },
      [&](Event& e, int, int) { return DescribeRename(e, AT_FDCWD, from, AT_FDCWD, to); });
}
DLPROF_REAL(renameat)
extern "C" int renameat(int fromdir, const char* from, int todir, const char* to) {
  return Traced<int>(
      EventKind::Renameat, [&] { return real_renameat(fromdir, from, todir, to); },
      [&](Event& e, int, int) { return DescribeRename(e, fromdir, from, todir, to); });
}
DLPROF_REAL(renameat2)
extern "C" int renameat2(int fromdir, const char* from, int todir, const char* to,
                         unsigned flags) {
  return Traced<int>(
      EventKind::Renameat2, [&] { return real_renameat2(fromdir, from, todir, to, flags); },
      [&](Event& e, int, int) { return DescribeRename(e, fromdir, from, todir, to); });
}

// Size-changing calls: size is the length asked for.
#define DLPROF_TRUNCATE(fn, kind, off_type)                                 \
  DLPROF_REAL(fn)                                                           \
  extern "C" int fn(const char* path, off_type len) {                       \
    return Traced<int>(                                                     \
        EventKind::kind, [&] { return real_##fn(path, len); },              \
        [&](Event& e, int, int) {                                           \
          e.size = static_cast<uint64_t>(len);                              \
          return DescribePath(e, AT_FDCWD, path);                           \
        });                                                                 \
  }
#define DLPROF_FTRUNCATE(fn, kind, off_type)                                \
  DLPROF_REAL(fn)                                                           \
  extern "C" int fn(int fd, off_type len) {                                 \
    return Traced<int>(                                                     \
        EventKind::kind, [&] { return real_##fn(fd, len); },                \
        [&](Event& e, int, int) {                                           \
          e.size = static_cast<uint64_t>(len);                              \
          return DescribeFd(e, fd);                                         \
        });                                                                 \
  }
DLPROF_TRUNCATE(truncate, Truncate, off_t)
DLPROF_TRUNCATE(truncate64, Truncate64, off64_t)
DLPROF_FTRUNCATE(ftruncate, Ftruncate, off_t)
DLPROF_FTRUNCATE(ftruncate64, Ftruncate64, off64_t)

// fd, offset, length (+ mode/advice). posix_* return the error number
// instead of setting errno.
#define DLPROF_RANGE_CALL(fn, kind, off_type, params, args, returns_error)      \
  DLPROF_REAL(fn)                                                               \
  extern "C" int fn(int fd DLPROF_UNPAREN params) {                             \
    return Traced<int>(                                                         \
        EventKind::kind, [&] { return real_##fn(fd DLPROF_UNPAREN args); },     \
        [&](Event& e, int r, int) {                                             \
          if (returns_error) e.err = r;                                         \
          e.offset = static_cast<int64_t>(off);                                 \
          e.size = static_cast<uint64_t>(len);                                  \
          return DescribeFd(e, fd);                                             \
        });                                                                     \
  }
DLPROF_RANGE_CALL(fallocate, Fallocate, off_t, (, int mode, off_t off, off_t len),
                  (, mode, off, len), false)
DLPROF_RANGE_CALL(fallocate64, Fallocate64, off64_t, (, int mode, off64_t off, off64_t len),
                  (, mode, off, len), false)
DLPROF_RANGE_CALL(posix_fallocate, PosixFallocate, off_t, (, off_t off, off_t len),
                  (, off, len), true)
DLPROF_RANGE_CALL(posix_fallocate64, PosixFallocate64, off64_t, (, off64_t off, off64_t len),
                  (, off, len), true)
DLPROF_RANGE_CALL(posix_fadvise, PosixFadvise, off_t, (, off_t off, off_t len, int advice),
                  (, off, len, advice), true)
DLPROF_RANGE_CALL(posix_fadvise64, PosixFadvise64, off64_t,
                  (, off64_t off, off64_t len, int advice), (, off, len, advice), true)

// readahead(2) reads a range into the page cache and blocks until it is
// there: real I/O time that a loader spends before its reads, which then
// hit the cache. Offset and length as asked; ret 0 or -1.
DLPROF_REAL(readahead)
extern "C" ssize_t readahead(int fd, off64_t off, size_t len) {
  return Traced<ssize_t>(
      EventKind::Readahead, [&] { return real_readahead(fd, off, len); },
      [&](Event& e, ssize_t, int) {
        e.offset = static_cast<int64_t>(off);
        e.size = static_cast<uint64_t>(len);
        return DescribeFd(e, fd);
      });
}

// Directory streams: the DIR's fd carries the directory's file id.
DLPROF_REAL(opendir)
extern "C" DIR* opendir(const char* path) {
  return Traced<DIR*>(
      EventKind::Opendir, [&] { return real_opendir(path); },
      [&](Event& e, DIR* d, int) {
        int fd = d ? dirfd(d) : -1;
        bool traced = DescribeOpen(e, AT_FDCWD, path, O_RDONLY | O_DIRECTORY, fd);
        e.ret = d ? 0 : -1;
        return traced;
      });
}
DLPROF_REAL(fdopendir)
extern "C" DIR* fdopendir(int fd) {
  return Traced<DIR*>(
      EventKind::Fdopendir, [&] { return real_fdopendir(fd); },
      [&](Event& e, DIR*, int) { return DescribeFd(e, fd); });
}

// readdir returns NULL both at the end of the directory (errno untouched)
// and on error (errno set). To tell them apart it runs with errno 0 and the
// program's errno is put back unless readdir set one; the event then has
// errno 0 at the end, not whatever errno held before.
#define DLPROF_READDIR(fn, kind, entry_type)                                  \
  DLPROF_REAL(fn)                                                             \
  extern "C" entry_type* fn(DIR* d) {                                         \
    bool at_end = false;                                                      \
    return Traced<entry_type*>(                                               \
        EventKind::kind,                                                      \
        [&] {                                                                 \
          const int before = errno;                                           \
          errno = 0;                                                          \
          entry_type* r = real_##fn(d);                                       \
          at_end = r == nullptr && errno == 0;                                \
          if (errno == 0) errno = before;                                     \
          return r;                                                           \
        },                                                                    \
        [&](Event& e, entry_type*, int) {                                     \
          if (at_end) e.err = 0;                                              \
          return d && DescribeFd(e, dirfd(d));                                \
        });                                                                   \
  }
DLPROF_READDIR(readdir, Readdir, struct dirent)
DLPROF_READDIR(readdir64, Readdir64, struct dirent64)

DLPROF_REAL(closedir)
extern "C" int closedir(DIR* d) {
  const int fd = d ? dirfd(d) : -1;
  const uint32_t file = ForgetBeforeClose(fd);
  return Traced<int>(
      EventKind::Closedir, [&] { return real_closedir(d); },
      [&](Event& e, int, int) { return DescribeClose(e, fd, file); });
}
