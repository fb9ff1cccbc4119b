// Application annotations, the C API of include/dlprof/dlprof.h: regions,
// marks, counters and flows, recorded on the calling thread (regions.h has
// the events' layout; nvtx.cc takes NVTX's ranges onto the same regions).
#define DLPROF_BUILDING_LIBRARY 1
#include "dlprof/dlprof.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <pthread.h>
#include <sys/resource.h>
#include <time.h>

#include "dlprof/format.h"
#include "lib/api/regions.h"
#include "lib/core/clock.h"
#include "lib/core/file_ids.h"
#include "lib/core/map_faults.h"
#include "lib/core/raw_log.h"
#include "lib/core/runtime.h"

namespace dlprof::api {

using core::CurrentThread;
using core::ThreadContext;

bool AppEnabled(const ThreadContext& t, EventKind kind) {
  return core::Tracing(t) && core::KindEnabled(kind);
}

// 0 for no name, or for a name the string table had no room for: the
// annotation is then not recorded, and counted as dropped (as an event on
// a file the table had no room for is), so the trace says it is incomplete.
uint32_t InternName(const char* name, size_t len) {
  if (name == nullptr) return 0;
  core::Runtime& rt = core::Runtime::Get();
  const uint32_t id = rt.strings().Intern(name, len);
  if (id == 0) core::CountLostEvent(rt);
  return id;
}

uint32_t InternCString(const char* name) {
  if (name == nullptr) return 0;
  return InternName(name, strnlen(name, kMaxNameBytes));
}

void Emit(ThreadContext& t, EventKind kind, uint32_t name, uint64_t start, uint64_t dur,
          int64_t offset, int64_t ret, uint64_t aux) {
  Event e;
  e.kind = static_cast<uint16_t>(kind);
  e.flags = t.depth > 0 ? kEventFlagNested : 0;
  e.err = 0;
  e.start_ns = start;
  e.dur_ns = dur;
  e.ret = ret;
  e.offset = offset;
  e.size = 0;
  e.file = name;
  e.fd = -1;
  e.aux = aux;
  t.internal = true;
  core::Record(t, e);
  t.internal = false;
}


// --- regions shared by the C API and NVTX push/pop ------------------------

namespace {
// The calling thread's major faults and CPU time so far: two system calls.
// (getrusage's CPU times lag by up to a scheduler tick; the thread's CPU
// clock counts to the nanosecond.)
bool ThreadUsage(uint64_t* major_faults, uint64_t* cpu_ns) {
  struct rusage u;
  struct timespec cpu;
  if (getrusage(RUSAGE_THREAD, &u) != 0 || clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) != 0) {
    return false;
  }
  *major_faults = static_cast<uint64_t>(u.ru_majflt);
  *cpu_ns = static_cast<uint64_t>(cpu.tv_sec) * 1000000000u + static_cast<uint64_t>(cpu.tv_nsec);
  return true;
}

// A region of a thread that faulted: how long the faults may have held it.
void EmitFaults(ThreadContext& t, const RegionStack::Frame& f, uint64_t now) {
  uint64_t faults = 0, cpu = 0;
  if (!ThreadUsage(&faults, &cpu) || faults <= f.major_faults) return;
  const uint64_t wall = now - f.start_ns;
  const uint64_t on_cpu = cpu > f.cpu_ns ? cpu - f.cpu_ns : 0;
  Event e{};
  e.kind = static_cast<uint16_t>(EventKind::RegionFaults);
  e.flags = t.depth > 0 ? kEventFlagNested : 0;
  e.start_ns = f.start_ns;
  e.dur_ns = wall;
  e.file = f.name;
  e.fd = core::MapFaults::Get().CoversThisThread() ? 1 : 0;
  e.offset = -1;
  e.size = faults - f.major_faults;
  e.ret = static_cast<int64_t>(wall > on_cpu ? wall - on_cpu : 0);
  e.aux = on_cpu;
  t.internal = true;
  core::Record(t, e);
  t.internal = false;
}

}  // namespace

void Begin(RegionStack& stack, EventKind kind, const char* name, size_t len) {
  EnsureRegionHooks();
  ThreadContext& t = CurrentThread();
  uint32_t id = 0;
  if (AppEnabled(t, kind)) {
    t.internal = true;
    id = InternName(name, len);
    t.internal = false;
  }
  // Pushed even when not recorded, so that begins and ends keep matching.
  stack.Push(id, core::NowNs());
  if (id != 0 && core::g_map_faults_on.load(std::memory_order_relaxed) && stack.overflow == 0) {
    RegionStack::Frame& f = stack.frames[stack.depth - 1];
    f.counted = ThreadUsage(&f.major_faults, &f.cpu_ns);
  }
}

