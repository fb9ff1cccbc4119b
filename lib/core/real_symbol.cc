// Finding the real definitions of the symbols dlprof interposes.
#include "lib/core/real_symbol.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdint>

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

namespace {
// A dynamic-section address: most objects have theirs relocated by the
// dynamic loader, some (the vDSO) do not.
DLPROF_BEFORE_SANITIZER
const char* Address(ElfW(Addr) base, ElfW(Addr) p) {
  return reinterpret_cast<const char*>(p < base ? p + base : p);
}

// No strcmp: a sanitizer's runtime may be looking its own functions up
// through our dlvsym before it can serve its strcmp interceptor.
DLPROF_BEFORE_SANITIZER
bool SameName(const char* a, const char* b) {
  while (*a != '\0' && *a == *b) ++a, ++b;
  return *a == *b;
}

// A defined function or object named `name` in symbol `i` of the table.
DLPROF_BEFORE_SANITIZER
const void* Defined(ElfW(Addr) base, const ElfW(Sym)* symtab, const char* strtab, uint32_t i,
                    const char* name) {
  const ElfW(Sym)& s = symtab[i];
  const int type = ELF64_ST_TYPE(s.st_info);
  // (An IFUNC would need its resolver called: dlsym and dlvsym are none.)
  if (s.st_shndx == SHN_UNDEF || s.st_value == 0 || (type != STT_FUNC && type != STT_OBJECT) ||
      !SameName(strtab + s.st_name, name)) {
    return nullptr;
  }
  return reinterpret_cast<const void*>(base + s.st_value);
}

// `name` in the dynamic symbol table of one loaded object.
DLPROF_BEFORE_SANITIZER
const void* LookUp(const link_map* l, const char* name) {
  if (l->l_ld == nullptr) return nullptr;
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  const uint32_t *gnu = nullptr, *sysv = nullptr;
  for (const ElfW(Dyn)* dyn = l->l_ld; dyn->d_tag != DT_NULL; ++dyn) {
    const char* at = Address(l->l_addr, dyn->d_un.d_ptr);
    if (dyn->d_tag == DT_SYMTAB) symtab = reinterpret_cast<const ElfW(Sym)*>(at);
    if (dyn->d_tag == DT_STRTAB) strtab = at;
    if (dyn->d_tag == DT_GNU_HASH) gnu = reinterpret_cast<const uint32_t*>(at);
    if (dyn->d_tag == DT_HASH) sysv = reinterpret_cast<const uint32_t*>(at);
  }
  if (symtab == nullptr || strtab == nullptr) return nullptr;
  if (gnu != nullptr) {
    // nbuckets, symoffset, bloom words, bloom shift; the bloom filter, the
    // buckets, the chains (whose low bit ends a bucket's).
    const uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom_words = gnu[2];
    if (nbuckets == 0) return nullptr;
    const uint32_t* buckets = reinterpret_cast<const uint32_t*>(
        reinterpret_cast<const ElfW(Addr)*>(gnu + 4) + bloom_words);
    const uint32_t* chains = buckets + nbuckets;
    uint32_t h = 5381;
    for (const char* c = name; *c != '\0'; ++c) h = h * 33 + static_cast<unsigned char>(*c);
    for (uint32_t i = buckets[h % nbuckets]; i >= symoffset && i != 0; ++i) {
      const uint32_t h2 = chains[i - symoffset];
      if ((h | 1) == (h2 | 1)) {
        if (const void* p = Defined(l->l_addr, symtab, strtab, i, name)) return p;
      }
      if (h2 & 1) break;
    }
    return nullptr;
  }
  if (sysv != nullptr) {  // nbucket, nchain: one symbol per chain entry
    for (uint32_t i = 1; i < sysv[1]; ++i) {
      if (const void* p = Defined(l->l_addr, symtab, strtab, i, name)) return p;
    }
  }
  return nullptr;
}
}  // namespace

// The dynamic section of the object this code is linked into (the linker
// defines it; weak: a static executable has none).
extern "C" ElfW(Dyn) _DYNAMIC[] __attribute__((weak, visibility("hidden")));

DLPROF_BEFORE_SANITIZER
void* FindNextDefinition(const char* name) {
  // The link map, read through the dynamic loader's r_debug (a variable:
  // no function that a sanitizer intercepts, such as dl_iterate_phdr).
  const void *found = nullptr, *before = nullptr;
  bool passed = false;  // our own object seen
  for (const link_map* l = _r_debug.r_map; l != nullptr && found == nullptr; l = l->l_next) {
    if (!passed) {
      passed = _DYNAMIC != nullptr && l->l_ld == _DYNAMIC;
      if (!passed && before == nullptr) before = LookUp(l, name);
      continue;
    }
    found = LookUp(l, name);
  }
  // Loaded with dlopen rather than preloaded, our object follows the C
  // library in the link map, while RTLD_NEXT searches its own scope (it and
  // its dependencies): the definition before it is then the one.
  return const_cast<void*>(found != nullptr ? found : before);
}

}  // namespace dlprof::core
