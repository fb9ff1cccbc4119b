// Synthetic CUPTI activity buffers, for running the plugin's translation
// without CUPTI or a GPU: records are the real CUPTI structs, laid out back
// to back on 8-byte boundaries as CUPTI lays them out, and NextRecord walks
// them with cuptiActivityGetNextRecord's contract, so the translator cannot
// tell them from the real thing. Header only, and in no build of the plugin:
// the unit tests of tests/unit/cupti and bench/cupti_bench.cc use it, each
// from here (neither builds on the other's tree).
#ifndef DLPROF_LIB_CUPTI_SYNTHETIC_BUFFER_H_
#define DLPROF_LIB_CUPTI_SYNTHETIC_BUFFER_H_

#include <cstring>
#include <vector>

#include "lib/cupti/cupti_records.h"

namespace dlprof::cupti::synthetic {

// The size of a record of `kind` as this test writes it; 0 if unknown.
inline size_t RecordSize(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(KernelRecord);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(MemcpyRecord);
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return sizeof(MemcpyP2PRecord);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(MemsetRecord);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(SyncRecord);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: return sizeof(ApiRecord);
    case CUPTI_ACTIVITY_KIND_CONTEXT: return sizeof(CUpti_ActivityContext3);
    default: return 0;
  }
}

inline size_t Align8(size_t n) { return (n + 7) & ~size_t{7}; }

class ActivityBuffer {
 public:
  template <typename Record>
  void Add(const Record& r) {
    size_t at = bytes_.size();
    bytes_.resize(Align8(at + sizeof(Record)), 0);
    std::memcpy(bytes_.data() + at, &r, sizeof(Record));
  }
  // The buffer CUPTI would hand over: aligned like ours (BufferPool).
  uint8_t* data() {
    aligned_.assign(bytes_.size() + 64, 0);
    uint8_t* p = aligned_.data();
    p += (64 - reinterpret_cast<uintptr_t>(p) % 64) % 64;
    std::memcpy(p, bytes_.data(), bytes_.size());
    return p;
  }
  size_t size() const { return bytes_.size(); }

  static CUptiResult NextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
    size_t at = 0;
    if (*record != nullptr) {
      auto* cur = reinterpret_cast<uint8_t*>(*record);
      size_t size = RecordSize((*record)->kind);
      if (size == 0) return CUPTI_ERROR_INVALID_KIND;
      at = static_cast<size_t>(cur - buffer) + Align8(size);
    }
    if (at + sizeof(CUpti_Activity) > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *record = reinterpret_cast<CUpti_Activity*>(buffer + at);
    return CUPTI_SUCCESS;
  }

 private:
  std::vector<uint8_t> bytes_;
  std::vector<uint8_t> aligned_;
};

}  // namespace dlprof::cupti::synthetic

#endif  // DLPROF_LIB_CUPTI_SYNTHETIC_BUFFER_H_
