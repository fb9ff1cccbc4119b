#include "lib/cupti/activity_translator.h"

#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dlprof::cupti {
namespace {

// Bounds the pointer cache: JIT-heavy jobs may load and unload modules, and
// a stale entry is harmless but should not pile up.
constexpr size_t kMaxKernelPointers = 1 << 16;

Event BlankEvent(EventKind kind) {
  Event e;
  std::memset(&e, 0, sizeof(e));
  e.kind = static_cast<uint16_t>(kind);
  e.fd = -1;
  e.offset = -1;
  return e;
}

}  // namespace

std::string DemangleKernelName(const char* name) {
  if (name == nullptr || name[0] == '\0') return "(unnamed kernel)";
  if (name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || d == nullptr) {
    std::free(d);
    return name;
  }
  std::string out(d);
  std::free(d);
  return out;
}

const char* MemcpyKindName(uint32_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "unknown";
  }
}

const char* MemoryKindName(uint32_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return "pageable";
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return "pinned";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE: return "device";
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return "array";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED: return "managed";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return "device_static";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return "managed_static";
    default: return "unknown";
  }
}

const char* SyncTypeName(uint32_t t) {
  switch (t) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "event synchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "stream wait event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "stream synchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "context synchronize";
    default: return "synchronization";
  }
}

std::string CleanApiName(const char* name) {
  std::string s(name ? name : "");
  size_t v = s.rfind("_v");
  if (v == std::string::npos || s.size() - v - 2 < 4) return s;
  for (size_t i = v + 2; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return s;
  }
  return s.substr(0, v);
}

size_t ActivityTranslator::LaunchKeyHash::operator()(const LaunchKey& k) const {
  // Independent multiplies of the key's 64-bit words (not a chain of
  // dependent ones as FNV is), then a fold of the high bits.
  uint64_t w[5] = {};
  std::memcpy(w, k.v, sizeof(k.v));
  uint64_t h = (w[0] ^ 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull +
               (w[1] ^ 0xD6E8FEB86659FD93ull) * 0x94D049BB133111EBull +
               (w[2] ^ 0xA0761D6478BD642Full) * 0xE7037ED1A0B428DBull +
               (w[3] ^ 0x8EBC6AF09C88C6E3ull) * 0x589965CC75374CC3ull +
               (w[4] ^ 0x1D8E4E27C47D124Full) * 0x9E3779B97F4A7C15ull;
  return static_cast<size_t>(h ^ (h >> 29));
}

void ActivityTranslator::SetClock(ClockMethod method, int64_t offset_ns) {
  method_ = method;
  offset_ns_ = method == ClockMethod::kConvert ? offset_ns : 0;
}

size_t ActivityTranslator::TranslateBuffer(uint8_t* buffer, size_t valid_bytes,
                                           NextRecordFn next, uint64_t cupti_dropped) {
  if (cupti_dropped > 0) {
    stats_.dropped_by_cupti += cupti_dropped;
    host_->CountDropped(cupti_dropped);
  }
  size_t n = 0;
  CUpti_Activity* record = nullptr;
  if (buffer == nullptr || valid_bytes == 0) return 0;
  while (next(buffer, valid_bytes, &record) == CUPTI_SUCCESS) {
    Translate(record);
    ++n;
  }
  return n;
}

bool ActivityTranslator::Translate(const CUpti_Activity* r) {
  bool ok = false;
  switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      ok = Kernel(*reinterpret_cast<const KernelRecord*>(r));
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      ok = Memcpy(*reinterpret_cast<const MemcpyRecord*>(r));
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      ok = MemcpyP2P(*reinterpret_cast<const MemcpyP2PRecord*>(r));
      break;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      ok = Memset(*reinterpret_cast<const MemsetRecord*>(r));
      break;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      ok = Sync(*reinterpret_cast<const SyncRecord*>(r));
      break;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      ok = Api(*reinterpret_cast<const ApiRecord*>(r), ApiDomain::kRuntime);
      break;
    case CUPTI_ACTIVITY_KIND_DRIVER:
      ok = Api(*reinterpret_cast<const ApiRecord*>(r), ApiDomain::kDriver);
      break;
    default:
      ++stats_.other_kinds;
      return false;
  }
  if (ok) ++stats_.recorded;
  return ok;
}

