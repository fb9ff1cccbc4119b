// NVTX ranges and marks, through NVTX's injection interface, recorded as
// the C API's regions are (regions.h: the events' layout).
//
// The NVTX loader (nvtx3/nvtxDetail/nvtxInit.h; libnvToolsExt.so.1 does the
// same) dlopen()s NVTX_INJECTION64_PATH, which lib/core/nvtx_injection.cc
// points at this library, and calls InitializeInjectionNvtx2 with its
// export-table getter; we put our functions into the CORE and CORE2 tables.
// Slots we leave empty become no-ops. The types below mirror the NVTX
// headers (binary interface, stable since NVTX 2), so dlprof builds without
// them.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <cwchar>

#include "dlprof/format.h"
#include "lib/api/regions.h"
#include "lib/core/clock.h"
#include "lib/core/raw_log.h"
#include "lib/core/runtime.h"

namespace dlprof::api {
namespace {

using core::CurrentThread;
using core::ErrnoSaver;
using core::ThreadContext;


using NvtxFunctionPointer = void (*)(void);
using NvtxFunctionTable = NvtxFunctionPointer**;
using NvtxGetExportTable = const void* (*)(uint32_t);

struct NvtxExportTableCallbacks {
  size_t struct_size;
  int (*GetModuleFunctionTable)(int module, NvtxFunctionTable* out_table,
                                unsigned int* out_size);
};

struct NvtxExportTableVersionInfo {
  size_t struct_size;
  uint32_t version;
  uint32_t reserved0;
  void (*SetInjectionNvtxVersion)(uint32_t version);
};

constexpr uint32_t kNvtxEtidCallbacks = 1;
constexpr uint32_t kNvtxEtidVersionInfo = 3;
constexpr int kNvtxModuleCore = 1;
constexpr int kNvtxModuleCore2 = 5;

// NvtxCallbackIdCore
enum : unsigned {
  kCoreMarkEx = 1, kCoreMarkA, kCoreMarkW, kCoreRangeStartEx, kCoreRangeStartA,
  kCoreRangeStartW, kCoreRangeEnd, kCoreRangePushEx, kCoreRangePushA, kCoreRangePushW,
  kCoreRangePop,
};
// NvtxCallbackIdCore2
enum : unsigned {
  kCore2DomainMarkEx = 1, kCore2DomainRangeStartEx, kCore2DomainRangeEnd,
  kCore2DomainRangePushEx, kCore2DomainRangePop, kCore2DomainResourceCreate,
  kCore2DomainResourceDestroy, kCore2DomainNameCategoryA, kCore2DomainNameCategoryW,
  kCore2DomainRegisterStringA, kCore2DomainRegisterStringW, kCore2DomainCreateA,
  kCore2DomainCreateW, kCore2DomainDestroy, kCore2Initialize,
};

constexpr int32_t kNvtxMessageAscii = 1;
constexpr int32_t kNvtxMessageUnicode = 2;
constexpr int32_t kNvtxMessageRegistered = 3;

// nvtxEventAttributes_v2 (v1 has the same layout).
struct NvtxEventAttributes {
  uint16_t version;
  uint16_t size;
  uint32_t category;
  int32_t color_type;
  uint32_t color;
  int32_t payload_type;
  int32_t reserved0;
  uint64_t payload;
  int32_t message_type;
  const void* message;
};
static_assert(offsetof(NvtxEventAttributes, message) == 40, "nvtxEventAttributes_v2 layout");

// A registered string's or domain's handle is its string id; NVTX treats
// handles as opaque and never dereferences them.
void* IdHandle(uint32_t id) { return reinterpret_cast<void*>(static_cast<uintptr_t>(id)); }
uint32_t HandleId(const void* h) {
  uintptr_t v = reinterpret_cast<uintptr_t>(h);
  return v <= UINT32_MAX ? static_cast<uint32_t>(v) : 0;
}

// Converts a wide string (UTF-32 on Linux) to UTF-8 in `out`.
size_t WideToUtf8(const wchar_t* w, char* out, size_t cap) {
  size_t n = 0;
  for (size_t i = 0; w[i] != 0 && i < kMaxNameBytes; ++i) {
    uint32_t c = static_cast<uint32_t>(w[i]);
    char buf[4];
    size_t k;
    if (c < 0x80) {
      buf[0] = static_cast<char>(c);
      k = 1;
    } else if (c < 0x800) {
      buf[0] = static_cast<char>(0xC0 | (c >> 6));
      buf[1] = static_cast<char>(0x80 | (c & 0x3F));
      k = 2;
    } else if (c < 0x10000) {
      buf[0] = static_cast<char>(0xE0 | (c >> 12));
      buf[1] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      buf[2] = static_cast<char>(0x80 | (c & 0x3F));
      k = 3;
    } else if (c < 0x110000) {
      buf[0] = static_cast<char>(0xF0 | (c >> 18));
      buf[1] = static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      buf[2] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      buf[3] = static_cast<char>(0x80 | (c & 0x3F));
      k = 4;
    } else {
      buf[0] = '?';
      k = 1;
    }
    if (n + k > cap) break;
    std::memcpy(out + n, buf, k);
    n += k;
  }
  return n;
}

// The string id of an NVTX message (0: none or not recording).
uint32_t InternWide(const wchar_t* w) {
  if (w == nullptr) return 0;
  char buf[1024];
  size_t n = WideToUtf8(w, buf, sizeof(buf));
  return InternName(buf, n);
}

uint32_t MessageId(const NvtxEventAttributes* a) {
  if (a == nullptr || a->size < offsetof(NvtxEventAttributes, message) + sizeof(void*)) return 0;
  switch (a->message_type) {
    case kNvtxMessageAscii: return InternCString(static_cast<const char*>(a->message));
    case kNvtxMessageUnicode: return InternWide(static_cast<const wchar_t*>(a->message));
    case kNvtxMessageRegistered: return HandleId(a->message);
    default: return InternName("", 0);
  }
}

// The message as a string id, computed only while recording.
template <typename F>
uint32_t RecordingId(EventKind kind, F&& intern) {
  ThreadContext& t = CurrentThread();
  if (!AppEnabled(t, kind)) return 0;
  t.internal = true;
  uint32_t id = intern();
  t.internal = false;
  return id;
}

// --- push / pop: per thread and per domain -----------------------------------
//
// NVTX nests push/pop ranges per domain: a domain's pop ends that domain's
// latest push, whatever other domains pushed since (two libraries' ranges
// interleave). One stack per thread holds them all, each range tagged with
// its domain (0: the default one, nvtxRangePush* or a null domain); a pop
// takes its domain's topmost range out of the middle if need be. No lock,
// no allocation: the stack is a trivially constructed thread_local.

struct NvtxStack {
  RegionStack ranges;
  uint32_t domain[RegionStack::kMaxDepth];  // of each open range
};
thread_local NvtxStack tls_nvtx;

// A domain's handle is its name's string id (NvtxDomainCreateA below).
uint32_t DomainKey(const void* domain) { return HandleId(domain); }

// The domain's ranges open on this thread.
int Level(uint32_t domain) {
  int n = 0;
  for (uint32_t i = 0; i < tls_nvtx.ranges.depth; ++i) n += tls_nvtx.domain[i] == domain;
  return n;
}

int PushId(const void* domain, uint32_t id) {
  ErrnoSaver keep;
  EnsureRegionHooks();
  const uint32_t key = DomainKey(domain);
  RegionStack& st = tls_nvtx.ranges;
  // Past the recorded depth ranges are only counted, whatever their domain.
  const int level = Level(key) + static_cast<int>(st.overflow);
  if (st.depth < RegionStack::kMaxDepth) tls_nvtx.domain[st.depth] = key;
  st.Push(id, core::NowNs());
  return level;
}

// Ends the domain's latest range; returns its level, or -1 if none is open.
int PopDomain(uint32_t key) {
  const uint64_t now = core::NowNs();
  RegionStack& st = tls_nvtx.ranges;
  if (st.overflow > 0) {  // not recorded (as RegionStack::Pop)
    --st.overflow;
    return -1;
  }
  uint32_t i = st.depth;
  while (i > 0 && tls_nvtx.domain[i - 1] != key) --i;
  if (i == 0) return -1;
  const RegionStack::Frame f = st.frames[i - 1];
  for (uint32_t j = i; j < st.depth; ++j) {
    st.frames[j - 1] = st.frames[j];
    tls_nvtx.domain[j - 1] = tls_nvtx.domain[j];
  }
  --st.depth;
  const int level = Level(key);  // the domain's ranges below it
  EndFrame(f, EventKind::NvtxRange, now, level);
  return level;
}

int NvtxRangePushA(const char* m) {
  return PushId(nullptr, RecordingId(EventKind::NvtxRange, [&] { return InternCString(m); }));
}
int NvtxRangePushW(const wchar_t* m) {
  return PushId(nullptr, RecordingId(EventKind::NvtxRange, [&] { return InternWide(m); }));
}
int NvtxRangePushEx(const NvtxEventAttributes* a) {
  return PushId(nullptr, RecordingId(EventKind::NvtxRange, [&] { return MessageId(a); }));
}
int NvtxDomainRangePushEx(void* domain, const NvtxEventAttributes* a) {
  return PushId(domain, RecordingId(EventKind::NvtxRange, [&] { return MessageId(a); }));
}

int NvtxRangePop() {
  ErrnoSaver keep;
  return PopDomain(0);
}
int NvtxDomainRangePop(void* domain) {
  ErrnoSaver keep;
  return PopDomain(DomainKey(domain));
}

// --- marks -----------------------------------------------------------------

void MarkId(uint32_t id, const void* domain = nullptr) {
  if (id == 0) return;
  ThreadContext& t = CurrentThread();
  if (!AppEnabled(t, EventKind::NvtxMark)) return;
  Emit(t, EventKind::NvtxMark, id, core::NowNs(), 0, -1, 0,
       static_cast<uint64_t>(Level(DomainKey(domain))));
}

void NvtxMarkA(const char* m) {
  ErrnoSaver keep;
  MarkId(RecordingId(EventKind::NvtxMark, [&] { return InternCString(m); }));
}
void NvtxMarkW(const wchar_t* m) {
  ErrnoSaver keep;
  MarkId(RecordingId(EventKind::NvtxMark, [&] { return InternWide(m); }));
}
void NvtxMarkEx(const NvtxEventAttributes* a) {
  ErrnoSaver keep;
  MarkId(RecordingId(EventKind::NvtxMark, [&] { return MessageId(a); }));
}
void NvtxDomainMarkEx(void* domain, const NvtxEventAttributes* a) {
  ErrnoSaver keep;
  MarkId(RecordingId(EventKind::NvtxMark, [&] { return MessageId(a); }), domain);
}

// --- start / end: process-wide, may end on another thread ------------------
//
// An open range lives in one of kOpenRanges slots, chosen by its id; a range
// still open when kOpenRanges newer ones have started is forgotten (its end
// records nothing).

constexpr uint64_t kOpenRanges = 4096;
struct OpenRange {
  std::atomic<uint64_t> id;  // 0: free
  uint32_t name;
  uint64_t start_ns;
};
OpenRange g_open_ranges[kOpenRanges];
std::atomic<uint64_t> g_next_range_id{1};

uint64_t StartId(uint32_t name) {
  ErrnoSaver keep;
  const uint64_t id = g_next_range_id.fetch_add(1, std::memory_order_relaxed);
  if (name == 0) return id;
  OpenRange& r = g_open_ranges[id % kOpenRanges];
  r.id.store(0, std::memory_order_relaxed);
  r.name = name;
  r.start_ns = core::NowNs();
  r.id.store(id, std::memory_order_release);
  return id;
}

uint64_t NvtxRangeStartA(const char* m) {
  return StartId(RecordingId(EventKind::NvtxRange, [&] { return InternCString(m); }));
}
uint64_t NvtxRangeStartW(const wchar_t* m) {
  return StartId(RecordingId(EventKind::NvtxRange, [&] { return InternWide(m); }));
}
uint64_t NvtxRangeStartEx(const NvtxEventAttributes* a) {
  return StartId(RecordingId(EventKind::NvtxRange, [&] { return MessageId(a); }));
}
uint64_t NvtxDomainRangeStartEx(void*, const NvtxEventAttributes* a) {
  return NvtxRangeStartEx(a);
}

void NvtxRangeEnd(uint64_t id) {
  ErrnoSaver keep;
  const uint64_t now = core::NowNs();
  if (id == 0) return;
  OpenRange& r = g_open_ranges[id % kOpenRanges];
  uint64_t expected = id;
  if (r.id.load(std::memory_order_acquire) != id) return;
  const uint32_t name = r.name;
  const uint64_t start = r.start_ns;
  // Claim it; if a newer range took the slot meanwhile, what we read is not ours.
  if (!r.id.compare_exchange_strong(expected, 0, std::memory_order_acq_rel)) return;
  ThreadContext& t = CurrentThread();
  if (!AppEnabled(t, EventKind::NvtxRange)) return;
  Emit(t, EventKind::NvtxRange, name, start, now > start ? now - start : 0, -1, 0, 0);
}
void NvtxDomainRangeEnd(void*, uint64_t id) { NvtxRangeEnd(id); }

// --- domains and registered strings ----------------------------------------

uint32_t InternAlways(const char* s) {
  ThreadContext& t = CurrentThread();
  if (core::g_state.load(std::memory_order_relaxed) !=
      static_cast<int>(core::RuntimeState::kRunning)) {
    return 0;
  }
  const bool saved = t.internal;
  t.internal = true;
  uint32_t id = InternCString(s);
  t.internal = saved;
  return id;
}

void* NvtxDomainRegisterStringA(void*, const char* s) {
  ErrnoSaver keep;
  return IdHandle(InternAlways(s));
}
void* NvtxDomainRegisterStringW(void*, const wchar_t* s) {
  ErrnoSaver keep;
  char buf[1024];
  size_t n = s ? WideToUtf8(s, buf, sizeof(buf) - 1) : 0;
  buf[n] = '\0';
  return IdHandle(InternAlways(buf));
}
// A domain's handle must not be null (null means the default domain).
void* NvtxDomainCreateA(const char* name) {
  ErrnoSaver keep;
  uint32_t id = InternAlways(name);
  return IdHandle(id ? id : 1);
}
void* NvtxDomainCreateW(const wchar_t* name) {
  void* h = NvtxDomainRegisterStringW(nullptr, name);
  return h ? h : IdHandle(1);
}
void NvtxDomainDestroy(void*) {}
void NvtxInitialize(const void*) {}

template <typename F>
NvtxFunctionPointer Fn(F f) {
  return reinterpret_cast<NvtxFunctionPointer>(f);
}

void Fill(NvtxFunctionTable table, unsigned size, unsigned slot, NvtxFunctionPointer fn) {
  if (slot < size && table[slot] != nullptr) *table[slot] = fn;
}

}  // namespace

void NvtxForgetAfterFork() { tls_nvtx.ranges.ForgetNames(); }

void NvtxEndAllAtExit() {
  RegionStack& st = tls_nvtx.ranges;
  st.overflow = 0;
  while (st.depth > 0) PopDomain(tls_nvtx.domain[st.depth - 1]);
}

}  // namespace dlprof::api

