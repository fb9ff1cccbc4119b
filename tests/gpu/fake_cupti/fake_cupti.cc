// A stand-in libcupti.so.13 for running the CUPTI plugin on a machine
// without a GPU (tests/gpu/fake_cupti_test.py). It implements the CUPTI
// calls the plugin makes, with the documented behaviour that matters to it:
// buffers requested from and returned through the client's callbacks,
// records timed by the registered timestamp callback (or CLOCK_REALTIME,
// CUPTI's default on Linux), API-exit and context-destroy callbacks,
// cuptiFinalize detaching everything. The "GPU work" is driven by the
// fake_* functions at the end, which the test program calls.
//
// FAKE_CUPTI_ZERO=1 reproduces the CUDA 12.6u2-13.0 bug: kernels get zero
// timestamps while a timestamp callback is registered.
// FAKE_CUPTI_SUBSCRIBED=1: another client holds the subscription.
// FAKE_CUPTI_DROPPED=N: the first buffer completion reports N dropped records.
#include <time.h>
#include <unistd.h>

#include <cstdio>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include <cupti.h>

#include "lib/cupti/cupti_records.h"

namespace {

using dlprof::cupti::ApiRecord;
using dlprof::cupti::KernelRecord;

std::mutex mu;
CUpti_CallbackFunc subscriber_fn = nullptr;
void* subscriber_data = nullptr;
bool runtime_domain = false;
bool destroy_callback = false;
CUpti_BuffersCallbackRequestFunc request_fn = nullptr;
CUpti_BuffersCallbackCompleteFunc complete_fn = nullptr;
CUpti_TimestampCallbackFunc timestamp_fn = nullptr;
bool kernels_on = false, runtime_on = false;
uint8_t* buffer = nullptr;
size_t buffer_size = 0, used = 0;
uint32_t correlation = 0;
int finalizes = 0, subscribes = 0;
size_t dropped_pending = 0;
bool dropped_reported = false;
int sub_handle;

uint64_t Realtime() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

uint64_t Now() { return timestamp_fn ? timestamp_fn() : Realtime(); }

// A forked child must never call CUPTI: say so loudly if one does.
pid_t first_pid = 0;
void CheckPid(const char* fn) {
  pid_t me = getpid();
  if (first_pid == 0) first_pid = me;
  if (me != first_pid) fprintf(stderr, "FAKE_CUPTI: %s called in forked child %d\n", fn, me);
}

size_t Align8(size_t n) { return (n + 7) & ~size_t{7}; }

// Appends a record to the current buffer, asking the client for one when
// needed. Called with mu held; the request callback takes none of our locks.
template <typename T>
void Append(const T& r) {
  if (buffer != nullptr && used + Align8(sizeof(T)) > buffer_size) {
    ++dropped_pending;  // full; the tests never get here
    return;
  }
  if (buffer == nullptr) {
    size_t max_records = 0;
    request_fn(&buffer, &buffer_size, &max_records);
    used = 0;
    if (buffer == nullptr) {
      ++dropped_pending;
      return;
    }
  }
  std::memcpy(buffer + used, &r, sizeof(T));
  used += Align8(sizeof(T));
}

}  // namespace

extern "C" {

CUptiResult cuptiGetVersion(uint32_t* version) {
  CheckPid("cuptiGetVersion");
  const char* v = getenv("FAKE_CUPTI_VERSION");
  *version = v ? uint32_t(atoi(v)) : 130001;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetResultString(CUptiResult result, const char** str) {
  CheckPid("cuptiGetResultString");
  *str = result == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "CUPTI_ERROR_FAKE";
  return CUPTI_SUCCESS;
}

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                           void* userdata) {
  CheckPid("cuptiSubscribe");
  std::lock_guard<std::mutex> lock(mu);
  if (getenv("FAKE_CUPTI_SUBSCRIBED") || subscriber_fn) {
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  subscriber_fn = callback;
  subscriber_data = userdata;
  ++subscribes;
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&sub_handle);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle) {
  CheckPid("cuptiUnsubscribe");
  std::lock_guard<std::mutex> lock(mu);
  subscriber_fn = nullptr;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain d,
                                CUpti_CallbackId cbid) {
  CheckPid("cuptiEnableCallback");
  std::lock_guard<std::mutex> lock(mu);
  if (d == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
    destroy_callback = enable != 0;
  }
  return CUPTI_SUCCESS;
}

CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain d) {
  CheckPid("cuptiEnableDomain");
  std::lock_guard<std::mutex> lock(mu);
  if (d == CUPTI_CB_DOMAIN_RUNTIME_API) runtime_domain = enable != 0;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain, uint32_t, const char** name) {
  CheckPid("cuptiGetCallbackName");
  *name = "cudaLaunchKernel_v7000";
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn) {
  CheckPid("cuptiActivityRegisterTimestampCallback");
  std::lock_guard<std::mutex> lock(mu);
  if (fn == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  timestamp_fn = fn;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiSetThreadIdType(CUpti_ActivityThreadIdType) { return CUPTI_SUCCESS; }

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                           CUpti_BuffersCallbackCompleteFunc complete) {
  CheckPid("cuptiActivityRegisterCallbacks");
  std::lock_guard<std::mutex> lock(mu);
  request_fn = request;
  complete_fn = complete;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  CheckPid("cuptiActivityEnable");
  std::lock_guard<std::mutex> lock(mu);
  if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) kernels_on = true;
  if (kind == CUPTI_ACTIVITY_KIND_RUNTIME) runtime_on = true;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  CheckPid("cuptiActivityDisable");
  std::lock_guard<std::mutex> lock(mu);
  if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) kernels_on = false;
  if (kind == CUPTI_ACTIVITY_KIND_RUNTIME) runtime_on = false;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityFlushPeriod(uint32_t) { return CUPTI_SUCCESS; }

