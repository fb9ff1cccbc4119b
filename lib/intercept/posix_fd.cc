// Descriptor plumbing (dup family, fcntl, close_range), memory maps and
// in-kernel copies.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>

#include "lib/core/clock.h"
#include "lib/core/map_faults.h"
#include "lib/core/map_table.h"
#include "lib/core/own_fd.h"
#include "lib/intercept/describe.h"
#include "lib/intercept/uring_ring.h"
#include "lib/intercept/wrapper.h"

using dlprof::Event;
using dlprof::EventKind;
using namespace dlprof::intercept;

// --- dup family ------------------------------------------------------------

DLPROF_REAL(dup)
extern "C" int dup(int fd) {
  if (InVforkChild()) return real_dup(fd);  // the new fd is the child's, not its parent's
  return Traced<int>(
      EventKind::Dup, [&] { return dlprof::core::WhenNoLowOwnFd([&] { return real_dup(fd); }); },
      [&](Event& e, int r, int) { return DescribeDup(e, fd, r); });
}

DLPROF_REAL(dup2)
extern "C" int dup2(int fd, int newfd) {
  if (InVforkChild()) return real_dup2(fd, newfd);
  const int r = Traced<int>(
      EventKind::Dup2,
      [&] { return dlprof::core::WhenNoOwnFdIsOpen([&] { return real_dup2(fd, newfd); }); },
      [&](Event& e, int r, int) { return DescribeDup(e, fd, r); });
  if (r >= 0 && fd != newfd) dlprof::intercept::uring::AfterFdReplaced(newfd);
  return r;
}

DLPROF_REAL(dup3)
extern "C" int dup3(int fd, int newfd, int flags) {
  if (InVforkChild()) return real_dup3(fd, newfd, flags);
  const int r = Traced<int>(
      EventKind::Dup3,
      [&] { return dlprof::core::WhenNoOwnFdIsOpen([&] { return real_dup3(fd, newfd, flags); }); },
      [&](Event& e, int r, int) { return DescribeDup(e, fd, r); });
  if (r >= 0) dlprof::intercept::uring::AfterFdReplaced(newfd);
  return r;
}

// fcntl: F_DUPFD and F_DUPFD_CLOEXEC are dups and traced; F_SETFL may turn
// O_APPEND on or off; every other command passes through untraced.
template <typename Real>
static int TracedFcntl(EventKind kind, const Real& real, int fd, int cmd, void* arg) {
  if (InVforkChild()) return real(fd, cmd, arg);
  if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) {
    return Traced<int>(
        kind, [&] { return real(fd, cmd, arg); },
        [&](Event& e, int r, int) {
          e.aux = static_cast<uint32_t>(cmd);
          return DescribeDup(e, fd, r);
        });
  }
  int r = real(fd, cmd, arg);
  if (cmd == F_SETFL && r == 0 && dlprof::core::Tracing(dlprof::core::CurrentThread())) {
    dlprof::core::ErrnoSaver keep;
    AfterSetFl(fd, reinterpret_cast<intptr_t>(arg));
  }
  return r;
}

using FcntlFn = int (*)(int, int, ...);
DLPROF_REAL_AS(fcntl, FcntlFn, nullptr)
DLPROF_REAL_AS(fcntl64, FcntlFn, nullptr)

// Every fcntl argument is an int or a pointer, passed in one register, so
// reading it as a pointer and passing it on is exact.
extern "C" int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  return TracedFcntl(EventKind::Fcntl, real_fcntl, fd, cmd, arg);
}
extern "C" int fcntl64(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  return TracedFcntl(EventKind::Fcntl64, real_fcntl64, fd, cmd, arg);
}