void EndFrame(const RegionStack::Frame& f, EventKind kind, uint64_t now, int depth) {
  ThreadContext& t = CurrentThread();
  if (f.name != 0 && AppEnabled(t, kind)) {
    Emit(t, kind, f.name, f.start_ns, now - f.start_ns, -1, 0, static_cast<uint64_t>(depth));
    if (f.counted) EmitFaults(t, f, now);
  }
}

int End(RegionStack& stack, EventKind kind) {
  const uint64_t now = core::NowNs();
  RegionStack::Frame f;
  if (!stack.Pop(&f)) return -1;
  const int depth = static_cast<int>(stack.depth);
  EndFrame(f, kind, now, depth);
  return depth;
}

void EndAll(RegionStack& stack, EventKind kind) {
  while (stack.depth + stack.overflow > 0) End(stack, kind);
}

namespace {

thread_local RegionStack tls_regions;  // dlprof_region_begin/end

std::atomic<bool> g_region_hooks{false};

// Runs in the child, on the thread that forked: the only one it has.
void ForgetAfterFork() {
  tls_regions.ForgetNames();
  NvtxForgetAfterFork();
}

// A region the program has not ended when it exits ends there: its calls
// are its own, not outside every region. (Other threads' open regions are
// beyond reach: their stacks are theirs.)
void EndAllAtExit() {
  EndAll(tls_regions, EventKind::AppRegion);
  NvtxEndAllAtExit();
}

}  // namespace

void EnsureRegionHooks() {
  if (g_region_hooks.load(std::memory_order_acquire) || g_region_hooks.exchange(true)) return;
  core::SetAtExit(EndAllAtExit);
  pthread_atfork(nullptr, nullptr, ForgetAfterFork);
}

namespace {

void Mark(EventKind kind, const char* name, size_t len, uint64_t depth) {
  ThreadContext& t = CurrentThread();
  if (!AppEnabled(t, kind)) return;
  const uint64_t now = core::NowNs();
  t.internal = true;
  uint32_t id = InternName(name, len);
  t.internal = false;
  if (id != 0) Emit(t, kind, id, now, 0, -1, 0, depth);
}

void Counter(const char* name, uint64_t bits, int64_t type) {
  ThreadContext& t = CurrentThread();
  if (!AppEnabled(t, EventKind::AppCounter)) return;
  const uint64_t now = core::NowNs();
  t.internal = true;
  uint32_t id = InternCString(name);
  t.internal = false;
  if (id != 0) Emit(t, EventKind::AppCounter, id, now, 0, -1, type, bits);
}

void Flow(EventKind kind, const char* name, uint64_t id) {
  ThreadContext& t = CurrentThread();
  if (!AppEnabled(t, kind)) return;
  const uint64_t now = core::NowNs();
  t.internal = true;
  uint32_t name_id = InternCString(name);
  t.internal = false;
  if (name_id != 0) Emit(t, kind, name_id, now, 0, -1, 0, id);
}

}  // namespace
}  // namespace dlprof::api

// --- the C API ----------------------------------------------------------------

using dlprof::EventKind;
using dlprof::api::kMaxNameBytes;
using dlprof::api::tls_regions;

extern "C" {

void dlprof_region_begin(const char* name) {
  dlprof::core::ErrnoSaver keep;
  if (name == nullptr) name = "";
  dlprof::api::Begin(tls_regions, EventKind::AppRegion, name, strnlen(name, kMaxNameBytes));
}

void dlprof_region_end(void) {
  dlprof::core::ErrnoSaver keep;
  dlprof::api::End(tls_regions, EventKind::AppRegion);
}

void dlprof_mark(const char* name) {
  dlprof::core::ErrnoSaver keep;
  if (name == nullptr) return;
  dlprof::api::Mark(EventKind::AppMark, name, strnlen(name, kMaxNameBytes), tls_regions.depth);
}

void dlprof_counter(const char* name, int64_t value) {
  dlprof::core::ErrnoSaver keep;
  dlprof::api::Counter(name, static_cast<uint64_t>(value), 0);
}

void dlprof_counter_double(const char* name, double value) {
  dlprof::core::ErrnoSaver keep;
  uint64_t bits;
  static_assert(sizeof(bits) == sizeof(value), "double is 64 bits");
  std::memcpy(&bits, &value, sizeof(bits));
  dlprof::api::Counter(name, bits, 1);
}

void dlprof_flow_start(const char* name, uint64_t id) {
  dlprof::core::ErrnoSaver keep;
  dlprof::api::Flow(EventKind::AppFlowStart, name == nullptr ? "" : name, id);
}

void dlprof_flow_finish(const char* name, uint64_t id) {
  dlprof::core::ErrnoSaver keep;
  dlprof::api::Flow(EventKind::AppFlowFinish, name == nullptr ? "" : name, id);
}

int dlprof_active(void) {
  return dlprof::api::AppEnabled(dlprof::core::CurrentThread(), EventKind::AppRegion) ? 1 : 0;
}

}  // extern "C"
