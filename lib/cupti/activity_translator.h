// Turns CUPTI activity records into dlprof events.
//
// Pure translation: the translator reads records and writes events through
// TranslatorHost, and never calls CUPTI, so CPU tests can feed it
// synthetic buffers built from the real structs. The plugin supplies a host
// that interns with dlprof_plugin_intern, records with dlprof_plugin_record
// and names API functions with cuptiGetCallbackName.
//
// Event fields for cat=cuda (docs/CUDA.md has the table):
//   file    string id of the name (demangled kernel, "memcpy HtoD", "memset",
//           synchronization type, API function)
//   fd      device id (-1 for synchronization and API records)
//   offset  stream id (-1 when none); the calling thread's tid for API records
//   aux     correlation id
//   size    bytes for copies and memsets
//   ret     kernels, copies, memsets: string id of a description such as
//           "grid=(x,y,z) block=(x,y,z) regs=N smem=S ctx=C"; synchronization
//           and API records: the CUDA return code
//
// Not thread-safe: the plugin translates one buffer at a time.
#ifndef DLPROF_LIB_CUPTI_ACTIVITY_TRANSLATOR_H_
#define DLPROF_LIB_CUPTI_ACTIVITY_TRANSLATOR_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>

#include "dlprof/format.h"
#include "lib/cupti/clock_sync.h"
#include "lib/cupti/cupti_records.h"
#include "lib/cupti/id_cache.h"

namespace dlprof::cupti {

enum class ApiDomain { kRuntime, kDriver };

class TranslatorHost {
 public:
  virtual ~TranslatorHost() = default;
  // The string id for an event's `file`/`ret`; 0 when it cannot be had.
  virtual uint32_t Intern(const char* text, size_t len) = 0;
  virtual void Record(const Event& event) = 0;
  // Records that cannot be written (no timestamps): they count as dropped.
  virtual void CountDropped(uint64_t count) = 0;
  // CUPTI's name of an API function, or nullptr.
  virtual const char* ApiName(ApiDomain domain, uint32_t cbid) = 0;
};

struct TranslatorStats {
  uint64_t recorded = 0;
  uint64_t no_timestamps = 0;  // start 0 or end before start: counted, not recorded
  uint64_t other_kinds = 0;    // record kinds this translator does not handle
  uint64_t dropped_by_cupti = 0;
};

// The contract of cuptiActivityGetNextRecord: CUPTI_SUCCESS and the next
// record, or another status at the end of the buffer.
using NextRecordFn = CUptiResult (*)(uint8_t* buffer, size_t valid_bytes, CUpti_Activity** record);

class ActivityTranslator {
 public:
  explicit ActivityTranslator(TranslatorHost* host) : host_(host) {}

  // How timestamps reach our clock: callback (offset 0, and the
  // zero-timestamp detector watches) or convert with `offset_ns`.
  void SetClock(ClockMethod method, int64_t offset_ns);
  ClockMethod clock_method() const { return method_; }
  int64_t clock_offset() const { return offset_ns_; }

  // Translates every record of a completed buffer; returns how many.
  // `cupti_dropped` is CUPTI's count of records it had no buffer space for
  // (cuptiActivityGetNumDroppedRecords): it goes into the trace's count.
  size_t TranslateBuffer(uint8_t* buffer, size_t valid_bytes, NextRecordFn next,
                         uint64_t cupti_dropped = 0);
  // One record; true if an event was recorded.
  bool Translate(const CUpti_Activity* record);

  bool zero_timestamps_detected() const { return detector_.tripped(); }
  const ZeroTimestampDetector& detector() const { return detector_; }
  const TranslatorStats& stats() const { return stats_; }

 private:
  struct LaunchKey {
    int32_t v[9];
    bool operator==(const LaunchKey& o) const { return std::memcmp(v, o.v, sizeof(v)) == 0; }
  };
  struct LaunchKeyHash {
    size_t operator()(const LaunchKey& k) const;
  };
  // A kernel's name id, and the launch configuration it had last: a kernel
  // is usually launched with the same grid again and again.
  struct KernelName {
    std::string raw;
    uint32_t id;
    LaunchKey last_launch{};
    uint32_t last_launch_id = 0;  // 0: none yet
  };
  // The direct-mapped front of kernel_by_ptr_ (bench/cupti_bench.cc: the
  // hash-map lookups were most of a kernel record's cost).
  static constexpr int kKernelSlotBits = 8;
  struct KernelSlot {
    const char* ptr = nullptr;
    KernelName* entry = nullptr;
  };

  // Fills start_ns/dur_ns; false (and counted) when the record has no usable times.
  bool Times(uint64_t start, uint64_t end, bool gpu_timed, Event* e);
  // Copies and memsets: where the work ran, its bytes, and its launch.
  void RecordGpuWork(Event* e, uint32_t device, uint32_t stream, uint64_t bytes,
                     uint32_t correlation);
  uint32_t InternCached(const std::string& text);
  // The entry of a non-null kernel name; nullptr when it cannot be interned.
  KernelName* KernelEntry(const char* name);
  uint32_t LaunchConfigId(const KernelRecord& k, KernelName* entry);
  uint32_t ApiNameId(ApiDomain domain, uint32_t cbid);

  bool Kernel(const KernelRecord& k);
  bool Memcpy(const MemcpyRecord& m);
  bool MemcpyP2P(const MemcpyP2PRecord& m);
  bool Memset(const MemsetRecord& m);
  bool Sync(const SyncRecord& s);
  bool Api(const ApiRecord& a, ApiDomain domain);

  TranslatorHost* host_;
  ClockMethod method_ = ClockMethod::kCallback;
  int64_t offset_ns_ = 0;
  ZeroTimestampDetector detector_;
  TranslatorStats stats_;
  // String ids never change in a process, so each distinct string is
  // interned once; kernel names by CUPTI's pointer first (checked against
  // the text, since a pointer may be reused after a module unloads).
  std::unordered_map<const void*, KernelName> kernel_by_ptr_;  // nodes stay put
  std::array<KernelSlot, size_t{1} << kKernelSlotBits> kernel_slots_{};
  std::unordered_map<std::string, uint32_t> by_text_;
  std::unordered_map<LaunchKey, uint32_t, LaunchKeyHash> launch_;
  IdCache copy_name_;    // by copy kind
  IdCache copy_desc_;    // by kinds and context
  IdCache memset_desc_;  // by memory kind and context
  IdCache sync_name_;    // by synchronization type
  IdCache api_name_;     // by domain and cbid
  uint32_t memset_name_ = 0;
};

// Helpers, exposed for the tests.
// The demangled name of a mangled C++ name ("_Z..."); others unchanged.
std::string DemangleKernelName(const char* name);
const char* MemcpyKindName(uint32_t copy_kind);  // "HtoD", "DtoH", ...
const char* MemoryKindName(uint32_t memory_kind);  // "pageable", "device", ...
const char* SyncTypeName(uint32_t type);          // "stream synchronize", ...
// Drops CUPTI's "_vNNNN" API version suffix (cudaMemcpy_v3020 -> cudaMemcpy),
// keeping the suffixes that are part of a driver function's name (_v2).
std::string CleanApiName(const char* name);

}  // namespace dlprof::cupti

#endif  // DLPROF_LIB_CUPTI_ACTIVITY_TRANSLATOR_H_