// close_range/closefrom: forget the fds. (The tracer holds no descriptor
// of its own between two writes of its trace, and none is open while the
// call runs: WhenNoOwnFdIsOpen.)
namespace {
using CloseRangeFn = int (*)(unsigned, unsigned, int);
}
DLPROF_REAL_AS(close_range, CloseRangeFn, nullptr)
extern "C" int close_range(unsigned first, unsigned last, int flags) {
  if (InVforkChild()) return real_close_range(first, last, flags);
  // Forgotten before the call, as close() forgets its fd (describe.h,
  // ForgetBeforeClose): the numbers are free for other threads' pipes and
  // sockets as soon as the kernel closed them. Were the call to fail with
  // fds still open, they are identified again on their next use.
  if (!(flags & CLOSE_RANGE_CLOEXEC)) Rt().fds().ClearRange(first, last);
  int r = dlprof::core::WhenNoOwnFdIsOpen([&] { return real_close_range(first, last, flags); });
  if (r == 0 && !(flags & CLOSE_RANGE_CLOEXEC)) {
    dlprof::core::ErrnoSaver keep;
    dlprof::intercept::uring::CloseRingsIn(first, last);
  }
  return r;
}

// glibc's own closefrom falls back to closing each fd of /proc/self/fd
// where close_range fails (ENOSYS: a kernel before 5.9, a container's
// seccomp profile); its result is the kernel's, whatever the tracer knew.
DLPROF_REAL(closefrom)
extern "C" void closefrom(int lowfd) {
  if (real_closefrom.get() == nullptr) {  // a C library before 2.34
    close_range(static_cast<unsigned>(lowfd < 0 ? 0 : lowfd), ~0u, 0);
    return;
  }
  if (InVforkChild()) return real_closefrom(lowfd);
  const unsigned first = static_cast<unsigned>(lowfd < 0 ? 0 : lowfd);
  Rt().fds().ClearRange(first, ~0u);  // before the call: see close_range
  dlprof::core::WhenNoOwnFdIsOpen([&] {
    real_closefrom(lowfd);
    return 0;
  });
  dlprof::core::ErrnoSaver keep;
  dlprof::intercept::uring::CloseRingsIn(first, ~0u);
}

// --- memory maps -------------------------------------------------------------
//
// The process's file mappings (lib/core/map_table.h) name the file of a
// munmap, an msync and a page fault (lib/core/map_faults.h). Mapping a
// traced file turns fault tracking on.

namespace {

using dlprof::core::FileMapping;
using dlprof::core::ProcessMaps;

uint64_t Address(const void* p) { return reinterpret_cast<uint64_t>(p); }

// An mmap with MAP_POPULATE reads its file inside the call (MapFaults).
void BeforePopulating(int fd) {
  const uint32_t file = dlprof::core::FileOfFd(Rt(), fd);
  if (FdTable::Named(file)) dlprof::core::MapFaults::Get().BeforePopulating(file);
}

// Whether `fd` is a file of a file system in memory (tmpfs: /dev/shm,
// shm_open, memfd; ramfs; hugetlbfs), which no storage stands behind.
bool InMemoryFile(int fd) {
  struct statfs fs;
  if (syscall(SYS_fstatfs, fd, &fs) != 0) return false;
  constexpr long kTmpfs = 0x01021994, kRamfs = 0x858458f6, kHugetlbfs = 0x958458f6;
  return fs.f_type == kTmpfs || fs.f_type == kRamfs || fs.f_type == kHugetlbfs;
}

// After a successful mmap: what it replaced (MAP_FIXED over anything, of
// ours or not) is gone, and a traced file's mapping is new. A shared map
// the process may write, of a file in memory, is memory shared between
// processes (MPI's segments, a shared-memory queue), not a data file read
// through a map: it names its file for munmap and msync, but does not turn
// fault tracking on, whose per-thread events would record every context
// switch of processes that poll each other (under load, more than the
// kernel's buffers hold). One of a file on storage is read through the map
// (np.memmap's default mode, "r+"); the MPI runtime's session directory is
// left out wherever it is (MapFaults::OnFileMapped).
void NoteMapped(void* r, size_t len, int prot, int flags, uint32_t file, int fd, uint64_t off) {
  const uint64_t now = dlprof::core::NowNs();
  if (file == 0) {
    if (flags & MAP_FIXED) ProcessMaps().Remove(Address(r), len, now);
    return;
  }
  ProcessMaps().Add(Address(r), len, file, fd, off, now);
  const bool shared_memory = (flags & MAP_SHARED) && (prot & PROT_WRITE) && InMemoryFile(fd);
  if (!shared_memory && dlprof::core::MapFaults::Get().OnFileMapped(file, fd)) {
    dlprof::core::Runtime::Get().WakeFlusher();
  }
}

}  // namespace

