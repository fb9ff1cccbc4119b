#include "lib/cupti/cuda_kinds.h"

#include <cstring>

namespace dlprof::cupti {
namespace {

uint32_t KindOfWord(const std::string& w) {
  if (w == "kernel") return kCudaKernel;
  if (w == "memcpy") return kCudaMemcpy;
  if (w == "memset") return kCudaMemset;
  if (w == "sync" || w == "synchronization") return kCudaSync;
  if (w == "runtime") return kCudaRuntime;
  if (w == "driver") return kCudaDriver;
  if (w == "nvtx") return kCudaNvtx;
  if (w == "all") return kCudaAll;
  return 0;
}

}  // namespace

uint32_t ParseCudaKinds(const char* text, std::string* warning) {
  warning->clear();
  if (text == nullptr || *text == '\0') return kDefaultCudaKinds;
  uint32_t kinds = 0;
  std::string unknown;
  const char* p = text;
  while (*p) {
    size_t n = std::strcspn(p, ", ");
    if (n > 0) {
      std::string word(p, n);
      uint32_t k = KindOfWord(word);
      if (k == 0) unknown += (unknown.empty() ? "" : ",") + word;
      kinds |= k;
    }
    p += n;
    if (*p) ++p;
  }
  if (!unknown.empty()) {
    *warning = "DLPROF_CUDA: unknown record kind '" + unknown +
               "' (known: kernel,memcpy,memset,sync,runtime,driver,nvtx,all)";
  }
  if (kinds == 0) {
    if (!warning->empty()) *warning += "; using kernel,memcpy,memset,sync";
    return kDefaultCudaKinds;
  }
  return kinds;
}

}  // namespace dlprof::cupti