CUptiResult cuptiGetTimestamp(uint64_t* timestamp) {
  CheckPid("cuptiGetTimestamp");
  std::lock_guard<std::mutex> lock(mu);
  *timestamp = Now();
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityFlushAll(uint32_t) {
  CheckPid("cuptiActivityFlushAll");
  uint8_t* b;
  size_t size, valid;
  CUpti_BuffersCallbackCompleteFunc complete;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (complete_fn == nullptr) return CUPTI_ERROR_INVALID_OPERATION;
    b = buffer;
    size = buffer_size;
    valid = used;
    complete = complete_fn;
    buffer = nullptr;
    used = 0;
  }
  // Like CUPTI: the client gets the buffer on the flushing thread, with no
  // CUPTI lock held.
  if (b != nullptr) complete(nullptr, 0, b, size, valid);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  CheckPid("cuptiActivityGetNumDroppedRecords");
  std::lock_guard<std::mutex> lock(mu);
  *dropped = dropped_pending;
  dropped_pending = 0;
  if (!dropped_reported) {
    dropped_reported = true;
    if (const char* n = getenv("FAKE_CUPTI_DROPPED")) *dropped += size_t(atoi(n));
  }
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNextRecord(uint8_t* buf, size_t valid, CUpti_Activity** record) {
  CheckPid("cuptiActivityGetNextRecord");
  size_t at = 0;
  if (*record != nullptr) {
    size_t size = (*record)->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? sizeof(ApiRecord)
                                                                  : sizeof(KernelRecord);
    at = size_t(reinterpret_cast<uint8_t*>(*record) - buf) + Align8(size);
  }
  if (at >= valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(buf + at);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiFinalize(void) {
  CheckPid("cuptiFinalize");
  std::lock_guard<std::mutex> lock(mu);
  subscriber_fn = nullptr;
  request_fn = nullptr;
  complete_fn = nullptr;
  timestamp_fn = nullptr;
  kernels_on = runtime_on = runtime_domain = destroy_callback = false;
  ++finalizes;
  return CUPTI_SUCCESS;
}

// --- the test program's "GPU" ----------------------------------------------------

// A kernel launch through the runtime: an API record and a kernel record
// (when enabled), then the API-exit callback (when enabled).
void fake_launch_kernel(const char* name) {
  CUpti_CallbackFunc fn = nullptr;
  void* data = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    uint32_t corr = ++correlation;
    uint64_t api_start = Now();
    const bool zero = timestamp_fn != nullptr && getenv("FAKE_CUPTI_ZERO");
    if (kernels_on && request_fn) {
      KernelRecord k;
      std::memset(&k, 0, sizeof(k));
      k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
      k.start = zero ? 0 : Now();
      k.end = zero ? 0 : k.start + 2000;
      // FAKE_CUPTI_DEVICE: the device this process's kernels run on (ranks
      // of one host each have their own).
      const char* device = getenv("FAKE_CUPTI_DEVICE");
      k.deviceId = device ? uint32_t(atoi(device)) : 0;
      k.contextId = 1;
      k.streamId = 7;
      k.gridX = k.gridY = k.gridZ = 1;
      k.blockX = 32;
      k.blockY = k.blockZ = 1;
      k.registersPerThread = 8;
      k.correlationId = corr;
      k.name = name;
      Append(k);
    }
    if (runtime_on && request_fn) {
      ApiRecord a;
      std::memset(&a, 0, sizeof(a));
      a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
      a.cbid = 211;
      a.start = api_start;
      a.end = Now();
      a.correlationId = corr;
      Append(a);
    }
    if (runtime_domain) {
      fn = subscriber_fn;
      data = subscriber_data;
    }
  }
  if (fn) {
    CUpti_CallbackData cb;
    std::memset(&cb, 0, sizeof(cb));
    cb.callbackSite = CUPTI_API_EXIT;
    cb.functionName = "cudaLaunchKernel";
    fn(data, CUPTI_CB_DOMAIN_RUNTIME_API, 211, &cb);
  }
}

void fake_destroy_context(void) {
  CUpti_CallbackFunc fn = nullptr;
  void* data = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (destroy_callback) {
      fn = subscriber_fn;
      data = subscriber_data;
    }
  }
  if (fn) {
    CUpti_ResourceData rd;
    std::memset(&rd, 0, sizeof(rd));
    fn(data, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, &rd);
  }
}

int fake_finalize_count(void) {
  std::lock_guard<std::mutex> lock(mu);
  return finalizes;
}

int fake_subscribe_count(void) {
  std::lock_guard<std::mutex> lock(mu);
  return subscribes;
}

}  // extern "C"