#define DLPROF_MMAP(fn, kind, off_type)                                                   \
  DLPROF_REAL(fn)                                                                         \
  extern "C" void* fn(void* addr, size_t len, int prot, int flags, int fd, off_type off) { \
    return Traced<void*>(                                                                 \
        EventKind::kind,                                                                  \
        [&] {                                                                             \
          if (flags & MAP_POPULATE) BeforePopulating(fd);                                 \
          return real_##fn(addr, len, prot, flags, fd, off);                              \
        },                                                                                \
        [&](Event& e, void* r, int) {                                                     \
          const bool traced = !(flags & MAP_ANONYMOUS) && fd >= 0 && DescribeFd(e, fd);   \
          if (r != MAP_FAILED) {                                                          \
            NoteMapped(r, len, prot, flags, traced ? e.file : 0, fd, static_cast<uint64_t>(off)); \
          }                                                                               \
          if (!traced) return false;                                                      \
          e.offset = static_cast<int64_t>(off);                                           \
          e.size = len;                                                                   \
          e.aux = (static_cast<uint64_t>(prot) << 32) | static_cast<uint32_t>(flags);     \
          return true;                                                                    \
        });                                                                               \
  }
DLPROF_MMAP(mmap, Mmap, off_t)
DLPROF_MMAP(mmap64, Mmap64, off64_t)

DLPROF_REAL(munmap)
extern "C" int munmap(void* addr, size_t len) {
  return Traced<int>(
      EventKind::Munmap, [&] { return real_munmap(addr, len); },
      [&](Event& e, int r, int) {
        FileMapping m;
        if (!ProcessMaps().FindLive(Address(addr), &m)) {
          // A range that starts in a hole may still cover a mapping of ours.
          if (r == 0) ProcessMaps().Remove(Address(addr), len, dlprof::core::NowNs());
          return false;
        }
        e.file = m.file;
        e.fd = m.fd;
        e.offset = static_cast<int64_t>(m.file_offset + (Address(addr) - m.start));
        e.size = len;
        if (r == 0) ProcessMaps().Remove(Address(addr), len, dlprof::core::NowNs());
        return true;
      });
}

// mremap moves or resizes one mapping (or, with an old length of 0, maps
// its pages again beside it): a mapped file keeps its name and
// offsets at the new address.
#ifdef MREMAP_DONTUNMAP
constexpr int kMremapDontUnmap = MREMAP_DONTUNMAP;
#else
constexpr int kMremapDontUnmap = 4;  // Linux 5.7; older C library headers lack it
#endif
using MremapFn = void* (*)(void*, size_t, size_t, int, ...);
DLPROF_REAL_AS(mremap, MremapFn, nullptr)
extern "C" void* mremap(void* old_addr, size_t old_len, size_t new_len, int flags, ...) {
  void* new_addr = nullptr;
  // As glibc: the new address is there for either flag (a hint with
  // MREMAP_DONTUNMAP alone, which the kernel still checks).
  if (flags & (MREMAP_FIXED | kMremapDontUnmap)) {
    va_list ap;
    va_start(ap, flags);
    new_addr = va_arg(ap, void*);
    va_end(ap);
  }
  return Traced<void*>(
      EventKind::Mremap,
      [&] { return real_mremap(old_addr, old_len, new_len, flags, new_addr); },
      [&](Event& e, void* r, int) {
        FileMapping m;
        if (!ProcessMaps().FindLive(Address(old_addr), &m)) {
          if (r != MAP_FAILED && (flags & MREMAP_FIXED)) {
            ProcessMaps().Remove(Address(r), new_len, dlprof::core::NowNs());
          }
          return false;
        }
        e.file = m.file;
        e.fd = m.fd;
        e.offset = static_cast<int64_t>(m.file_offset + (Address(old_addr) - m.start));
        e.size = new_len;
        e.aux = old_len;
        if (r != MAP_FAILED && (flags & kMremapDontUnmap)) {
          // The old range stays mapped (file maps too, since Linux 5.13),
          // and the new one maps the same part of the file.
          ProcessMaps().Add(Address(r), new_len, m.file, m.fd, static_cast<uint64_t>(e.offset),
                            dlprof::core::NowNs());
        } else if (r != MAP_FAILED) {
          FileMapping moved;
          ProcessMaps().Move(Address(old_addr), old_len, Address(r), new_len,
                             dlprof::core::NowNs(), &moved);
        }
        return true;
      });
}

