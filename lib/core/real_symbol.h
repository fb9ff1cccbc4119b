// Finding the next definition of a symbol we interpose (the real one).
#ifndef DLPROF_LIB_CORE_REAL_SYMBOL_H_
#define DLPROF_LIB_CORE_REAL_SYMBOL_H_

namespace dlprof::core {

// dlsym(RTLD_NEXT, name), or dlvsym with `version` for symbols that glibc
// keeps only as compat versions (the pre-2.33 __xstat family).
void* FindRealSymbol(const char* name, const char* version = nullptr);

// `name` in any loaded object, local scopes included (an MPI library that a
// Python extension module brought in with RTLD_LOCAL, as mpi4py's does).
// Slower: only for names that are never ours (PMPI_), and only once the
// ordinary lookup has failed at a call.
void* FindLoadedSymbol(const char* name);

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_REAL_SYMBOL_H_
