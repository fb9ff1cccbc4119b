// The record of how a process ends (process_end.h).
#include "lib/core/process_end.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "lib/core/clock.h"
#include "lib/core/recording_window.h"
#include "lib/core/runtime.h"

namespace dlprof::core {
namespace {

// The one end record no thread could record itself, for the final pass:
// 0 none, 1 being written, 2 ready, 3 taken. Lock-free, set once (the
// first end wins): a signal handler's.
std::atomic<uint32_t> g_parked_state{0};
Event g_parked_event;
int32_t g_parked_tid = 0;

void Park(const Event& e) {
  uint32_t none = 0;
  if (!g_parked_state.compare_exchange_strong(none, 1, std::memory_order_acq_rel)) return;
  g_parked_event = e;
  g_parked_tid = static_cast<int32_t>(syscall(SYS_gettid));
  g_parked_state.store(2, std::memory_order_release);
}

}  // namespace

void RecordProcessEnd(EventKind kind, int64_t ret, uint64_t aux, bool maybe_in_handler) {
  if (!KindEnabled(kind) ||
      g_state.load(std::memory_order_relaxed) != static_cast<int>(RuntimeState::kRunning)) {
    return;
  }
  ThreadContext& t = CurrentThread();
  Event e{};
  e.kind = static_cast<uint16_t>(kind);
  e.start_ns = NowNs();
  e.fd = -1;
  e.offset = -1;
  e.ret = ret;
  e.aux = aux;
  // A thread inside the tracer's own code (a signal that came while it
  // recorded a call: its ring's slot half written) or, in a handler, with
  // no ring yet (no allocation there): the final pass writes it.
  if (t.internal || (maybe_in_handler && t.buffer == nullptr)) {
    Park(e);
    return;
  }
  e.flags = t.depth > 0 ? kEventFlagNested : 0;
  OpenWindow(t, DLPROF_CALLER_FRAME());
  Record(t, e);
  CloseWindow(t);
}

bool TakeParkedProcessEnd(Event* e, int32_t* tid) {
  uint32_t ready = 2;
  if (!g_parked_state.compare_exchange_strong(ready, 3, std::memory_order_acq_rel)) return false;
  *e = g_parked_event;
  *tid = g_parked_tid;
  return true;
}

}  // namespace dlprof::core
