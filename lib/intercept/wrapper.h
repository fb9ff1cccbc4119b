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

#include <atomic>
#include <cerrno>
#include <type_traits>

#include "dlprof/format.h"
#include "lib/core/clock.h"
#include "lib/core/raw_log.h"
#include "lib/core/runtime.h"
#include "lib/core/stacks.h"

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

template <typename R>
inline int64_t AsReturnValue(R r) {
  if constexpr (std::is_pointer_v<R>) {
    return IsFailure(r) ? -1 : 0;
  } else {
    return static_cast<int64_t>(r);
  }
}

template <typename R, typename Call, typename Describe>
inline R Traced(EventKind kind, Call&& call, Describe&& describe) {
  core::ThreadContext& t = core::CurrentThread();
  if (!core::Tracing(t)) return call();
  if (__builtin_expect(!core::KindEnabled(kind), 0)) {
    // Not recorded (DLPROF_TRACE), but the fd table must stay true.
    R r = call();
    core::ErrnoSaver real_errno;
    t.internal = true;
    Event scratch{};
    describe(scratch, r, real_errno.value());
    t.internal = false;
    return r;
  }
  const uint16_t flags = t.depth > 0 ? kEventFlagNested : 0;
  ++t.depth;
  const uint64_t start = core::NowNs();
  R r = call();
  const uint64_t end = core::NowNs();
  core::ErrnoSaver real_errno;
  --t.depth;
  // From here the thread is in tracer code: a signal handler's I/O now goes
  // untraced rather than into the slot being filled.
  t.internal = true;
  Event& e = *core::ReserveEvent(t);
  e.kind = static_cast<uint16_t>(kind);
  e.flags = flags;
  e.err = IsFailure(r) ? real_errno.value() : 0;
  e.start_ns = start;
  e.dur_ns = end - start;
  e.ret = AsReturnValue(r);
  e.offset = -1;
  e.size = 0;
  e.file = 0;
  e.fd = -1;
  e.aux = 0;
  if (describe(e, r, real_errno.value())) {
    core::CommitEvent(t, &e);
    if (__builtin_expect(core::g_stacks_enabled, 0)) core::RecordCallStack(t, start);
  }
  t.internal = false;
  return r;
}

// For calls whose event is recorded before the call completes (exec, _exit).
inline bool RecordInstant(EventKind kind, int64_t aux) {
  core::ThreadContext& t = core::CurrentThread();
  if (!core::Tracing(t) || !core::KindEnabled(kind)) return false;
  Event e{};
  e.kind = static_cast<uint16_t>(kind);
  e.flags = t.depth > 0 ? kEventFlagNested : 0;
  e.start_ns = core::NowNs();
  e.offset = -1;
  e.fd = -1;
  e.aux = static_cast<uint64_t>(aux);
  t.internal = true;
  core::Record(t, e);
  t.internal = false;
  return true;
}

}  // namespace dlprof::intercept

#endif  // DLPROF_LIB_INTERCEPT_WRAPPER_H_
