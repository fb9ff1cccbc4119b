// libdlprof_cupti.so: GPU activity from CUPTI into dlprof's trace.
//
// libdlprof.so points CUDA_INJECTION64_PATH here (lib/core/cuda_injection),
// so the CUDA driver loads this library and calls InitializeInjection only
// in a process that initialises CUDA; others never load CUPTI. From there:
//
//   attach    subscribe (which fails if another CUPTI client is subscribed),
//             choose the clock method, hand CUPTI our buffer callbacks and
//             enable the record kinds of DLPROF_CUDA.
//   buffers   CUPTI fills pool buffers; the completion callback only queues
//             a completed one (completed_queue.h), and our translate thread
//             turns its records into events on its own dlprof ring, so no
//             CUPTI thread or application thread waits for translation
//             (DLPROF_CUPTI_TRANSLATE=inline translates in the callback).
//             Before CUPTI may free what records point to (kernel names: a
//             module unload, a context destroy, a detach) the queue is
//             drained on the spot.
//   flusher   a thread of ours flushes completed records every flush period
//             (tuning.h; so a killed job keeps its GPU events up to the
//             last flush), re-measures the clock offset, and carries out
//             the switch of clock method below.
//   switch    if kernels come back with zero timestamps while our timestamp
//             callback is registered (the CUDA 12.6u2-13.0 bug), CUPTI is
//             detached at the exit of the next CUDA API call (where CUPTI
//             says cuptiFinalize is safe) and attached again without the
//             callback, converting CUPTI's own timestamps instead.
//   exit      an atexit handler (it runs before libdlprof's destructor and
//             before libcupti unloads) stops the flusher, does a forced
//             flush and translates what is queued; a context about to be
//             destroyed is flushed too.
//
// A forked child never calls CUDA or CUPTI: an atfork handler raises a flag
// that every entry point checks first.
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include <cupti.h>

#include "lib/cupti/activity_translator.h"
#include "lib/cupti/buffer_pool.h"
#include "lib/cupti/clock_sync.h"
#include "lib/cupti/completed_queue.h"
#include "lib/cupti/cuda_kinds.h"
#include "lib/cupti/cupti_records.h"
#include "lib/cupti/host_api.h"
#include "lib/cupti/tuning.h"

namespace dlprof::cupti {
namespace {

constexpr uint64_t kResyncNs = 1000000000;  // convert: re-measure the offset each second
constexpr int kOffsetSamples = 32;

std::atomic<bool> g_in_child{false};

struct State {
  explicit State(const PluginTuning& t)
      : tuning(t), pool(t.buffer_bytes, t.max_buffers), completed(t.max_buffers + 1) {}

  const PluginTuning tuning;
  HostApi api;
  PluginHost host{&api};
  BufferPool pool;
  uint32_t kinds = 0;
  uint32_t cupti_version = 0;

  // Translation. Never taken by the buffer request callback. A buffer is
  // popped from `completed` and translated under it.
  std::mutex translate_mu;
  ActivityTranslator translator{&host};
  CompletedQueue completed;
  std::atomic<bool> queue_completed{false};  // the translate thread runs
  std::thread translate_thread;

  // Attach, detach, periodic flush, offset refresh. CUPTI callbacks on
  // application threads only try it, so they never wait for our flusher.
  std::mutex control_mu;
  std::condition_variable wake;
  bool stop = false;
  bool api_callbacks_on = false;
  CUpti_SubscriberHandle subscriber = nullptr;
  ClockMethod method = ClockMethod::kNone;
  uint64_t last_sync_ns = 0;
  std::thread flusher;

