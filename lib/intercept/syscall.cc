// syscall(): the numbers of io_uring and Linux AIO go to their trackers
// (syscall_entry.h); those that move a file position or change the fd map
// keep the fd table true; unshare and setns run without the flusher where
// the kernel needs one thread (namespaces.cc); every other call passes
// straight through, with
// its six argument registers as the program left them (syscall() reads
// six, whatever the number needs).
//
// Defined without its `...`: on x86-64 and AArch64 Linux a variadic
// function's integer arguments arrive where a fixed list's do (registers,
// then the stack), so the number and six longs are read as named
// parameters. va_start's register save area, six va_arg reads and the
// callable around the real call were ~50 instructions on every call, a
// traced number or not (callgrind); any other number now passes in 17. A
// sixth argument the caller did not pass is read from its stack, as the C
// library's syscall() itself does.
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include <cstdint>

#include "lib/core/runtime.h"
#include "lib/core/own_fd.h"
#include "lib/core/process_end.h"
#include "lib/intercept/describe.h"
#include "lib/intercept/syscall_entry.h"
#include "lib/intercept/uring_ring.h"
#include "lib/intercept/without_flusher.h"
#include "lib/intercept/wrapper.h"

using dlprof::intercept::RealSyscall;
using dlprof::intercept::SyscallArgs;
namespace uring = dlprof::intercept::uring;
namespace linux_aio = dlprof::intercept::linux_aio;

using SyscallFn = long (*)(long, ...);
DLPROF_REAL_AS(syscall, SyscallFn, nullptr)

#if !defined(__x86_64__) && !defined(__aarch64__)
#error "syscall(): its arguments are read as named parameters only where the ABI allows it"
#endif

// The numbers the trackers follow, out of the way of every other number's
// path (which then keeps its arguments in their registers).
namespace {

// Whether a clone's child shares its parent's memory (a thread, a vfork):
// clone's flags are its first argument, clone3's the first field of the
// struct its first argument points at.
bool SharesMemory(long number, long a0, long a1) {
  constexpr uint64_t kCloneVm = 0x100;  // CLONE_VM
  if (number == SYS_clone) return (static_cast<uint64_t>(a0) & kCloneVm) != 0;
  if (number == SYS_clone3) {
    const auto* flags = reinterpret_cast<const uint64_t*>(a0);
    return a1 < 8 || flags == nullptr || (*flags & kCloneVm) != 0;
  }
  return false;  // fork
}

__attribute__((noinline)) long Tracked(long number, long a0, long a1, long a2, long a3, long a4,
                                       long a5) {
  const SyscallArgs a{{a0, a1, a2, a3, a4, a5}};
  // (A C library without syscall(): the callable, which fails with ENOSYS.)
  auto fail = [&] { return real_syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]); };
  const SyscallFn fn = real_syscall.get();
  const RealSyscall real = fn != nullptr ? RealSyscall(fn, number, a) : RealSyscall(fail);
  switch (number) {
    case SYS_io_uring_setup: return uring::SyscallSetup(a, real);
    case SYS_io_uring_enter: return uring::SyscallEnter(a, real);
    case SYS_io_uring_register: return uring::SyscallRegister(a, real);
    case SYS_io_setup: return linux_aio::SyscallSetup(a, real);
    case SYS_io_destroy: return linux_aio::SyscallDestroy(a, real);
    case SYS_io_submit: return linux_aio::SyscallSubmit(a, real);
    case SYS_io_getevents:
    case SYS_io_pgetevents: return linux_aio::SyscallGetEvents(a, real);
    case SYS_io_cancel: return linux_aio::SyscallCancel(a, real);
    default: return real();
  }
}
}  // namespace

// The C name is taken by <unistd.h>'s variadic declaration: this one is
// `syscall` to the linker only.
extern "C" long dlprof_syscall(long number, long a0, long a1, long a2, long a3, long a4,
                               long a5) __asm__("syscall");

