// The record of how a process ends (process_end.h).
#include "lib/core/process_end.h"

#include "lib/core/clock.h"
#include "lib/core/recording_window.h"
#include "lib/core/runtime.h"

namespace dlprof::core {

void RecordProcessEnd(EventKind kind, int64_t ret, uint64_t aux, bool maybe_in_handler) {
  ThreadContext& t = CurrentThread();
  if (!Tracing(t) || !KindEnabled(kind) || (maybe_in_handler && t.buffer == nullptr)) return;
  Event e{};
  e.kind = static_cast<uint16_t>(kind);
  e.flags = t.depth > 0 ? kEventFlagNested : 0;
  e.start_ns = NowNs();
  e.fd = -1;
  e.offset = -1;
  e.ret = ret;
  e.aux = aux;
  OpenWindow(t, DLPROF_CALLER_FRAME());
  Record(t, e);
  CloseWindow(t);
}

}  // namespace dlprof::core
