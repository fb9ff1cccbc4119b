// read and write families and lseek. Each describer also tells the MPI
// watch where its data went (mpi_watch.h): a no-op outside MPI calls.
#include <sys/uio.h>
#include <unistd.h>

#include "lib/intercept/describe.h"
#include "lib/intercept/glibc_decls.h"
#include "lib/intercept/mpi_watch.h"
#include "lib/intercept/wrapper.h"

using dlprof::Event;
using dlprof::EventKind;
using namespace dlprof::intercept;

#define DLPROF_STREAM_IO(fn, kind, buf_type)                    \
  DLPROF_REAL(fn)                                               \
  extern "C" ssize_t fn(int fd, buf_type buf, size_t n) {       \
    return Traced<ssize_t>(                                     \
        EventKind::kind, [&] { return real_##fn(fd, buf, n); }, \
        NoMemoryRead{[&](Event& e, ssize_t r, int) {            \
          if (!DescribeStreamIo(e, fd, n, r)) return false;     \
          NoteMpiData(e, buf, r);                               \
          return true;                                          \
        }});                                                    \
  }

#define DLPROF_POSITIONAL_IO(fn, kind, buf_type, off_type)                             \
  DLPROF_REAL(fn)                                                                      \
  extern "C" ssize_t fn(int fd, buf_type buf, size_t n, off_type off) {                \
    return Traced<ssize_t>(                                                            \
        EventKind::kind, [&] { return real_##fn(fd, buf, n, off); },                   \
        NoMemoryRead{[&](Event& e, ssize_t r, int) {                                   \
          if (!DescribePositionalIo<IsWriteKind(EventKind::kind)>(e, fd, n, off, r)) { \
            return false;                                                              \
          }                                                                            \
          NoteMpiData(e, buf, r);                                                      \
          return true;                                                                 \
        }});                                                                           \
  }

#define DLPROF_STREAM_IOV(fn, kind)                                            \
  DLPROF_REAL(fn)                                                              \
  extern "C" ssize_t fn(int fd, const struct iovec* iov, int count) {          \
    return Traced<ssize_t>(                                                    \
        EventKind::kind, [&] { return real_##fn(fd, iov, count); },            \
        [&](Event& e, ssize_t r, int) {                                        \
          if (!DescribeStreamIo(e, fd, IovBytes(iov, count), r)) return false; \
          NoteMpiData(e, FirstIovBase(iov, count), r);                         \
          return true;                                                         \
        });                                                                    \
  }

#define DLPROF_POSITIONAL_IOV(fn, kind, off_type)                                              \
  DLPROF_REAL(fn)                                                                              \
  extern "C" ssize_t fn(int fd, const struct iovec* iov, int count, off_type off) {            \
    return Traced<ssize_t>(                                                                    \
        EventKind::kind, [&] { return real_##fn(fd, iov, count, off); },                       \
        [&](Event& e, ssize_t r, int) {                                                        \
          if (!DescribePositionalIo<IsWriteKind(EventKind::kind)>(e, fd, IovBytes(iov, count), \
                                                                 off, r)) {                    \
            return false;                                                                      \
          }                                                                                    \
          NoteMpiData(e, FirstIovBase(iov, count), r);                                         \
          return true;                                                                         \
        });                                                                                    \
  }

#define DLPROF_POSITIONAL_IOV2(fn, kind, off_type)                                             \
  DLPROF_REAL(fn)                                                                              \
  extern "C" ssize_t fn(int fd, const struct iovec* iov, int count, off_type off, int flags) { \
    return Traced<ssize_t>(                                                                    \
        EventKind::kind, [&] { return real_##fn(fd, iov, count, off, flags); },                \
        [&](Event& e, ssize_t r, int) {                                                        \
          e.aux = static_cast<uint32_t>(flags);                                                \
          if (!DescribeV2Io<IsWriteKind(EventKind::kind)>(e, fd, IovBytes(iov, count), off,    \
                                                          flags, r)) {                         \
            return false;                                                                      \
          }                                                                                    \
          NoteMpiData(e, FirstIovBase(iov, count), r);                                         \
          return true;                                                                         \
        });                                                                                    \
  }

DLPROF_STREAM_IO(read, Read, void*)
DLPROF_STREAM_IO(write, Write, const void*)
DLPROF_POSITIONAL_IO(pread, Pread, void*, off_t)
DLPROF_POSITIONAL_IO(pread64, Pread64, void*, off64_t)
DLPROF_POSITIONAL_IO(pwrite, Pwrite, const void*, off_t)
DLPROF_POSITIONAL_IO(pwrite64, Pwrite64, const void*, off64_t)
DLPROF_STREAM_IOV(readv, Readv)
DLPROF_STREAM_IOV(writev, Writev)
DLPROF_POSITIONAL_IOV(preadv, Preadv, off_t)
DLPROF_POSITIONAL_IOV(pwritev, Pwritev, off_t)
DLPROF_POSITIONAL_IOV(preadv64, Preadv64, off64_t)
DLPROF_POSITIONAL_IOV(pwritev64, Pwritev64, off64_t)
DLPROF_POSITIONAL_IOV2(preadv2, Preadv2, off_t)
DLPROF_POSITIONAL_IOV2(pwritev2, Pwritev2, off_t)
DLPROF_POSITIONAL_IOV2(preadv64v2, Preadv64v2, off64_t)
DLPROF_POSITIONAL_IOV2(pwritev64v2, Pwritev64v2, off64_t)

// Fortified forms: the extra argument is the destination buffer's size.
DLPROF_REAL(__read_chk)
extern "C" ssize_t __read_chk(int fd, void* buf, size_t n, size_t buflen) {
  return Traced<ssize_t>(
      EventKind::ReadChk, [&] { return real___read_chk(fd, buf, n, buflen); },
      [&](Event& e, ssize_t r, int) {
        if (!DescribeStreamIo(e, fd, n, r)) return false;
        NoteMpiData(e, buf, r);
        return true;
      });
}

#define DLPROF_PREAD_CHK(fn, kind, off_type)                                        \
  DLPROF_REAL(fn)                                                                   \
  extern "C" ssize_t fn(int fd, void* buf, size_t n, off_type off, size_t buflen) { \
    return Traced<ssize_t>(                                                         \
        EventKind::kind, [&] { return real_##fn(fd, buf, n, off, buflen); },        \
        [&](Event& e, ssize_t r, int) {                                             \
          if (!DescribePositionalIo(e, fd, n, off, r)) return false;                \
          NoteMpiData(e, buf, r);                                                   \
          return true;                                                              \
        });                                                                         \
  }
DLPROF_PREAD_CHK(__pread_chk, PreadChk, off_t)
DLPROF_PREAD_CHK(__pread64_chk, Pread64Chk, off64_t)

#define DLPROF_LSEEK(fn, kind, off_type)                             \
  DLPROF_REAL(fn)                                                    \
  extern "C" off_type fn(int fd, off_type off, int whence) {         \
    return Traced<off_type>(                                         \
        EventKind::kind, [&] { return real_##fn(fd, off, whence); }, \
        [&](Event& e, off_type r, int) {                             \
          if (r >= 0) Rt().fds().SetPosition(fd, r);                 \
          if (!DescribeFd(e, fd)) return false;                      \
          e.offset = r;                                              \
          e.aux = static_cast<uint32_t>(whence);                     \
          return true;                                               \
        });                                                          \
  }
DLPROF_LSEEK(lseek, Lseek, off_t)
DLPROF_LSEEK(lseek64, Lseek64, off64_t)
