// Finding the next definition of a symbol we interpose (the real one).
#ifndef DLPROF_LIB_CORE_REAL_SYMBOL_H_
#define DLPROF_LIB_CORE_REAL_SYMBOL_H_

// For code that runs inside a sanitizer's start-up: AddressSanitizer's
// interceptors look the real functions up through our dlsym and dlvsym
// before its shadow memory is mapped, where an instrumented load faults. So
// that code, and all it calls, is not instrumented.
#define DLPROF_BEFORE_SANITIZER __attribute__((no_sanitize_address))

namespace dlprof::core {

// dlsym(RTLD_NEXT, name), or dlvsym with `version` for symbols that glibc
// keeps only as compat versions (the pre-2.33 __xstat family).
void* FindRealSymbol(const char* name, const char* version = nullptr);

// `name` in any loaded object, local scopes included (an MPI library that a
// Python extension module brought in with RTLD_LOCAL, as mpi4py's does).
// Slower: only for names that are never ours (PMPI_), and only once the
// ordinary lookup has failed at a call.
void* FindLoadedSymbol(const char* name);

// `name` as dlsym(RTLD_NEXT, name) from the object this code is linked into
// (libdlprof.so) finds it, without dlsym or dlvsym: the dynamic symbol
// tables of the objects loaded after it, read in link-map order (GNU or
// SysV hash); where none has it (our object loaded with dlopen, after the
// C library), the first before it. For the interposed dlvsym's own real
// function (cufile_dlsym.cc), which everything else -- the real dlsym
// included -- is found through.
// Runs inside AddressSanitizer's start-up (below): not instrumented.
DLPROF_BEFORE_SANITIZER void* FindNextDefinition(const char* name);

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_REAL_SYMBOL_H_