extern "C" {

// Called by each NVTX instance in the process on its first NVTX call.
// Returns 1 when our functions are installed, 0 to leave NVTX as no-ops.
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    dlprof::api::NvtxGetExportTable get_export_table) {
  using namespace dlprof::api;
  dlprof::core::ErrnoSaver keep;
  if (get_export_table == nullptr) return 0;
  auto* cb = static_cast<const NvtxExportTableCallbacks*>(get_export_table(kNvtxEtidCallbacks));
  if (cb == nullptr || cb->struct_size < sizeof(NvtxExportTableCallbacks) ||
      cb->GetModuleFunctionTable == nullptr) {
    return 0;
  }
  if (auto* vi = static_cast<const NvtxExportTableVersionInfo*>(
          get_export_table(kNvtxEtidVersionInfo))) {
    if (vi->struct_size >= sizeof(NvtxExportTableVersionInfo) && vi->SetInjectionNvtxVersion) {
      vi->SetInjectionNvtxVersion(2);
    }
  }
  NvtxFunctionTable core = nullptr;
  unsigned core_size = 0;
  if (!cb->GetModuleFunctionTable(kNvtxModuleCore, &core, &core_size) || core == nullptr) {
    return 0;
  }
  Fill(core, core_size, kCoreMarkEx, Fn(&NvtxMarkEx));
  Fill(core, core_size, kCoreMarkA, Fn(&NvtxMarkA));
  Fill(core, core_size, kCoreMarkW, Fn(&NvtxMarkW));
  Fill(core, core_size, kCoreRangeStartEx, Fn(&NvtxRangeStartEx));
  Fill(core, core_size, kCoreRangeStartA, Fn(&NvtxRangeStartA));
  Fill(core, core_size, kCoreRangeStartW, Fn(&NvtxRangeStartW));
  Fill(core, core_size, kCoreRangeEnd, Fn(&NvtxRangeEnd));
  Fill(core, core_size, kCoreRangePushEx, Fn(&NvtxRangePushEx));
  Fill(core, core_size, kCoreRangePushA, Fn(&NvtxRangePushA));
  Fill(core, core_size, kCoreRangePushW, Fn(&NvtxRangePushW));
  Fill(core, core_size, kCoreRangePop, Fn(&NvtxRangePop));

  NvtxFunctionTable core2 = nullptr;
  unsigned core2_size = 0;
  if (cb->GetModuleFunctionTable(kNvtxModuleCore2, &core2, &core2_size) && core2 != nullptr) {
    Fill(core2, core2_size, kCore2DomainMarkEx, Fn(&NvtxDomainMarkEx));
    Fill(core2, core2_size, kCore2DomainRangeStartEx, Fn(&NvtxDomainRangeStartEx));
    Fill(core2, core2_size, kCore2DomainRangeEnd, Fn(&NvtxDomainRangeEnd));
    Fill(core2, core2_size, kCore2DomainRangePushEx, Fn(&NvtxDomainRangePushEx));
    Fill(core2, core2_size, kCore2DomainRangePop, Fn(&NvtxDomainRangePop));
    Fill(core2, core2_size, kCore2DomainRegisterStringA, Fn(&NvtxDomainRegisterStringA));
    Fill(core2, core2_size, kCore2DomainRegisterStringW, Fn(&NvtxDomainRegisterStringW));
    Fill(core2, core2_size, kCore2DomainCreateA, Fn(&NvtxDomainCreateA));
    Fill(core2, core2_size, kCore2DomainCreateW, Fn(&NvtxDomainCreateW));
    Fill(core2, core2_size, kCore2DomainDestroy, Fn(&NvtxDomainDestroy));
    Fill(core2, core2_size, kCore2Initialize, Fn(&NvtxInitialize));
  }
  return 1;
}

}  // extern "C"