namespace {
// A fork by system call runs no pthread_atfork handler: its child steps
// aside (Runtime::OnUnpreparedForkChild). Not a thread, nor a child sharing
// the memory (CLONE_VM: a vfork's, which InOwnProcess tells apart). Out of
// the dispatcher's way (inline, it gave every call a frame).
__attribute__((noinline)) long ForkOrClone(long number, long a0, long a1, long a2, long a3,
                                           long a4, long a5) {
  const long r = real_syscall(number, a0, a1, a2, a3, a4, a5);
  if (r == 0 && !SharesMemory(number, a0, a1)) {
    dlprof::core::Runtime::Get().OnUnpreparedForkChild();
  }
  return r;
}

// unshare and setns by number, as their functions (namespaces.cc): those
// the kernel refuses to a process of more than one thread run without the
// flusher. setns's nstype is an int to the kernel, unshare's flags a long.
__attribute__((noinline)) long NamespaceCall(long number, long a0, long a1, long a2, long a3,
                                             long a4, long a5) {
  auto call = [&] { return real_syscall(number, a0, a1, a2, a3, a4, a5); };
  namespace di = dlprof::intercept;
  const bool unshare = number == SYS_unshare;
  const long nstype = static_cast<int>(a1);
  const bool alone = unshare ? di::UnshareNeedsOneThread(a0) : di::SetnsNeedsOneThread(nstype);
  const bool mounts = unshare ? di::UnshareChangesMounts(a0) : di::SetnsChangesMounts(nstype);
  return alone || mounts ? di::WithoutFlusher(call, mounts) : call();
}

// Calls by number that move a file position or change the fd map: not
// recorded (the C library's functions are), but the fd table is kept true
// as their wrappers keep it: a closed fd's number reused by a pipe was still
// taken for the file, a dup's target was not followed, and a read by number
// left the shadow position behind, so later calls were recorded at wrong
// offsets. splice moves a position without saying how far, and an
// RWF_APPEND write to the end: the fd table asks the kernel from then on.
// Only what changes the fd map asks whether this is a vfork child (a system
// call): a position is its open file description's, which a vfork child
// shares with its parent.
__attribute__((noinline)) long KeepingFdTable(long number, long a0, long a1, long a2, long a3,
                                              long a4, long a5) {
  using dlprof::core::FdTable;
  namespace intercept = dlprof::intercept;
  const int fd = static_cast<int>(a0);
  if (number == SYS_close) uring::BeforeClose(fd);  // as close() does
  // dup2, dup3, close_range, and a close of a number not known to be the
  // program's: not under a write of the trace (own_fd.h, CloseOfNumber).
  const bool sweeps =
      number == SYS_dup3 || number == SYS_close_range ||
#ifdef SYS_dup2
      number == SYS_dup2 ||
#endif
      (number == SYS_close && intercept::Rt().fds().File(fd) == FdTable::kUnknown);
  const long r = sweeps ? dlprof::core::WhenNoOwnFdIsOpen(
                              [&] { return real_syscall(number, a0, a1, a2, a3, a4, a5); })
                        : real_syscall(number, a0, a1, a2, a3, a4, a5);
  if (r < 0 && number != SYS_close) return r;
  if (dlprof::core::g_state.load(std::memory_order_relaxed) !=
      static_cast<int>(dlprof::core::RuntimeState::kRunning)) {
    return r;
  }
  const int err = errno;
  FdTable& fds = intercept::Rt().fds();
  auto moved = [&](int at_fd, long by) {
    if (by > 0 && !fds.KernelPosition(at_fd)) fds.Advance(at_fd, by);
  };
  auto copied = [&](int to) {
    if (to == fd || intercept::InVforkChild()) return;
    dlprof::core::FileOfFd(intercept::Rt(), fd);
    fds.Copy(fd, to);
    uring::AfterFdReplaced(to);
  };
  constexpr long kRwfAppend = 0x10;  // RWF_APPEND (<linux/fs.h>)
  switch (number) {
    case SYS_read:
    case SYS_write:
    case SYS_readv:
    case SYS_writev: moved(fd, r); break;
    case SYS_preadv2:
    case SYS_pwritev2:  // at offset -1: at, and moving, the position
      if (a3 == -1 && (a5 & kRwfAppend) != 0) {
        fds.PositionFromKernel(fd);
      } else if (a3 == -1) {
        moved(fd, r);
      }
      break;
    case SYS_sendfile:  // (out, in, in's offset or NULL, count)
      moved(fd, r);
      if (a2 == 0) moved(static_cast<int>(a1), r);
      break;
    case SYS_copy_file_range:  // (in, in's offset, out, out's offset, ...)
      if (a1 == 0) moved(fd, r);
      if (a3 == 0) moved(static_cast<int>(a2), r);
      break;
    case SYS_lseek: fds.SetPosition(fd, r); break;
    case SYS_splice:
      intercept::AfterSplice(fd, reinterpret_cast<const void*>(a1), static_cast<int>(a2),
                             reinterpret_cast<const void*>(a3));
      break;
    case SYS_fcntl:
      if (a1 == F_DUPFD || a1 == F_DUPFD_CLOEXEC) {
        copied(static_cast<int>(r));
      } else if (a1 == F_SETFL) {
        intercept::AfterSetFl(fd, a2);
      }
      break;
    case SYS_close:
      if ((r == 0 || err != EBADF) && !intercept::InVforkChild()) fds.Clear(fd);
      break;
    case SYS_close_range:
      if ((a2 & CLOSE_RANGE_CLOEXEC) == 0 && !intercept::InVforkChild()) {
        fds.ClearRange(static_cast<unsigned>(a0), static_cast<unsigned>(a1));
        uring::CloseRingsIn(static_cast<unsigned>(a0), static_cast<unsigned>(a1));
      }
      break;
    default: copied(static_cast<int>(r)); break;  // dup, dup2, dup3
  }
  errno = err;
  return r;
}

// The tracer's own raw system calls go through syscall() too (the
// describers' lseek and fstat, the trace's writes and closes): a call made
// from this library's code passes straight through, whatever its number.
// The linker's bounds of this object's code (GNU ld).
extern "C" char __ehdr_start[] __attribute__((visibility("hidden")));
extern "C" char __etext[] __attribute__((visibility("hidden")));
inline bool FromTracer(const void* caller) {
  return caller >= static_cast<const void*>(__ehdr_start) &&
         caller < static_cast<const void*>(__etext);
}
}  // namespace