DLPROF_REAL(msync)
extern "C" int msync(void* addr, size_t len, int flags) {
  return Traced<int>(
      EventKind::Msync, [&] { return real_msync(addr, len, flags); },
      [&](Event& e, int, int) {
        FileMapping m;
        if (!ProcessMaps().FindLive(Address(addr), &m)) return false;
        e.file = m.file;
        e.fd = m.fd;
        e.size = len;
        e.aux = static_cast<uint32_t>(flags);
        return true;
      });
}

// --- in-kernel copies ------------------------------------------------------
// The event names the source file (fd = in_fd) and carries the destination's
// file id in aux; the bytes moved are the return value. Where only the
// destination is traced, it names the destination, in file and aux alike
// (the summary counts a write alone). `out_moves`: the
// copy wrote at the destination's position, which moved (sendfile always,
// copy_file_range without an out offset), as a write() would have.

inline bool DescribeCopy(Event& e, int in_fd, int out_fd, uint64_t count, const void* in_off,
                         int64_t in_off_value, bool out_moves, int64_t r) {
  const bool out_first_sight = FirstSight(out_fd);
  uint32_t out_file = dlprof::core::FileOfFd(Rt(), out_fd);
  if (out_moves && r > 0 && !out_first_sight) Rt().fds().Advance(out_fd, r);
  bool in_traced = in_off ? DescribePositionalIo(e, in_fd, count, in_off_value - (r > 0 ? r : 0), r)
                          : DescribeStreamIo(e, in_fd, count, r);
  if (FdTable::Named(out_file)) e.aux = out_file;
  if (!in_traced && FdTable::Named(out_file)) {
    e.file = out_file;
    e.fd = out_fd;
    e.aux = out_file;
    e.size = count;
    return true;
  }
  return in_traced;
}

#define DLPROF_SENDFILE(fn, kind, off_type)                                               \
  DLPROF_REAL(fn)                                                                         \
  extern "C" ssize_t fn(int out_fd, int in_fd, off_type* off, size_t count) {             \
    return Traced<ssize_t>(                                                               \
        EventKind::kind, [&] { return real_##fn(out_fd, in_fd, off, count); },            \
        [&](Event& e, ssize_t r, int) {                                                   \
          return DescribeCopy(e, in_fd, out_fd, count, off, off ? *off : 0, true, r);     \
        });                                                                               \
  }
DLPROF_SENDFILE(sendfile, Sendfile, off_t)
DLPROF_SENDFILE(sendfile64, Sendfile64, off64_t)

DLPROF_REAL(copy_file_range)
extern "C" ssize_t copy_file_range(int in_fd, off64_t* in_off, int out_fd, off64_t* out_off,
                                   size_t count, unsigned flags) {
  return Traced<ssize_t>(
      EventKind::CopyFileRange,
      [&] { return real_copy_file_range(in_fd, in_off, out_fd, out_off, count, flags); },
      [&](Event& e, ssize_t r, int) {
        return DescribeCopy(e, in_fd, out_fd, count, in_off, in_off ? *in_off : 0,
                            out_off == nullptr, r);
      });
}

// splice: not recorded (a pipe is one side), but a file side given no
// offset moves its position where the fd table cannot see.
DLPROF_REAL(splice)
extern "C" ssize_t splice(int fd_in, loff_t* off_in, int fd_out, loff_t* off_out, size_t len,
                          unsigned flags) {
  const ssize_t r = real_splice(fd_in, off_in, fd_out, off_out, len, flags);
  // (A vfork child's positions are its parent's open file descriptions'.)
  if (r > 0) {
    dlprof::core::ErrnoSaver keep;
    AfterSplice(fd_in, off_in, fd_out, off_out);
  }
  return r;
}
