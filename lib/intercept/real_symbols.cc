#include <dlfcn.h>

#include <cstring>

#include "lib/core/real_symbol.h"
#include "lib/intercept/wrapper.h"

extern "C" {
extern dlprof::intercept::RealSymbol* __start_dlprof_real_symbols[];
extern dlprof::intercept::RealSymbol* __stop_dlprof_real_symbols[];
}

namespace dlprof::intercept {

void* RealSymbol::Resolve() {
  void* p = core::FindRealSymbol(name, version);
  if (p == nullptr && version == nullptr && strncmp(name, "PMPI_", 5) == 0) {
    p = core::FindLoadedSymbol(name);
  }
  if (p != nullptr) address.store(p, std::memory_order_relaxed);
  return p;
}

namespace {

// Before the runtime's own constructor (default priority): every real
// symbol is known before the first call can be traced.
__attribute__((constructor(101))) void ResolveAllRealSymbols() {
  for (RealSymbol** s = __start_dlprof_real_symbols; s < __stop_dlprof_real_symbols; ++s) {
    if ((*s)->address.load(std::memory_order_relaxed) == nullptr) {
      void* p = core::FindRealSymbol((*s)->name, (*s)->version);
      (*s)->address.store(p, std::memory_order_relaxed);
    }
  }
}

}  // namespace
}  // namespace dlprof::intercept
