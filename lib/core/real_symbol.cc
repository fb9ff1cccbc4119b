#include "lib/core/real_symbol.h"

#include <dlfcn.h>

namespace dlprof::core {

void* FindRealSymbol(const char* name, const char* version) {
  void* p = version ? dlvsym(RTLD_NEXT, name, version) : dlsym(RTLD_NEXT, name);
  if (p == nullptr && version == nullptr) p = dlvsym(RTLD_NEXT, name, "GLIBC_2.2.5");
  // The MPI library may have been loaded after us into a local scope
  // (mpi4py); PMPI_ names are never ours, so the global lookup is safe.
  if (p == nullptr && name[0] == 'P' && name[1] == 'M' && name[2] == 'P' && name[3] == 'I') {
    p = dlsym(RTLD_DEFAULT, name);
  }
  return p;
}

}  // namespace dlprof::core