  std::atomic<bool> attached{false};
  std::atomic<bool> switch_requested{false};
  std::atomic<bool> reattach_pending{false};
};

State* g = nullptr;  // never destroyed: CUPTI may call back during exit

void Say(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void Say(const char* fmt, ...) {
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  g->api.log(text);
}

const char* ErrorText(CUptiResult r) {
  const char* s = nullptr;
  if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || s == nullptr) return "unknown CUPTI error";
  return s;
}

uint64_t CuptiNow() {
  uint64_t t = 0;
  cuptiGetTimestamp(&t);
  return t;
}

// --- record kinds -----------------------------------------------------------

struct KindMap {
  uint32_t ours;
  CUpti_ActivityKind cupti;
  const char* name;
};
constexpr KindMap kKindMap[] = {
    {kCudaKernel, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernel"},
    {kCudaMemcpy, CUPTI_ACTIVITY_KIND_MEMCPY, "memcpy"},
    {kCudaMemcpy, CUPTI_ACTIVITY_KIND_MEMCPY2, "peer-to-peer memcpy"},
    {kCudaMemset, CUPTI_ACTIVITY_KIND_MEMSET, "memset"},
    {kCudaSync, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "synchronization"},
    {kCudaRuntime, CUPTI_ACTIVITY_KIND_RUNTIME, "runtime API"},
    {kCudaDriver, CUPTI_ACTIVITY_KIND_DRIVER, "driver API"},
};

void EnableKinds(bool enable) {
  for (const KindMap& k : kKindMap) {
    if (!(g->kinds & k.ours)) continue;
    CUptiResult r = enable ? cuptiActivityEnable(k.cupti) : cuptiActivityDisable(k.cupti);
    if (r != CUPTI_SUCCESS && enable) {
      Say("cannot record CUDA %s activity: %s", k.name, ErrorText(r));
    }
  }
}

// --- clock ------------------------------------------------------------------

// Sets the translator's clock and writes the CudaClockSync event. Called with
// control_mu held.
void SyncClock(ClockReason reason) {
  OffsetSample s;
  if (g->method == ClockMethod::kConvert) {
    s = MeasureOffset([] { return g->api.now_ns(); }, CuptiNow, kOffsetSamples);
  } else {
    s.at_ns = g->api.now_ns();  // CUPTI reads our clock: nothing to measure
  }
  {
    std::lock_guard<std::mutex> lock(g->translate_mu);
    g->translator.SetClock(g->method, s.offset_ns);
  }
  g->last_sync_ns = s.at_ns;
  const char* name = ClockMethodName(g->method);
  Event e = MakeClockSyncEvent(g->method, reason, s, g->cupti_version,
                               g->api.intern(name, std::strlen(name)));
  g->api.record(&e);
}

// --- CUPTI callbacks ----------------------------------------------------------

void CUPTIAPI OnBufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = g_in_child.load() ? nullptr : g->pool.Acquire();
  *size = *buffer ? g->pool.buffer_bytes() : 0;
  *max_records = 0;  // as many as fit
}

// Called with translate_mu held, after translating.
void CheckZeroTimestamps() {
  if (g->translator.zero_timestamps_detected() && !g->switch_requested.exchange(true)) {
    Say("CUPTI returned kernels without timestamps while dlprof's clock was registered "
        "(a known bug of CUDA 12.6 Update 2 to 13.0); switching to converting CUPTI's clock");
    g->wake.notify_all();
  }
}

void TranslateLocked(const CompletedBuffer& b) {
  g->translator.TranslateBuffer(b.data, b.valid, cuptiActivityGetNextRecord, b.dropped);
  g->pool.Release(b.data);
}

// Translates every queued buffer on the calling thread. Once it returns, no
// buffer queued before the call is left or still being translated.
void DrainCompleted() {
  std::lock_guard<std::mutex> lock(g->translate_mu);
  CompletedBuffer b;
  bool any = false;
  while (g->completed.Pop(&b)) {
    TranslateLocked(b);
    any = true;
  }
  if (any) CheckZeroTimestamps();
}

void TranslateLoop() {
  while (g->completed.WaitForWork()) DrainCompleted();
}

void CUPTIAPI OnBufferCompleted(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t size,
                                size_t valid) {
  if (g_in_child.load()) return;  // a child has no CUPTI threads; never touch CUPTI there
  // CUPTI's count is per process since CUDA 6 (ctx and stream are null).
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) != CUPTI_SUCCESS) dropped = 0;
  const CompletedBuffer b{buffer, valid, dropped};
  if (g->queue_completed.load() && g->completed.Push(b)) return;
  std::lock_guard<std::mutex> lock(g->translate_mu);
  TranslateLocked(b);
  CheckZeroTimestamps();
}

