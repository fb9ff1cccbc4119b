#include "lib/core/real_symbol.h"

#include <dlfcn.h>

namespace dlprof::core {

void* FindRealSymbol(const char* name, const char* version) {
  void* p = version ? dlvsym(RTLD_NEXT, name, version) : dlsym(RTLD_NEXT, name);
  if (p == nullptr && version == nullptr) p = dlvsym(RTLD_NEXT, name, "GLIBC_2.2.5");
  return p;
}

}  // namespace dlprof::core
