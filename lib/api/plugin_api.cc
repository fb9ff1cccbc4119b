// libdlprof.so's side of include/dlprof/plugin.h.
#include "dlprof/plugin.h"

#include <cstring>

#include "dlprof/format.h"
#include "lib/core/clock.h"
#include "lib/core/rank_io_map.h"
#include "lib/core/raw_log.h"
#include "lib/core/run_id.h"
#include "lib/core/runtime.h"

using dlprof::core::CurrentThread;
using dlprof::core::Runtime;
using dlprof::core::ThreadContext;
using dlprof::core::Tracing;

extern "C" {

uint64_t dlprof_plugin_now_ns(void) { return dlprof::core::NowNs(); }

uint32_t dlprof_plugin_intern(const char* text, size_t len) {
  if (text == nullptr || !Tracing(CurrentThread())) return 0;
  return Runtime::Get().strings().Intern(text, len);
}

int dlprof_plugin_record(const void* event) {
  ThreadContext& t = CurrentThread();
  if (event == nullptr || !Tracing(t)) return 0;
  dlprof::Event e;
  std::memcpy(&e, event, sizeof(e));
  if (!dlprof::core::KindEnabled(static_cast<dlprof::EventKind>(e.kind))) return 0;
  t.internal = true;
  dlprof::core::Record(t, e);
  t.internal = false;
  return 1;
}

void dlprof_plugin_count_dropped(uint64_t count) {
  ThreadContext& t = CurrentThread();
  if (!Tracing(t)) return;
  if (t.buffer == nullptr) Runtime::Get().AttachThread(t);
  if (t.buffer) t.buffer->dropped.fetch_add(count, std::memory_order_relaxed);
}

int dlprof_plugin_module_enabled(const char* module) {
  if (module == nullptr) return 0;
  if (dlprof::core::g_state.load() != static_cast<int>(dlprof::core::RuntimeState::kRunning)) {
    return 0;
  }
  uint32_t modules = Runtime::Get().config().modules;
  if (std::strcmp(module, "posix") == 0) return (modules & dlprof::core::kModulePosix) != 0;
  if (std::strcmp(module, "stdio") == 0) return (modules & dlprof::core::kModuleStdio) != 0;
  if (std::strcmp(module, "mpiio") == 0) return (modules & dlprof::core::kModuleMpiio) != 0;
  if (std::strcmp(module, "cuda") == 0) return (modules & dlprof::core::kModuleCuda) != 0;
  if (std::strcmp(module, "app") == 0) return (modules & dlprof::core::kModuleApp) != 0;
  if (std::strcmp(module, "gds") == 0) return (modules & dlprof::core::kModuleGds) != 0;
  return 0;
}

const char* dlprof_plugin_cuda_kinds(void) { return Runtime::Get().config().cuda.c_str(); }

void dlprof_plugin_gpu_attached(void) {
  if (dlprof::core::g_state.load() != static_cast<int>(dlprof::core::RuntimeState::kRunning)) {
    return;
  }
  dlprof::core::RankIoMap::Get().GpuAttached(dlprof::core::NowNs());
}

void dlprof_plugin_flush(void) { Runtime::Get().FlushNow(); }

void dlprof_plugin_log(const char* message) {
  if (message) dlprof::core::RawLog("%s", message);
}

const char* dlprof_plugin_run_id(void) { return dlprof::core::ProcessRunId(); }

}  // extern "C"