bool ActivityTranslator::Times(uint64_t start, uint64_t end, bool gpu_timed, Event* e) {
  // With the callback registered, GPU-timed records are where the CUDA
  // 12.6u2-13.0 bug shows (CPU-timed API records are unaffected).
  if (gpu_timed && method_ == ClockMethod::kCallback) {
    detector_.Observe(start == 0 && end == 0);
  }
  uint64_t s = ToOurClock(start, offset_ns_);
  uint64_t f = ToOurClock(end, offset_ns_);
  if (start == 0 || end < start || s == 0) {
    ++stats_.no_timestamps;
    host_->CountDropped(1);
    return false;
  }
  e->start_ns = s;
  e->dur_ns = f - s;
  return true;
}

uint32_t ActivityTranslator::InternCached(const std::string& text) {
  auto it = by_text_.find(text);
  if (it != by_text_.end()) return it->second;
  uint32_t id = host_->Intern(text.data(), text.size());
  if (id != 0) by_text_.emplace(text, id);  // 0 may be passing: ask again next time
  return id;
}

ActivityTranslator::KernelName* ActivityTranslator::KernelEntry(const char* name) {
  const uint64_t h = reinterpret_cast<uintptr_t>(name) * 0x9E3779B97F4A7C15ull;
  KernelSlot& slot = kernel_slots_[static_cast<size_t>(h >> (64 - kKernelSlotBits))];
  // The text decides, not the pointer alone (see kernel_by_ptr_).
  if (slot.ptr == name && std::strcmp(slot.entry->raw.c_str(), name) == 0) return slot.entry;
  auto it = kernel_by_ptr_.find(name);
  if (it == kernel_by_ptr_.end() || it->second.raw != name) {
    // The demangled text is the key: two mangled spellings of one name share it.
    uint32_t id = InternCached(DemangleKernelName(name));
    if (id == 0) return nullptr;
    if (kernel_by_ptr_.size() >= kMaxKernelPointers) {
      kernel_by_ptr_.clear();
      kernel_slots_.fill(KernelSlot{});  // they point into the map's nodes
    }
    it = kernel_by_ptr_.insert_or_assign(name, KernelName{name, id}).first;
  }
  slot = KernelSlot{name, &it->second};
  return &it->second;
}

uint32_t ActivityTranslator::LaunchConfigId(const KernelRecord& k, KernelName* entry) {
  const int32_t smem = k.staticSharedMemory + k.dynamicSharedMemory;
  LaunchKey key{{k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ,
                 static_cast<int32_t>(k.registersPerThread), smem,
                 static_cast<int32_t>(k.contextId)}};
  if (entry != nullptr && entry->last_launch_id != 0 && entry->last_launch == key) {
    return entry->last_launch_id;
  }
  uint32_t id = 0;
  auto it = launch_.find(key);
  if (it != launch_.end()) {
    id = it->second;
  } else {
    char text[160];
    std::snprintf(text, sizeof(text),
                  "grid=(%d,%d,%d) block=(%d,%d,%d) regs=%u smem=%d ctx=%u", k.gridX, k.gridY,
                  k.gridZ, k.blockX, k.blockY, k.blockZ,
                  static_cast<unsigned>(k.registersPerThread), smem, k.contextId);
    id = host_->Intern(text, std::strlen(text));
    if (id == 0) return 0;
    launch_.emplace(key, id);
  }
  if (entry != nullptr) {
    entry->last_launch = key;
    entry->last_launch_id = id;
  }
  return id;
}

uint32_t ActivityTranslator::ApiNameId(ApiDomain domain, uint32_t cbid) {
  const uint64_t key = (uint64_t{domain == ApiDomain::kDriver} << 32) | cbid;
  if (uint32_t id = api_name_.Find(key)) return id;
  const char* raw = host_->ApiName(domain, cbid);
  std::string name;
  if (raw != nullptr && raw[0] != '\0') {
    name = CleanApiName(raw);
  } else {
    name = std::string(domain == ApiDomain::kDriver ? "driver_cbid_" : "runtime_cbid_") +
           std::to_string(cbid);
  }
  uint32_t id = InternCached(name);
  api_name_.Put(key, id);
  return id;
}

bool ActivityTranslator::Kernel(const KernelRecord& k) {
  Event e = BlankEvent(EventKind::CudaKernel);
  if (!Times(k.start, k.end, /*gpu_timed=*/true, &e)) return false;
  KernelName* name = k.name != nullptr ? KernelEntry(k.name) : nullptr;
  e.file = name != nullptr ? name->id
                           : (k.name != nullptr ? 0 : InternCached(DemangleKernelName(nullptr)));
  e.fd = static_cast<int32_t>(k.deviceId);
  e.offset = k.streamId;
  e.aux = k.correlationId;
  e.ret = LaunchConfigId(k, name);
  host_->Record(e);
  return true;
}