extern "C" __attribute__((visibility("default"))) long dlprof_syscall(long number, long a0,
                                                                      long a1, long a2, long a3,
                                                                      long a4, long a5) {
  switch (number) {
    case SYS_io_uring_setup:
    case SYS_io_uring_enter:
    case SYS_io_uring_register:
    case SYS_io_setup:
    case SYS_io_destroy:
    case SYS_io_submit:
    case SYS_io_getevents:
    case SYS_io_pgetevents:
    case SYS_io_cancel: return Tracked(number, a0, a1, a2, a3, a4, a5);
#ifdef SYS_fork
    case SYS_fork:
#endif
    case SYS_clone:
    case SYS_clone3: return ForkOrClone(number, a0, a1, a2, a3, a4, a5);
    case SYS_unshare:
    case SYS_setns: return NamespaceCall(number, a0, a1, a2, a3, a4, a5);
    case SYS_read:
    case SYS_write:
    case SYS_readv:
    case SYS_writev:
    case SYS_preadv2:
    case SYS_pwritev2:
    case SYS_sendfile:
    case SYS_copy_file_range:
    case SYS_lseek:
    case SYS_splice:
    case SYS_fcntl:
    case SYS_dup:
    case SYS_close:
#ifdef SYS_dup2
    case SYS_dup2:
#endif
    case SYS_dup3:
    case SYS_close_range:
      if (FromTracer(__builtin_return_address(0))) break;
      return KeepingFdTable(number, a0, a1, a2, a3, a4, a5);
    case SYS_exit_group:
      // The process ends here, as by _exit(): the trace is finished first.
      if (!FromTracer(__builtin_return_address(0)) && dlprof::intercept::Rt().InOwnProcess()) {
        dlprof::core::RecordProcessEnd(dlprof::EventKind::ProcessExit, static_cast<int>(a0), 0,
                                       /*maybe_in_handler=*/true);
        dlprof::intercept::Rt().Finalize();
      }
      break;
    default: break;
  }
  return real_syscall(number, a0, a1, a2, a3, a4, a5);
}