// Detaches CUPTI at the exit of a CUDA API call, for the switch of clock
// method; the flusher attaches again.
void DetachForSwitch() {
  std::unique_lock<std::mutex> lock(g->control_mu, std::try_to_lock);
  if (!lock.owns_lock() || !g->attached.load() || g->method != ClockMethod::kCallback) return;
  cuptiEnableDomain(0, g->subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
  cuptiEnableDomain(0, g->subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
  g->api_callbacks_on = false;
  EnableKinds(false);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  DrainCompleted();  // kernel names must be read while CUPTI still holds them
  g->attached.store(false);
  cuptiFinalize();  // also drops the timestamp callback
  g->subscriber = nullptr;
  g->reattach_pending.store(true);
  g->wake.notify_all();
}

void CUPTIAPI OnCallback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                         const void* data) {
  if (g_in_child.load() || !g->attached.load()) return;
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
    // The context's records must be out, and read, before it goes away.
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    DrainCompleted();
    return;
  }
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING) {
    // Queued records may name the module's kernels: read them while the
    // names are still there, as translating in CUPTI's callback did.
    DrainCompleted();
    return;
  }
  if ((domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) &&
      static_cast<const CUpti_CallbackData*>(data)->callbackSite == CUPTI_API_EXIT &&
      g->switch_requested.load()) {
    DetachForSwitch();
  }
}

// --- attach -------------------------------------------------------------------

// Subscribes and starts recording with `method`. Called with control_mu held
// (or before the flusher exists).
bool Attach(ClockMethod method, ClockReason reason) {
  CUptiResult r = cuptiSubscribe(&g->subscriber, OnCallback, nullptr);
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    Say("another CUPTI client (a profiler such as nsys or torch.profiler) is subscribed; "
        "GPU activity is not traced");
    return false;
  }
  if (r != CUPTI_SUCCESS) {
    Say("cannot subscribe to CUPTI (%s); GPU activity is not traced", ErrorText(r));
    return false;
  }
  cuptiEnableCallback(1, g->subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                      CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
  if (g->tuning.translate_thread) {
    cuptiEnableCallback(1, g->subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                        CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING);
  }
  // The timestamp callback must be in place before any kind is enabled.
  if (method == ClockMethod::kCallback &&
      (r = cuptiActivityRegisterTimestampCallback(g->api.now_ns)) != CUPTI_SUCCESS) {
    Say("CUPTI refused dlprof's clock (%s); converting CUPTI's timestamps", ErrorText(r));
    method = ClockMethod::kConvert;
  }
  if (g->kinds & (kCudaRuntime | kCudaDriver)) {
    // API records then carry the tid that dlprof records for the thread.
    cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  }
  r = cuptiActivityRegisterCallbacks(OnBufferRequested, OnBufferCompleted);
  if (r != CUPTI_SUCCESS) {
    Say("cannot register CUPTI buffers (%s); GPU activity is not traced", ErrorText(r));
    cuptiUnsubscribe(g->subscriber);
    g->subscriber = nullptr;
    return false;
  }
  g->method = method;
  SyncClock(reason);
  g->attached.store(true);
  if (g->api.gpu_attached) g->api.gpu_attached();  // the data stall, from now on
  EnableKinds(true);
  // CUPTI's worker returns full buffers on this period; the flusher below
  // returns partly filled ones.
  cuptiActivityFlushPeriod(g->tuning.flush_ms);
  return true;
}

