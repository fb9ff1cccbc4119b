// The trackers reached through syscall(): programs that make io_uring's and
// Linux AIO's system calls themselves (fio's io_uring engine; libaio, whose
// functions are thin wrappers around syscall()). syscall.cc interposes
// syscall() and hands these numbers to their tracker; every other number
// goes straight to the C library.
#ifndef DLPROF_LIB_INTERCEPT_SYSCALL_ENTRY_H_
#define DLPROF_LIB_INTERCEPT_SYSCALL_ENTRY_H_

namespace dlprof::intercept {

// The six arguments as syscall() received them.
struct SyscallArgs {
  long v[6];
  long operator[](int i) const { return v[i]; }
};

// The program's call, made as it asked (-1 and errno on failure for
// syscall(); liburing's own wrappers return -errno): a reference to a
// callable that outlives the handler.
class RealSyscall {
 public:
  template <typename F>
  RealSyscall(const F& f)  // NOLINT: made from any callable
      : object_(&f),
        call_([](const void* o) { return static_cast<long>((*static_cast<const F*>(o))()); }) {}
  // syscall()'s own: the C library's `fn` called straight with the number
  // and the six arguments as given (no callable and its frame between).
  RealSyscall(long (*fn)(long, ...), long number, const SyscallArgs& a)
      : object_(&a), fn_(fn), number_(number) {}
  long operator()() const {
    if (fn_ != nullptr) {
      const SyscallArgs& a = *static_cast<const SyscallArgs*>(object_);
      return fn_(number_, a[0], a[1], a[2], a[3], a[4], a[5]);
    }
    return call_(object_);
  }

 private:
  const void* object_;
  long (*call_)(const void*) = nullptr;
  long (*fn_)(long, ...) = nullptr;
  long number_ = 0;
};

namespace uring {
long SyscallSetup(const SyscallArgs& a, const RealSyscall& real);
long SyscallEnter(const SyscallArgs& a, const RealSyscall& real);
long SyscallRegister(const SyscallArgs& a, const RealSyscall& real);
}  // namespace uring

namespace linux_aio {
long SyscallSetup(const SyscallArgs& a, const RealSyscall& real);
long SyscallDestroy(const SyscallArgs& a, const RealSyscall& real);
long SyscallSubmit(const SyscallArgs& a, const RealSyscall& real);
long SyscallGetEvents(const SyscallArgs& a, const RealSyscall& real);
long SyscallCancel(const SyscallArgs& a, const RealSyscall& real);
}  // namespace linux_aio

}  // namespace dlprof::intercept

#endif  // DLPROF_LIB_INTERCEPT_SYSCALL_ENTRY_H_
