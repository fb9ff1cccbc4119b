// Describers shared by the POSIX wrappers: each fills an event from a call's
// arguments and result, keeps the fd table true, and says whether the call
// concerns a traced file at all.
#ifndef DLPROF_LIB_INTERCEPT_DESCRIBE_H_
#define DLPROF_LIB_INTERCEPT_DESCRIBE_H_

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "dlprof/format.h"
#include "lib/core/fd_table.h"
#include "lib/core/file_ids.h"
#include "lib/core/own_fd.h"
#include "lib/core/runtime.h"

namespace dlprof::intercept {

using core::FdTable;

inline core::Runtime& Rt() { return core::Runtime::Get(); }

// A vfork child (Python's subprocess uses vfork) runs on its parent's memory
// and thread state until it execs: what it does must not land in the
// parent's fd table or rings. Only the calls such a child makes before exec
// ask this (open, dup2, close...), so the getpid stays off the read/write path.
inline bool InVforkChild() {
  return core::Tracing(core::CurrentThread()) && !Rt().InOwnProcess();
}

// A file an event cannot carry (unknown, excluded, or one the string table
// had no room for: that event counts as dropped). Out of line and cold, so
// that the traced call's own path stays as short as it was.
[[gnu::cold, gnu::noinline]] inline bool NotNamed(uint32_t file) {
  if (file == FdTable::kLost) core::CountLostEvent(*core::g_runtime);
  return false;
}

// The call works on `fd`: name its file. Describers run only while the
// runtime runs, so it exists: no test for it on the way.
inline bool DescribeFd(Event& e, int fd) {
  uint32_t file = core::FileOfFd(*core::g_runtime, fd);
  if (__builtin_expect(!FdTable::Named(file), 0)) return NotNamed(file);
  e.fd = fd;
  e.file = file;
  return true;
}

// Whether `fd` is first seen by the call that moved it (opened where no
// wrapper saw it: by number, inherited as `prog > file`). It is identified
// after the call, with the kernel's position, which then already counts
// the call's bytes: advancing it by them again would count them twice.
inline bool FirstSight(int fd) { return Rt().fds().File(fd) == FdTable::kUnknown; }

// read/write at the current position, which the call moves by `r` bytes.
inline bool DescribeStreamIo(Event& e, int fd, uint64_t size, int64_t r) {
  FdTable& fds = Rt().fds();
  const bool first_sight = FirstSight(fd);
  if (!DescribeFd(e, fd)) return false;
  e.size = size;
  if (fds.KernelPosition(fd)) {
    // O_APPEND writes land at the end, and a position shared with a dup'ed
    // fd moves under both: only the kernel knows where the call started. A
    // call that failed moved nothing: it started where the position is (it
    // was recorded at @0, from -1 - -1).
    const int64_t end = syscall(SYS_lseek, fd, 0, SEEK_CUR);
    const int64_t moved = r > 0 ? r : 0;
    e.offset = end >= moved ? end - moved : -1;
  } else if (first_sight) {
    const int64_t end = fds.Position(fd);
    const int64_t moved = r > 0 ? r : 0;
    e.offset = end >= moved ? end - moved : -1;
  } else {
    e.offset = fds.Advance(fd, r > 0 ? r : 0);
  }
  return true;
}

// Known when the wrapper is compiled: a read's describer pays nothing for
// what only writes need.
constexpr bool IsWriteKind(EventKind kind) {
  return kEventKinds.info[static_cast<int>(kind)].op_class == OpClass::Write;
}

// Where a write of `r` bytes that appended (Linux appends a pwrite on an
// O_APPEND fd whatever its offset, and any write with RWF_APPEND) began:
// the file's end less the bytes, as the kernel's size says after the call.
inline int64_t AppendedAt(int fd, int64_t r) {
  struct stat st;
  if (r < 0 || syscall(SYS_fstat, fd, &st) != 0 || st.st_size < r) return -1;
  return st.st_size - r;
}

// pread/pwrite: the position is an argument and the fd's own does not move.
template <bool kWrite = false>
inline bool DescribePositionalIo(Event& e, int fd, uint64_t size, int64_t offset, int64_t r) {
  if (!DescribeFd(e, fd)) return false;
  e.size = size;
  e.offset = kWrite && Rt().fds().Append(fd) ? AppendedAt(fd, r) : offset;
  return true;
}

// preadv2/pwritev2: offset -1 means "at the current position, moving it".
// A write with RWF_APPEND lands at the end; at offset -1 the fd's position
// then moves to the end of what it wrote. One with RWF_NOAPPEND (Linux 6.9)
// at an offset lands there, also on an O_APPEND fd.
template <bool kWrite>
inline bool DescribeV2Io(Event& e, int fd, uint64_t size, int64_t offset, int flags, int64_t r) {
  constexpr int kRwfAppend = 0x10;    // RWF_APPEND (<linux/fs.h>)
  constexpr int kRwfNoAppend = 0x20;  // RWF_NOAPPEND (<linux/fs.h>; older headers lack it)
  if (kWrite && (flags & kRwfAppend) != 0) {
    if (!DescribeFd(e, fd)) return false;
    e.size = size;
    e.offset = AppendedAt(fd, r);
    if (offset == -1 && e.offset >= 0) Rt().fds().SetPosition(fd, e.offset + r);
    return true;
  }
  if (offset == -1) return DescribeStreamIo(e, fd, size, r);
  // (As a read's: at `offset`, whatever O_APPEND says.)
  if (kWrite && (flags & kRwfNoAppend) != 0) return DescribePositionalIo(e, fd, size, offset, r);
  return DescribePositionalIo<kWrite>(e, fd, size, offset, r);
}

// A call naming a path (relative to `dirfd`); an empty path means dirfd
// itself only with AT_EMPTY_PATH in the call's `at_flags`. Without it the
// call fails (ENOENT) naming no file: it was recorded on dirfd's, and an
// empty path resolves to none (ResolvePath).
inline bool DescribePath(Event& e, int dirfd, const char* path, int at_flags = 0) {
  if (path != nullptr && path[0] == '\0' && (at_flags & AT_EMPTY_PATH) != 0) {
    return DescribeFd(e, dirfd);
  }
  uint32_t file = core::ResolvePath(Rt(), dirfd, path);
  if (__builtin_expect(!FdTable::Named(file), 0)) return NotNamed(file);
  e.file = file;
  return true;
}

// open family: the new fd refers to the file at position 0.
inline bool DescribeOpen(Event& e, int dirfd, const char* path, int flags, int fd) {
  uint32_t file = core::ResolvePath(Rt(), dirfd, path);
  if (fd >= 0) {
    bool append = (flags & O_APPEND) != 0;
    Rt().fds().Set(fd, file, append ? FdTable::kNoPosition : 0, append);
  }
  if (__builtin_expect(!FdTable::Named(file), 0)) return NotNamed(file);
  e.file = file;
  e.fd = fd;
  e.aux = static_cast<uint32_t>(flags);
  return true;
}

// close, fclose, closedir, before the call: what `fd` names, which the fd
// table forgets at once. Before the call, not after: the kernel frees the
// number inside it, and another thread's pipe(), socket() or open() may get
// it at once; while the entry stayed, that thread's reads and writes on it
// were recorded as the closed file's. Linux frees the fd even when close
// fails (EINTR, EIO). On EBADF nothing was open under the number, so there
// is nothing to put back; putting the old entry back could itself race (it
// would overwrite the entry of an open that got the number meanwhile).
inline uint32_t ForgetBeforeClose(int fd) {
  FdTable& fds = Rt().fds();
  const uint32_t file = fds.File(fd);
  fds.Clear(fd);
  return file;
}

// A close of a number the fd table does not know (never opened through a
// traced call, or not open at all) may be of the tracer's own descriptor,
// open for a moment to write the trace: a daemon's close() loop over every
// number from 3 to its limit closed it under the write, and the one made
// again through a new descriptor, which the loop's next turn closed too
// (tracing stopped: 1 clean-clone CI run). Such a close runs when none of
// ours is open (own_fd.h), and finds what it would untraced (nothing:
// EBADF). A number the program opened is its own: its close does not wait
// (a loader's workers close thousands of files).
template <typename Call>
auto CloseOfNumber(uint32_t file, Call&& call) {
  return file == FdTable::kUnknown ? core::WhenNoOwnFdIsOpen(call) : call();
}

// The close event of `fd`, which named `file` (ForgetBeforeClose).
inline bool DescribeClose(Event& e, int fd, uint32_t file) {
  if (__builtin_expect(!FdTable::Named(file), 0)) return NotNamed(file);
  e.fd = fd;
  e.file = file;
  return true;
}

// dup family: `newfd` now refers to what `oldfd` did.
inline bool DescribeDup(Event& e, int oldfd, int newfd) {
  if (newfd >= 0 && newfd != oldfd) {
    core::FileOfFd(Rt(), oldfd);
    Rt().fds().Copy(oldfd, newfd);
  }
  return DescribeFd(e, oldfd);
}

// fcntl(F_SETFL, flags) succeeded: O_APPEND on or off, for the same open
// file description (a dup keeps sharing it); leaving append mode, the
// position is the kernel's.
inline void AfterSetFl(int fd, long flags) {
  FdTable& fds = Rt().fds();
  if (fds.File(fd) == FdTable::kUnknown) return;
  const bool append = (flags & O_APPEND) != 0;
  if (!append && fds.Append(fd)) fds.SetPosition(fd, syscall(SYS_lseek, fd, 0, SEEK_CUR));
  fds.SetAppend(fd, append);
}

// splice (not recorded) moved the position of a side it was given no
// offset for: the fd table asks the kernel for that fd's from now on.
inline void AfterSplice(int fd_in, const void* off_in, int fd_out, const void* off_out) {
  if (off_in == nullptr) Rt().fds().PositionFromKernel(fd_in);
  if (off_out == nullptr) Rt().fds().PositionFromKernel(fd_out);
}

// The bytes an iovec array asks for. A count the kernel refuses unread
// (above its UIO_MAXIOV, 1024: EINVAL) is not walked either: the array may
// be shorter.
inline uint64_t IovBytes(const struct iovec* iov, int count) {
  constexpr int kKernelMaxIov = 1024;
  if (count > kKernelMaxIov) return 0;
  uint64_t n = 0;
  for (int i = 0; iov != nullptr && i < count; ++i) n += iov[i].iov_len;
  return n;
}

inline bool OpenNeedsMode(int flags) {
  return (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE;
}

}  // namespace dlprof::intercept

#endif  // DLPROF_LIB_INTERCEPT_DESCRIBE_H_
