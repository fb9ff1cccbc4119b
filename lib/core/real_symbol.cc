#include "lib/core/real_symbol.h"

#include <dlfcn.h>
#include <link.h>

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

namespace {
struct LoadedNames {
  const char* names[1024];
  int count = 0;
};
int CollectName(struct dl_phdr_info* info, size_t, void* data) {
  auto* loaded = static_cast<LoadedNames*>(data);
  if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0' && loaded->count < 1024) {
    loaded->names[loaded->count++] = info->dlpi_name;
  }
  return 0;
}
}  // namespace

void* FindLoadedSymbol(const char* name) {
  // The names first, dlopen after: no dlopen under dl_iterate_phdr's lock.
  LoadedNames loaded;
  dl_iterate_phdr(CollectName, &loaded);
  for (int i = 0; i < loaded.count; ++i) {
    void* h = dlopen(loaded.names[i], RTLD_LAZY | RTLD_NOLOAD);
    if (h == nullptr) continue;
    void* p = dlsym(h, name);  // the object and its dependencies
    dlclose(h);
    if (p != nullptr) return p;
  }
  return nullptr;
}

}  // namespace dlprof::core