void ActivityTranslator::RecordGpuWork(Event* e, uint32_t device, uint32_t stream,
                                       uint64_t bytes, uint32_t correlation) {
  e->fd = static_cast<int32_t>(device);
  e->offset = stream;
  e->size = bytes;
  e->aux = correlation;
  host_->Record(*e);
}

bool ActivityTranslator::Memcpy(const MemcpyRecord& m) {
  Event e = BlankEvent(EventKind::CudaMemcpy);
  if (!Times(m.start, m.end, /*gpu_timed=*/true, &e)) return false;
  // Copies are frequent: name and description are looked up by small keys.
  uint32_t name = copy_name_.Find(m.copyKind);
  if (name == 0) {
    name = InternCached(std::string("memcpy ") + MemcpyKindName(m.copyKind));
    copy_name_.Put(m.copyKind, name);
  }
  e.file = name;
  const uint64_t key = m.copyKind | (uint64_t{m.srcKind} << 8) | (uint64_t{m.dstKind} << 16) |
                       (uint64_t{m.contextId} << 24);
  uint32_t desc = copy_desc_.Find(key);
  if (desc == 0) {
    char text[128];
    std::snprintf(text, sizeof(text), "kind=%s src=%s dst=%s ctx=%u", MemcpyKindName(m.copyKind),
                  MemoryKindName(m.srcKind), MemoryKindName(m.dstKind), m.contextId);
    desc = host_->Intern(text, std::strlen(text));
    copy_desc_.Put(key, desc);
  }
  e.ret = desc;
  RecordGpuWork(&e, m.deviceId, m.streamId, m.bytes, m.correlationId);
  return true;
}

bool ActivityTranslator::MemcpyP2P(const MemcpyP2PRecord& m) {
  Event e = BlankEvent(EventKind::CudaMemcpyP2P);
  if (!Times(m.start, m.end, /*gpu_timed=*/true, &e)) return false;
  e.file = InternCached(std::string("memcpy ") + MemcpyKindName(m.copyKind));
  char text[160];
  std::snprintf(text, sizeof(text), "kind=%s src=%s dst=%s srcdev=%u dstdev=%u ctx=%u",
                MemcpyKindName(m.copyKind), MemoryKindName(m.srcKind), MemoryKindName(m.dstKind),
                m.srcDeviceId, m.dstDeviceId, m.contextId);
  e.ret = InternCached(text);
  RecordGpuWork(&e, m.deviceId, m.streamId, m.bytes, m.correlationId);
  return true;
}

bool ActivityTranslator::Memset(const MemsetRecord& m) {
  Event e = BlankEvent(EventKind::CudaMemset);
  if (!Times(m.start, m.end, /*gpu_timed=*/true, &e)) return false;
  // Like copies, by small keys: no string is built for a memset seen before.
  if (memset_name_ == 0) memset_name_ = InternCached("memset");
  e.file = memset_name_;
  const uint64_t key = m.memoryKind | (uint64_t{m.contextId} << 16);
  uint32_t desc = memset_desc_.Find(key);
  if (desc == 0) {
    char text[96];
    std::snprintf(text, sizeof(text), "mem=%s ctx=%u", MemoryKindName(m.memoryKind), m.contextId);
    desc = InternCached(text);
    memset_desc_.Put(key, desc);
  }
  e.ret = desc;
  RecordGpuWork(&e, m.deviceId, m.streamId, m.bytes, m.correlationId);
  return true;
}

bool ActivityTranslator::Sync(const SyncRecord& s) {
  Event e = BlankEvent(EventKind::CudaSync);
  if (!Times(s.start, s.end, /*gpu_timed=*/false, &e)) return false;
  uint32_t name = sync_name_.Find(s.type);
  if (name == 0) {
    name = InternCached(SyncTypeName(s.type));
    sync_name_.Put(s.type, name);
  }
  e.file = name;
  if (s.streamId != CUPTI_SYNCHRONIZATION_INVALID_VALUE) e.offset = s.streamId;
  e.aux = s.correlationId;
  e.ret = s.returnValue;
  host_->Record(e);
  return true;
}

bool ActivityTranslator::Api(const ApiRecord& a, ApiDomain domain) {
  Event e = BlankEvent(domain == ApiDomain::kDriver ? EventKind::CudaDriverApi
                                                     : EventKind::CudaRuntimeApi);
  if (!Times(a.start, a.end, /*gpu_timed=*/false, &e)) return false;
  e.file = ApiNameId(domain, a.cbid);
  e.offset = a.threadId;  // the plugin asks CUPTI for system thread ids
  e.aux = a.correlationId;
  e.ret = a.returnValue;
  host_->Record(e);
  return true;
}

}  // namespace dlprof::cupti
