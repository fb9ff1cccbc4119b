// Native call stacks of traced calls (DLPROF_STACKS=1).
//
// With stacks on, every event a wrapper records is followed, on the same
// thread's ring, by a `call_stack` event (catalogue code 254) whose `file`
// is the string id of the stack: the return addresses from libunwind's
// unw_backtrace, innermost first, as little-endian u64s, with the tracer's
// own frames left out. Stacks go through the string table, so a stack seen
// before costs one small id in the trace.
//
// So that the decoder can symbolise the addresses after the process is gone,
// every loaded object is described once per trace by a `module` event
// (code 249): file = path id, offset = load bias (dlpi_addr), aux = lowest
// mapped address, size = bytes mapped from there. Objects loaded later are
// added when the loader's counters say something changed.
//
// libunwind is dlopen'ed (libunwind.so.8) only when stacks are on, so
// libdlprof.so keeps no link-time dependency on it; if it cannot be loaded,
// one warning is printed and tracing goes on without stacks.
//
// Cost when stacks are off: one predictable branch on g_stacks_enabled per
// recorded event.
#ifndef DLPROF_LIB_CORE_STACKS_H_
#define DLPROF_LIB_CORE_STACKS_H_

#include <cstddef>
#include <cstdint>

#include "dlprof/format.h"
#include "lib/core/config.h"

namespace dlprof::core {

struct ThreadContext;

// True once SetUpStacks found libunwind in a process configured with
// DLPROF_STACKS=1. Written once, before the runtime runs.
extern bool g_stacks_enabled;

// Frames kept per stack (the innermost ones).
constexpr int kMaxStackFrames = 32;

// Loads libunwind when config.stacks is set. Called once from
// Runtime::Initialize, before the runtime runs.
void SetUpStacks(const Config& config);

// Captures the calling thread's stack and records it right after the event
// the caller has just recorded (which started at `start`, in TSC ticks when
// `tick_flag` is kEventFlagTicks, as the event's own start); records
// `module` events for objects not described yet. Called with t.internal set.
void RecordCallStack(ThreadContext& t, uint64_t start, uint16_t tick_flag);

// Set once the "cannot load libunwind" warning has been printed, so that the
// children of a run do not repeat it.
constexpr char kStacksWarnedVar[] = "DLPROF_STACKS_WARNED";

// Encodes `n` addresses as the bytes of a stack string (for tests).
size_t EncodeStack(const uintptr_t* frames, int n, char* out);

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_STACKS_H_
