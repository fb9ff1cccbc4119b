// The recording window: the few instructions in which a thread fills and
// publishes an event, which a signal handler's traced call must not enter.
//
// While a thread fills and publishes an event it is in tracer code
// (`internal`), and a signal handler that interrupts it must not take the
// ring slot being filled. Its traced calls leave their events in the
// thread's deferred list instead (lib/intercept/wrapper.h, TracedInWindow);
// CloseWindow records them and closes the window so that no event can slip
// in unseen: after the window is closed a handler records the normal way,
// the ring being free.
// Only the thread itself and its signal handlers look at these fields, so
// ordering them takes compiler barriers, never CPU fences.
// The deferred count is 0 whenever the window is closed.
#ifndef DLPROF_LIB_CORE_RECORDING_WINDOW_H_
#define DLPROF_LIB_CORE_RECORDING_WINDOW_H_

#include <cstdint>

#include "lib/core/runtime.h"

namespace dlprof::core {

// Where the function this is expanded in was called from: its caller's
// stack pointer at the call (the canonical frame address), one `lea`. The
// same for every function called from one place; code that runs inside the
// function, a signal handler that interrupts it included, runs deeper (at a
// lower address), unless on the signal stack.
#define DLPROF_CALLER_FRAME() reinterpret_cast<uintptr_t>(__builtin_dwarf_cfa())

// `frame`: the opener's DLPROF_CALLER_FRAME(), for telling a handler that
// interrupted the window from code that runs after a jump left it
// (lib/intercept/wrapper.h, LeftByJump).
__attribute__((always_inline)) inline void OpenWindow(ThreadContext& t, uintptr_t frame) {
  t.window_frame = frame;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);  // before a handler can see the window
  // `window` and `internal` at once (one store: a handler sees both or none).
  __atomic_store_n(&t.busy, kBusyInWindow, __ATOMIC_RELEASE);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);  // before the event is filled
}

// Records what handlers deferred and closes the window; the rare path.
__attribute__((noinline)) inline void CloseWindowDeferred(ThreadContext& t) {
  __atomic_store_n(&t.window, true, __ATOMIC_RELAXED);  // (may have been closed)
  uint32_t& done = t.deferred_recorded;
  for (;;) {
    __atomic_signal_fence(__ATOMIC_SEQ_CST);  // the handlers wrote the entries
    const uint32_t n = __atomic_load_n(&t.deferred_count, __ATOMIC_RELAXED);
    if (n != done) {
      // `done` counts an entry once it is in the ring: a handler that
      // interrupts the Record (a wait for ring space) and jumps away leaves
      // it to be recorded once, by whoever closes the window next.
      for (; done < n; __atomic_store_n(&done, done + 1, __ATOMIC_RELAXED)) {
        if (done < kDeferredEvents) Record(t, t.deferred[done]);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
      }
      continue;
    }
    __atomic_store_n(&t.window, false, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);  // close, then look again
    if (__atomic_load_n(&t.deferred_count, __ATOMIC_RELAXED) == done) break;
    // A handler deferred one between the look and the close.
    __atomic_store_n(&t.window, true, __ATOMIC_RELAXED);
  }
  // Closed: no handler touches the count now; the next window starts at 0.
  __atomic_store_n(&t.deferred_count, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&done, 0, __ATOMIC_RELAXED);
}

__attribute__((always_inline)) inline void CloseWindow(ThreadContext& t) {
  // The program's thread again (after the event is published), and the
  // window closed, in one store.
  __atomic_store_n(&t.busy, 0, __ATOMIC_RELEASE);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);  // close, then look
  if (__builtin_expect(__atomic_load_n(&t.deferred_count, __ATOMIC_RELAXED) == 0, 1)) return;
  CloseWindowDeferred(t);  // a handler deferred events while the window was open
}

// Where the thread ends the process (exit) with a window still open: a
// handler that interrupted the window ends it, or a jump out of a handler
// (siglongjmp) left it, and its owner never comes back to close it. What
// handlers deferred in it is recorded now, and the tracer's own calls from
// here pass through again instead of being taken for a handler's. Not when
// the owner was making the thread's first event (no ring yet: it holds the
// registry's lock).
inline void CloseWindowLeftOpen(ThreadContext& t) {
  if (__atomic_load_n(&t.window, __ATOMIC_RELAXED) && t.buffer != nullptr) CloseWindow(t);
}

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_RECORDING_WINDOW_H_
