// syscall(): the numbers of io_uring and Linux AIO go to their trackers
// (syscall_entry.h); every other call passes straight through, with its six
// argument registers as the program left them (syscall() reads six, whatever
// the number needs).
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>

#include "lib/intercept/syscall_entry.h"
#include "lib/intercept/wrapper.h"

using dlprof::intercept::RealSyscall;
using dlprof::intercept::SyscallArgs;
namespace uring = dlprof::intercept::uring;
namespace linux_aio = dlprof::intercept::linux_aio;

using SyscallFn = long (*)(long, ...);
DLPROF_REAL_AS(syscall, SyscallFn, nullptr)

extern "C" long syscall(long number, ...) {
  va_list ap;
  va_start(ap, number);
  // (Unrolled: a loop of va_arg was a third of the wrapper's instructions.)
  const long a0 = va_arg(ap, long), a1 = va_arg(ap, long), a2 = va_arg(ap, long);
  const long a3 = va_arg(ap, long), a4 = va_arg(ap, long), a5 = va_arg(ap, long);
  va_end(ap);
  const SyscallArgs a{{a0, a1, a2, a3, a4, a5}};
  auto real = [&] { return real_syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]); };
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
