// syscall(): the numbers of io_uring and Linux AIO go to their trackers
// (syscall_entry.h); every other call passes straight through, with its six
// argument registers as the program left them (syscall() reads six, whatever
// the number needs).
//
// Defined without its `...`: on x86-64 and AArch64 Linux a variadic
// function's integer arguments arrive where a fixed list's do (registers,
// then the stack), so the number and six longs are read as named
// parameters. va_start's register save area, six va_arg reads and the
// callable around the real call were ~50 instructions on every call, a
// traced number or not (callgrind); any other number now passes in 17. A
// sixth argument the caller did not pass is read from its stack, as the C
// library's syscall() itself does.
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

#include "lib/core/own_fd.h"
#include "lib/core/runtime.h"
#include "lib/intercept/syscall_entry.h"
#include "lib/intercept/uring_ring.h"
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
// The numbers that close or replace descriptors, or fork: out of the
// dispatcher's way too (inline, they gave every call a frame).
__attribute__((noinline)) long FdOrFork(long number, long a0, long a1, long a2, long a3, long a4,
                                        long a5) {
  switch (number) {
    case SYS_close:
      // A followed io_uring's fd: let go first, as close() does.
      dlprof::intercept::uring::BeforeClose(static_cast<int>(a0));
      return real_syscall(number, a0, a1, a2, a3, a4, a5);
#ifdef SYS_fork
    case SYS_fork:
#endif
    case SYS_clone:
    case SYS_clone3: {
      // A fork by system call runs no pthread_atfork handler: its child
      // steps aside (Runtime::OnUnpreparedForkChild). Not a thread, nor a
      // child sharing the memory (CLONE_VM: a vfork's, which InOwnProcess
      // tells apart).
      const long r = real_syscall(number, a0, a1, a2, a3, a4, a5);
      if (r == 0 && !SharesMemory(number, a0, a1)) {
        dlprof::core::Runtime::Get().OnUnpreparedForkChild();
      }
      return r;
    }
    default: break;
  }
  // dup2, dup3, close_range: not under a write of the trace (own_fd.h).
  return dlprof::core::WhenNoOwnFdIsOpen(
      [&] { return real_syscall(number, a0, a1, a2, a3, a4, a5); });
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
    case SYS_close:
#ifdef SYS_dup2
    case SYS_dup2:
#endif
    case SYS_dup3:
    case SYS_close_range:
#ifdef SYS_fork
    case SYS_fork:
#endif
    case SYS_clone:
    case SYS_clone3: return FdOrFork(number, a0, a1, a2, a3, a4, a5);
    default: return real_syscall(number, a0, a1, a2, a3, a4, a5);
  }
}