void FlusherLoop() {
  std::unique_lock<std::mutex> lock(g->control_mu);
  while (!g->stop) {
    g->wake.wait_for(lock, std::chrono::milliseconds(g->tuning.flush_ms));
    if (g->stop || g_in_child.load()) break;
    if (g->reattach_pending.exchange(false)) {
      Attach(ClockMethod::kConvert, ClockReason::kZeroTimestamps);
    }
    if (!g->attached.load()) continue;
    if (g->switch_requested.load() && !g->api_callbacks_on &&
        g->method == ClockMethod::kCallback) {
      // The detach happens at the next API exit, on an application thread.
      cuptiEnableDomain(1, g->subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
      cuptiEnableDomain(1, g->subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
      g->api_callbacks_on = true;
    }
    if (g->method == ClockMethod::kConvert && g->api.now_ns() - g->last_sync_ns >= kResyncNs) {
      SyncClock(ClockReason::kRefresh);
    }
    cuptiActivityFlushAll(0);
  }
}

void AtExit() {
  if (g_in_child.load() || g == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(g->control_mu);
    g->stop = true;
  }
  g->wake.notify_all();
  if (g->flusher.joinable()) g->flusher.join();
  if (g->attached.load()) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  // From here on buffers are translated where they complete; the translate
  // thread finishes the queue and ends, and what raced in is drained here.
  g->queue_completed.store(false);
  g->completed.Close();
  if (g->translate_thread.joinable()) g->translate_thread.join();
  DrainCompleted();
  uint64_t no_times = 0, dropped = 0;
  {
    std::lock_guard<std::mutex> lock(g->translate_mu);
    no_times = g->translator.stats().no_timestamps;
    dropped = g->translator.stats().dropped_by_cupti;
  }
  uint64_t refused = g->pool.refused();
  if (no_times || dropped || refused) {
    Say("GPU records lost: %llu without timestamps, %llu dropped by CUPTI "
        "(%llu buffer requests refused at the %zu MiB limit)",
        static_cast<unsigned long long>(no_times), static_cast<unsigned long long>(dropped),
        static_cast<unsigned long long>(refused),
        g->pool.max_buffers() * g->pool.buffer_bytes() >> 20);
  }
}

void OnForkChild() { g_in_child.store(true); }

void Start() {
  HostApi api;
  if (!api.Load()) return;  // dlprof is not preloaded here
  if (!api.module_enabled("cuda")) return;
  PluginTuning tuning = ParseTuning(std::getenv("DLPROF_CUPTI_BUFFER_KB"),
                                    std::getenv("DLPROF_CUPTI_FLUSH_MS"),
                                    std::getenv("DLPROF_CUPTI_TRANSLATE"));
  g = new State(tuning);
  g->api = api;
  if (!tuning.warning.empty()) Say("%s", tuning.warning.c_str());

  uint32_t version = 0;
  cuptiGetVersion(&version);
  g->cupti_version = version;
  if (CuptiMajorOf(version) != kCuptiMajor) {
    Say("libcupti has API version %u, dlprof was built for CUDA %u; GPU activity is not traced",
        version, kCuptiMajor);
    return;
  }
  std::string warning;
  g->kinds = ParseCudaKinds(api.cuda_kinds(), &warning);
  if (!warning.empty()) Say("%s", warning.c_str());
  // (Asked for by name only: "all" is what CUPTI records.)
  if (g->kinds & kCudaNvtx) {
    Say("DLPROF_CUDA=nvtx: NVTX ranges are recorded through NVTX injection whatever "
        "DLPROF_CUDA says, not through CUPTI");
  }
  ClockChoice clock = ChooseClockMethod(std::getenv("DLPROF_CUPTI_CLOCK"), version);
  if (!clock.note.empty()) Say("%s", clock.note.c_str());

  pthread_atfork(nullptr, nullptr, OnForkChild);
  if (g->tuning.translate_thread) {
    // Before Attach: CUPTI may complete a buffer as soon as kinds are on.
    g->translate_thread = std::thread(TranslateLoop);
    g->queue_completed.store(true);
  }
  if (!Attach(clock.method, clock.reason)) {
    g->queue_completed.store(false);
    g->completed.Close();
    if (g->translate_thread.joinable()) g->translate_thread.join();
    return;
  }
  std::atexit(AtExit);
  g->flusher = std::thread(FlusherLoop);
}

}  // namespace
}  // namespace dlprof::cupti

// The CUDA driver's injection entry point (CUDA_INJECTION64_PATH), called
// once during cuInit.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  static std::atomic<bool> started{false};
  if (!started.exchange(true) && !dlprof::cupti::g_in_child.load()) dlprof::cupti::Start();
  return 1;
}
