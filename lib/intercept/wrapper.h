// The one mechanism every interposed function goes through.
//
//   extern "C" ssize_t read(int fd, void* buf, size_t n) {
//     DLPROF_REAL(read);
//     return Traced<ssize_t>(EventKind::Read,
//         [&] { return real_read(fd, buf, n); },
//         [&](Event& e, ssize_t r, int err) { return DescribeStreamIo(e, fd, n, r); });
//   }
//
// Traced() is written once for all: it passes straight through when the
// runtime is not running or the thread is inside tracer code (re-entrancy
// guard), times the real call on the one clock, keeps errno exactly as the
// real call left it, lets the describer fill the event (and keep the fd table
// true), and records the event.
#ifndef DLPROF_LIB_INTERCEPT_WRAPPER_H_
#define DLPROF_LIB_INTERCEPT_WRAPPER_H_

#include <signal.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <type_traits>

#include "dlprof/format.h"
#include "lib/core/clock.h"
#include "lib/core/raw_log.h"
#include "lib/core/recording_window.h"
#include "lib/core/runtime.h"
#include "lib/core/stacks.h"
#include "lib/core/tsc_clock.h"

namespace dlprof::intercept {

// The real definition of an interposed symbol. Every one is listed in the
// dlprof_real_symbols section and resolved before the runtime starts, so no
// wrapper calls dlsym later (dlsym is not async-signal-safe).
struct RealSymbol {
  const char* name;
  const char* version;  // nullptr: the default version
  std::atomic<void*> address;
  void* Resolve();
  void* Get() {
    void* p = address.load(std::memory_order_relaxed);
    return p ? p : Resolve();
  }
};

template <typename Fn>
struct RealFunction {
  RealSymbol& symbol;
  Fn get() const { return reinterpret_cast<Fn>(symbol.Get()); }
  // A symbol the C library lacks fails with ENOSYS instead of crashing.
  template <typename... A>
  auto operator()(A... args) const {
    Fn f = get();
    using R = decltype(f(args...));
    if (__builtin_expect(f == nullptr, 0)) {
      errno = ENOSYS;
      if constexpr (std::is_void_v<R>) {
        return;
      } else if constexpr (std::is_pointer_v<R>) {
        return static_cast<R>(nullptr);
      } else {
        return static_cast<R>(-1);
      }
    }
    return f(args...);
  }
};

// Declares `real_<name>`, callable like the function, at global scope next
// to the wrapper. `type` is the function pointer type; `version` picks a
// symbol version (nullptr: the default one).
#define DLPROF_REAL_AS(fn_name, type, version)                                              \
  namespace {                                                                               \
  ::dlprof::intercept::RealSymbol dlprof_real_sym_##fn_name{#fn_name, version, {nullptr}};  \
  __attribute__((used, section("dlprof_real_symbols"))) ::dlprof::intercept::RealSymbol*     \
      dlprof_real_entry_##fn_name = &dlprof_real_sym_##fn_name;                             \
  const ::dlprof::intercept::RealFunction<type> real_##fn_name{dlprof_real_sym_##fn_name};   \
  }
#define DLPROF_REAL(fn_name) DLPROF_REAL_AS(fn_name, decltype(&::fn_name), nullptr)

template <typename R>
inline bool IsFailure(R r) {
  if constexpr (std::is_pointer_v<R>) {
    return r == nullptr || reinterpret_cast<intptr_t>(r) == -1;
  } else {
    return r < 0;
  }
}

// Whether the call failed for memory the kernel could not read (EFAULT):
// the describer would read the same memory (a path, an iovec array) and
// fault where the program got an error, so it is not asked; the call is
// recorded as what the tracer can tell, with no file.
template <typename R>
inline bool FailedOnMemory(R r, int err) {
  return __builtin_expect(IsFailure(r) && err == EFAULT, 0);
}

// A describer that reads none of the program's memory (read, write and
// their positional forms: a descriptor, a count, an offset) is asked even
// after EFAULT, so that `read(fd, NULL, n)` is recorded with its file, fd
// and count as strace shows it. Marked by wrapping it: NoMemoryRead(f).
template <typename F>
struct NoMemoryRead {
  F describe;
  template <typename R>
  bool operator()(Event& e, R r, int err) { return describe(e, r, err); }
};
template <typename F>
NoMemoryRead(F) -> NoMemoryRead<F>;
template <typename D>
inline constexpr bool kReadsNoMemory = false;
template <typename F>
inline constexpr bool kReadsNoMemory<NoMemoryRead<F>> = true;

// Whether `describe` is not to be asked about this result (FailedOnMemory).
template <typename Describe, typename R>
inline bool SkipDescribe(R r, int err) {
  return !kReadsNoMemory<std::decay_t<Describe>> && FailedOnMemory(r, err);
}

template <typename R>
inline int64_t AsReturnValue(R r) {
  if constexpr (std::is_pointer_v<R>) {
    return IsFailure(r) ? -1 : 0;
  } else {
    return static_cast<int64_t>(r);
  }
}

__attribute__((always_inline)) inline void FillEvent(Event& e, EventKind kind, uint16_t flags,
                                                     uint64_t start, uint64_t end, int64_t ret,
                                                     int err) {
  e.kind = static_cast<uint16_t>(kind);
  e.flags = flags;
  e.err = err;
  e.start_ns = start;
  e.dur_ns = end - start;
  e.ret = ret;
  e.offset = -1;
  e.size = 0;
  e.file = 0;
  e.fd = -1;
  e.aux = 0;
}

// Called when a traced call is made at `frame` (DLPROF_CALLER_FRAME(): the
// interposed function's caller's stack pointer, the same for every wrapper
// called from one place) while an earlier call of the thread is in progress
// (`depth`) or recording (`window`), and `frame` is not deeper on the stack
// than where that one was made: no code inside that call runs there, unless
// it runs on the signal stack (sigaltstack), which may lie anywhere.
// Otherwise a jump out of a signal handler (siglongjmp, the classic timeout
// around a blocking read) or out of a callback left that call for good: its
// depth was never undone or its window never closed, and every later call
// of the thread would be flagged nested, or held back as a handler's and
// then dropped. So the thread's state is put back as the calls' ends would
// have left it. A call left so is not recorded: it never returned to the
// program. A call made after the jump but deeper than the left one is still
// taken for nested; the next one made as high up puts things right.
// Rare (once a jump): the one system call asks for the signal stack.
__attribute__((noinline)) inline bool LeftByJump(core::ThreadContext& t, uintptr_t frame) {
  stack_t signal_stack;
  if (sigaltstack(nullptr, &signal_stack) == 0 && (signal_stack.ss_flags & SS_ONSTACK)) {
    return false;  // a handler on the signal stack: the calls are in progress
  }
  if (__atomic_load_n(&t.window, __ATOMIC_RELAXED) && frame >= t.window_frame) CloseWindow(t);
  if (t.depth > 0 && frame >= t.call_frame) t.depth = 0;
  return true;
}

// A traced call made by a signal handler while the thread it interrupted was
// recording (the window above).
template <typename R, typename Call, typename Describe>
__attribute__((always_inline)) inline R TracedInWindow(core::ThreadContext& t, EventKind kind,
                                                       Call& call, Describe& describe) {
  if (core::g_state.load(std::memory_order_relaxed) !=
      static_cast<int>(core::RuntimeState::kRunning)) {
    return call();
  }
  const uint16_t tick = __atomic_load_n(&core::g_tick_flag, __ATOMIC_RELAXED);
  const uint64_t start = core::EventNow(tick);
  R r = call();
  const uint64_t end = core::EventNow(tick);
  core::CallErrno real_errno(t);
  Event e;
  FillEvent(e, kind, static_cast<uint16_t>((t.depth > 0 ? kEventFlagNested : 0) | tick), start,
            end, AsReturnValue(r), IsFailure(r) ? real_errno.value() : 0);
  if ((SkipDescribe<Describe>(r, real_errno.value()) || describe(e, r, real_errno.value())) &&
      core::KindEnabled(kind)) {
    // Claimed with one atomic add: a handler nested in this one takes the
    // next entry. The window's owner reads them only once we are back.
    const uint32_t slot = __atomic_fetch_add(&t.deferred_count, 1, __ATOMIC_RELAXED);
    if (slot < core::kDeferredEvents) {
      t.deferred[slot] = e;
    } else if (t.buffer != nullptr) {
      t.buffer->dropped.store(t.buffer->dropped.load(std::memory_order_relaxed) + 1,
                              std::memory_order_relaxed);
    }
  }
  return r;
}

template <typename R, typename Call, typename Describe>
__attribute__((always_inline)) inline R Traced(EventKind kind, Call&& call, Describe&& describe) {
  core::ThreadContext& t = core::CurrentThread();
  const uintptr_t frame = DLPROF_CALLER_FRAME();
  // One load for the window and the re-entrancy guard.
  if (__builtin_expect(__atomic_load_n(&t.busy, __ATOMIC_RELAXED) != 0, 0)) {
    if (!__atomic_load_n(&t.window, __ATOMIC_RELAXED)) return call();  // tracer code
    if (frame < t.window_frame || !LeftByJump(t, frame)) {
      return TracedInWindow<R>(t, kind, call, describe);
    }
  }
  if (__builtin_expect(core::g_state.load(std::memory_order_relaxed) !=
                           static_cast<int>(core::RuntimeState::kRunning),
                       0)) {
    return call();
  }
  if (__builtin_expect(!core::KindEnabled(kind), 0)) {
    // Not recorded (DLPROF_TRACE), but the fd table must stay true.
    R r = call();
    core::CallErrno real_errno(t);
    OpenWindow(t, frame);
    Event scratch{};
    if (!SkipDescribe<Describe>(r, real_errno.value())) describe(scratch, r, real_errno.value());
    CloseWindow(t);
    return r;
  }
  // The clock is read once: the call's two reads and its flag agree even
  // if the flusher gives up on the TSC meanwhile (tsc_clock.h).
  const uint16_t tick = __atomic_load_n(&core::g_tick_flag, __ATOMIC_RELAXED);
  const uintptr_t outer_frame = t.call_frame;
  const bool nested =
      __builtin_expect(t.depth > 0, 0) && (frame < outer_frame || !LeftByJump(t, frame));
  const uint16_t flags = static_cast<uint16_t>((nested ? kEventFlagNested : 0) | tick);
  // Set before the depth (a handler that sees the depth sees the frame),
  // and put back after the window closes: a handler's call that came
  // between the two would otherwise leave its own frame here.
  t.call_frame = nested ? outer_frame : frame;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  ++t.depth;
  const uint64_t start = core::EventNow(tick);
  R r = call();
  const uint64_t end = core::EventNow(tick);
  core::CallErrno real_errno(t);
  // (Never below 0: code that switched stacks inside the call, a coroutine
  // in a callback, may have been taken for a jump's and put it at 0.)
  t.depth -= t.depth != 0;
  // From here the thread is in tracer code: a signal handler's traced call
  // now waits in the deferred list rather than take the slot being filled.
  OpenWindow(t, frame);
  Event* const slot = core::ReserveSlot(t);
  Event& e = slot != nullptr ? *slot : t.spare;
  FillEvent(e, kind, flags, start, end, AsReturnValue(r), IsFailure(r) ? real_errno.value() : 0);
  if (SkipDescribe<Describe>(r, real_errno.value()) || describe(e, r, real_errno.value())) {
    core::CommitEvent(t, slot);
    if (__builtin_expect(core::g_stacks_enabled, 0)) core::RecordCallStack(t, start, tick);
  }
  CloseWindow(t);
  t.call_frame = outer_frame;
  return r;
}

// Records an event the runtime made itself rather than by timing a call.
inline bool RecordMade(Event e) {
  core::ThreadContext& t = core::CurrentThread();
  const EventKind kind = static_cast<EventKind>(e.kind);
  if (!core::Tracing(t) || !core::KindEnabled(kind)) return false;
  e.flags |= t.depth > 0 ? kEventFlagNested : 0;
  OpenWindow(t, DLPROF_CALLER_FRAME());
  core::Record(t, e);
  CloseWindow(t);
  return true;
}

// Marks the thread as in tracer code for a scope, and keeps errno: what the
// tracer asks a library for itself (MPI, mpiio.cc) is not recorded.
class InTracerCode {
 public:
  InTracerCode() : t_(core::CurrentThread()), was_(t_.internal) { t_.internal = true; }
  ~InTracerCode() { t_.internal = was_; }
  InTracerCode(const InTracerCode&) = delete;
  InTracerCode& operator=(const InTracerCode&) = delete;

 private:
  core::ThreadContext& t_;
  bool was_;
  core::ErrnoSaver keep_errno_;
};

}  // namespace dlprof::intercept

#endif  // DLPROF_LIB_INTERCEPT_WRAPPER_H_
