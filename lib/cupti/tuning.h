// The plugin's buffer and flush settings, and the environment variables
// that change them for diagnosis (docs/CUDA.md, "Tuning"): bench/gpu_overhead.py
// compares them on a GPU to find where GPU tracing's cost goes. Pure
// parsing, no CUPTI, so the CPU tests cover it.
#ifndef DLPROF_LIB_CUPTI_TUNING_H_
#define DLPROF_LIB_CUPTI_TUNING_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace dlprof::cupti {

// Memory CUPTI may hold through the buffer pool, whatever the buffer size.
constexpr size_t kPoolBytes = size_t{64} << 20;

struct PluginTuning {
  size_t buffer_bytes = size_t{2} << 20;  // CUPTI suggests 1-10 MB
  size_t max_buffers = kPoolBytes / (size_t{2} << 20);
  uint32_t flush_ms = 500;  // our flusher's cuptiActivityFlushAll and CUPTI's flush period
  bool translate_thread = true;  // false: translate in CUPTI's completion callback
  std::string warning;           // for stderr; empty when there is nothing to say
};

// DLPROF_CUPTI_BUFFER_KB (64 to 65536), DLPROF_CUPTI_FLUSH_MS (10 to
// 60000) and DLPROF_CUPTI_TRANSLATE (`thread` or `inline`); nullptr or ""
// is the default. A value out of range or not understood is named in
// `warning` and the default is used.
PluginTuning ParseTuning(const char* buffer_kb, const char* flush_ms, const char* translate);

}  // namespace dlprof::cupti

#endif  // DLPROF_LIB_CUPTI_TUNING_H_
