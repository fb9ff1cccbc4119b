// Which GPU record kinds DLPROF_CUDA asks for. Pure parsing, no CUPTI, so
// it is shared by the plugin and its CPU tests.
#ifndef DLPROF_LIB_CUPTI_CUDA_KINDS_H_
#define DLPROF_LIB_CUPTI_CUDA_KINDS_H_

#include <cstdint>
#include <string>

namespace dlprof::cupti {

enum CudaKind : uint32_t {
  kCudaKernel = 1u << 0,   // concurrent kernel records
  kCudaMemcpy = 1u << 1,   // memcpy and peer-to-peer memcpy
  kCudaMemset = 1u << 2,
  kCudaSync = 1u << 3,     // synchronization records
  kCudaRuntime = 1u << 4,  // runtime API calls
  kCudaDriver = 1u << 5,   // driver API calls
  kCudaNvtx = 1u << 6,     // NVTX ranges: recorded through NVTX injection instead
  kCudaAll = (1u << 6) - 1,  // every kind CUPTI records (not nvtx)
};

constexpr uint32_t kDefaultCudaKinds = kCudaKernel | kCudaMemcpy | kCudaMemset | kCudaSync;

// Parses a comma-separated list of kernel, memcpy, memset, sync (or
// synchronization), runtime, driver, nvtx, all. Unknown words are left out
// and named in `*warning` (empty when there is nothing to say); a value with
// no known word gives the default, as every DLPROF_* setting does.
uint32_t ParseCudaKinds(const char* text, std::string* warning);

}  // namespace dlprof::cupti

#endif  // DLPROF_LIB_CUPTI_CUDA_KINDS_H_
