// dlsym and dlvsym, interposed so that a program which opens libcufile with
// dlopen and looks its functions up with dlsym (kvikio, DALI, cuda-python)
// or dlvsym gets dlprof's cuFile wrappers, as one that links libcufile does
// through LD_PRELOAD.
//
// dlsym's answer depends on its caller for the pseudo-handles: RTLD_NEXT
// means "after the object that called", RTLD_DEFAULT searches the caller's
// scope. So for those dlsym is entered by a few instructions of assembly
// that jump to the C library's dlsym with the caller's return address left
// as it was: the C library sees the program's call, not ours. Only a
// lookup in a library handle (whose answer does not depend on the caller)
// comes through C++, where a cuFile name found in the library is swapped
// for our wrapper (cufile_calls.cc, OnDlsym). Every other lookup costs a
// comparison of the name's first bytes. dlvsym (a third argument, the
// version) goes the same two ways.
//
// The C library's dlvsym is found without dlsym or dlvsym, by reading the
// symbol tables of the objects after ours (core::FindNextDefinition); its
// dlsym then with dlvsym(RTLD_NEXT, ...), through our dlvsym's jump, which
// keeps libdlprof as the caller. So does every other RTLD_NEXT lookup of
// the tracer (its real functions): neither hook calls itself.
//
// On processors other than x86-64 and aarch64 neither is interposed, and
// cuFile is traced only when linked.
#include <dlfcn.h>

#include "lib/core/real_symbol.h"
#include "lib/intercept/cufile_abi.h"

extern "C" {

using DlsymFn = void* (*)(void*, const char*);
using DlvsymFn = void* (*)(void*, const char*, const char*);

namespace {
DLPROF_BEFORE_SANITIZER
void* NoDlsym(void*, const char*) { return nullptr; }
DLPROF_BEFORE_SANITIZER
void* NoDlvsym(void*, const char*, const char*) { return nullptr; }

bool IsCufileName(const char* name) {
  return name != nullptr && name[0] == 'c' && name[1] == 'u' && name[2] == 'F' && name[3] == 'i' &&
         name[4] == 'l' && name[5] == 'e';
}
}  // namespace

__attribute__((visibility("hidden"))) DlsymFn dlprof_real_dlsym = nullptr;
__attribute__((visibility("hidden"))) DlvsymFn dlprof_real_dlvsym = nullptr;

// The C library's dlvsym, found once, by what follows libdlprof.
DLPROF_BEFORE_SANITIZER
__attribute__((visibility("hidden"), used)) DlvsymFn dlprof_resolve_real_dlvsym() {
  void* p = dlprof::core::FindNextDefinition("dlvsym");
  DlvsymFn fn = p != nullptr ? reinterpret_cast<DlvsymFn>(p) : NoDlvsym;
  __atomic_store_n(&dlprof_real_dlvsym, fn, __ATOMIC_RELEASE);
  return fn;
}

// The C library's dlsym, found once: the versioned lookup does not come
// back through our own dlsym. (glibc 2.34 moved dlsym into libc.so.6 under
// a new version; GLIBC_2.2.5 and GLIBC_2.17 are the older ones.)
DLPROF_BEFORE_SANITIZER
__attribute__((visibility("hidden"), used)) DlsymFn dlprof_resolve_real_dlsym() {
  void* p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (p == nullptr) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  if (p == nullptr) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.17");
  DlsymFn fn = p != nullptr ? reinterpret_cast<DlsymFn>(p) : NoDlsym;
  __atomic_store_n(&dlprof_real_dlsym, fn, __ATOMIC_RELEASE);
  return fn;
}

// A lookup in a library handle.
__attribute__((visibility("hidden"), used)) void* dlprof_dlsym_in_handle(void* handle,
                                                                          const char* name) {
  DlsymFn real = __atomic_load_n(&dlprof_real_dlsym, __ATOMIC_ACQUIRE);
  if (real == nullptr) real = dlprof_resolve_real_dlsym();
  void* p = real(handle, name);
  return p != nullptr && IsCufileName(name) ? dlprof::intercept::gds::OnDlsym(name, p) : p;
}

// A versioned lookup in a library handle.
__attribute__((visibility("hidden"), used)) void* dlprof_dlvsym_in_handle(void* handle,
                                                                           const char* name,
                                                                           const char* version) {
  DlvsymFn real = __atomic_load_n(&dlprof_real_dlvsym, __ATOMIC_ACQUIRE);
  if (real == nullptr) real = dlprof_resolve_real_dlvsym();
  void* p = real(handle, name, version);
  return p != nullptr && IsCufileName(name) ? dlprof::intercept::gds::OnDlsym(name, p) : p;
}

}  // extern "C"

#if defined(__x86_64__)
// RTLD_DEFAULT is 0 and RTLD_NEXT is -1.
// One body for both hooks (an assembler macro over the name): the slow
// path keeps the three argument registers (dlsym has two; the third costs
// nothing) around the one-time resolution of the real function.
asm(R"(
  .macro dlprof_lookup_hook name
  .text
  .globl \name
  .type \name, @function
  .p2align 4
\name:
  .cfi_startproc
  cmpq $-1, %rdi
  je 1f
  testq %rdi, %rdi
  je 1f
  jmp dlprof_\name\()_in_handle
1:
  movq dlprof_real_\name(%rip), %rax
  testq %rax, %rax
  je 2f
  jmp *%rax
2:
  pushq %rdi
  .cfi_adjust_cfa_offset 8
  pushq %rsi
  .cfi_adjust_cfa_offset 8
  pushq %rdx
  .cfi_adjust_cfa_offset 8
  call dlprof_resolve_real_\name
  popq %rdx
  .cfi_adjust_cfa_offset -8
  popq %rsi
  .cfi_adjust_cfa_offset -8
  popq %rdi
  .cfi_adjust_cfa_offset -8
  jmp *%rax
  .cfi_endproc
  .size \name, .-\name
  .endm

  dlprof_lookup_hook dlsym
  dlprof_lookup_hook dlvsym
)");
#elif defined(__aarch64__)
// The caller's address is in x30 (lr), which the jumps leave alone.
asm(R"(
  .macro dlprof_lookup_hook name
  .text
  .globl \name
  .type \name, %function
  .p2align 4
\name:
  .cfi_startproc
  cmn x0, #1
  b.eq 1f
  cbz x0, 1f
  b dlprof_\name\()_in_handle
1:
  adrp x16, dlprof_real_\name
  ldr x16, [x16, :lo12:dlprof_real_\name]
  cbz x16, 2f
  br x16
2:
  stp x29, x30, [sp, #-48]!
  .cfi_def_cfa_offset 48
  .cfi_offset 29, -48
  .cfi_offset 30, -40
  stp x0, x1, [sp, #16]
  str x2, [sp, #32]
  bl dlprof_resolve_real_\name
  mov x16, x0
  ldp x0, x1, [sp, #16]
  ldr x2, [sp, #32]
  ldp x29, x30, [sp], #48
  .cfi_def_cfa_offset 0
  .cfi_restore 29
  .cfi_restore 30
  br x16
  .cfi_endproc
  .size \name, .-\name
  .endm

  dlprof_lookup_hook dlsym
  dlprof_lookup_hook dlvsym
)");
#endif
