// GPUDirect Storage: the cuFile driver, handle, buffer and synchronous I/O
// calls (docs/CUDA.md, "GPUDirect Storage"). One event per call, category
// gds: the file of the handle, the offset and bytes asked, the bytes moved
// and the device buffer's address. libcufile reached either way is traced:
// linked (these definitions interpose by name, like the POSIX wrappers) or
// opened with dlopen and looked up with dlsym, as kvikio and DALI do (the
// dlsym hook in cufile_dlsym.cc hands out these same wrappers and tells us
// the real functions).
//
// In compatibility mode (no GDS hardware) cuFile does the I/O with POSIX
// calls inside the cuFile call: the tracer flags them nested, and the
// summary counts the cuFile call's bytes once (lib/analysis/nested_calls.h).
#include <dlfcn.h>

#include <cstring>

#include "lib/intercept/cufile_common.h"

namespace dlprof::intercept::gds {
namespace {

// The real functions, resolved through RTLD_NEXT with the tracer's other
// real symbols (real_symbols.cc) or set by OnDlsym.
RealSymbol g_real[kFnCount] = {
#define DLPROF_X(name, type) {#name, nullptr, {nullptr}},
    DLPROF_CUFILE_FUNCTIONS(DLPROF_X)
#undef DLPROF_X
};
// One pointer variable each, as DLPROF_REAL_AS makes them: an array would be
// aligned to 32 bytes, and the padding before it would be null entries.
#define DLPROF_X(name, type)                                             \
  __attribute__((used, section("dlprof_real_symbols"))) RealSymbol*      \
      g_real_entry_##name = &g_real[k_##name];
DLPROF_CUFILE_FUNCTIONS(DLPROF_X)
#undef DLPROF_X

// Registered handles and their fds: open addressing on the handle's value,
// lock-free (a read looks its handle up on every call). Deregistered
// entries become tombstones that a later registration may take.
constexpr uint32_t kHandleSlots = 4096;  // a power of two
constexpr uintptr_t kTombstone = 1;
struct HandleSlot {
  std::atomic<uintptr_t> handle;
  std::atomic<int> fd;
};
HandleSlot g_handles[kHandleSlots];

uint32_t HashOf(uintptr_t h) {
  return static_cast<uint32_t>((h >> 4) * 0x9E3779B97F4A7C15ull >> 40);
}

void RememberHandle(CUfileHandle_t h, int fd) {
  const auto key = reinterpret_cast<uintptr_t>(h);
  if (key <= kTombstone) return;
  for (uint32_t i = 0, at = HashOf(key); i < kHandleSlots; ++i, ++at) {
    HandleSlot& s = g_handles[at & (kHandleSlots - 1)];
    uintptr_t seen = s.handle.load(std::memory_order_acquire);
    if (seen == key) {  // registered again without deregistering
      s.fd.store(fd, std::memory_order_release);
      return;
    }
    if (seen > kTombstone) continue;
    // Free or a tombstone: the fd first, so that a reader who finds the
    // handle finds its fd.
    s.fd.store(fd, std::memory_order_relaxed);
    if (s.handle.compare_exchange_strong(seen, key, std::memory_order_release)) return;
    --i, --at;  // another registration took it: look at this slot again
  }
}

HandleSlot* FindHandle(CUfileHandle_t h) {
  const auto key = reinterpret_cast<uintptr_t>(h);
  if (key <= kTombstone) return nullptr;
  for (uint32_t i = 0, at = HashOf(key); i < kHandleSlots; ++i, ++at) {
    HandleSlot& s = g_handles[at & (kHandleSlots - 1)];
    const uintptr_t seen = s.handle.load(std::memory_order_acquire);
    if (seen == key) return &s;
    if (seen == 0) return nullptr;
  }
  return nullptr;
}

void ForgetHandle(CUfileHandle_t h) {
  if (HandleSlot* s = FindHandle(h)) {
    s->fd.store(-1, std::memory_order_relaxed);
    s->handle.store(kTombstone, std::memory_order_release);
  }
}

// The wrappers dlsym hands out, by name.
struct Wrapper {
  const char* name;
  void* address;
};

}  // namespace

void* RealAddress(Fn f) { return g_real[f].Get(); }

int HandleFd(CUfileHandle_t h) {
  HandleSlot* s = FindHandle(h);
  return s != nullptr ? s->fd.load(std::memory_order_acquire) : -1;
}

}  // namespace dlprof::intercept::gds

using dlprof::Event;
using dlprof::EventKind;
using namespace dlprof::intercept::gds;  // NOLINT: the wrappers are C functions

namespace {
// The devPtr the I/O works at: base plus offset, as the device sees it.
uint64_t BufferAt(const void* base, off_t offset) {
  return reinterpret_cast<uint64_t>(base) + static_cast<uint64_t>(offset);
}

// cuFileRead and cuFileWrite. ret: bytes moved, -1 with errno (a file
// system error), or the negative of a CUfileOpError (errno then means
// nothing: err 0).
bool DescribeSyncIo(Event& e, ssize_t r, CUfileHandle_t fh, const void* base, size_t size,
                    off_t file_offset, off_t buf_offset) {
  if (r < -1) e.err = 0;
  e.size = size;
  e.offset = file_offset;
  e.aux = BufferAt(base, buf_offset);
  return DescribeHandle(e, fh);
}

CUfileError_t DriverCall(EventKind kind, Fn f) {
  auto real = reinterpret_cast<CUfileError_t (*)()>(RealAddress(f));
  return StatusCall(kind, reinterpret_cast<void*>(real), [&] { return real(); },
                    [](Event&) { return true; });
}
}  // namespace

extern "C" {

CUfileError_t cuFileDriverOpen() {
  return DriverCall(EventKind::CufileDriverOpen, k_cuFileDriverOpen);
}

CUfileError_t cuFileDriverClose() {
  return DriverCall(EventKind::CufileDriverClose, k_cuFileDriverClose);
}

CUfileError_t cuFileDriverClose_v2() {
  return DriverCall(EventKind::CufileDriverCloseV2, k_cuFileDriverClose_v2);
}

CUfileError_t cuFileHandleRegister(CUfileHandle_t* fh, CUfileDescr_t* descr) {
  auto real = Real<k_cuFileHandleRegister, CUfileError_t (*)(CUfileHandle_t*, CUfileDescr_t*)>();
  const int fd =
      descr != nullptr && descr->type == kCuFileHandleTypeOpaqueFd ? descr->handle.fd : -1;
  CUfileError_t out = StatusCall(
      EventKind::CufileHandleRegister, reinterpret_cast<void*>(real),
      [&] { return real(fh, descr); },
      [&](Event& e) {
        if (fd < 0) return true;  // a user-space file system's handle: no fd
        if (!dlprof::intercept::DescribeFd(e, fd)) return false;
        if (fh != nullptr) e.aux = reinterpret_cast<uint64_t>(*fh);
        return true;
      });
  // Outside the describer too: the table must know the handle even when
  // the call was not traced (gds not in DLPROF_TRACE, tracer code).
  if (out.err == kCuFileSuccess && fh != nullptr) RememberHandle(*fh, fd);
  return out;
}

void cuFileHandleDeregister(CUfileHandle_t fh) {
  auto real = Real<k_cuFileHandleDeregister, void (*)(CUfileHandle_t)>();
  if (real == nullptr) return;
  const int fd = HandleFd(fh);
  dlprof::intercept::Traced<int>(
      EventKind::CufileHandleDeregister, [&] { return (real(fh), 0); },
      [&](Event& e, int, int) {
        e.aux = reinterpret_cast<uint64_t>(fh);
        return fd < 0 || dlprof::intercept::DescribeFd(e, fd);
      });
  ForgetHandle(fh);
}

CUfileError_t cuFileBufRegister(const void* base, size_t length, int flags) {
  auto real = Real<k_cuFileBufRegister, CUfileError_t (*)(const void*, size_t, int)>();
  return StatusCall(EventKind::CufileBufRegister, reinterpret_cast<void*>(real),
                    [&] { return real(base, length, flags); },
                    [&](Event& e) {
                      e.size = length;
                      e.aux = reinterpret_cast<uint64_t>(base);
                      return true;
                    });
}

CUfileError_t cuFileBufDeregister(const void* base) {
  auto real = Real<k_cuFileBufDeregister, CUfileError_t (*)(const void*)>();
  return StatusCall(EventKind::CufileBufDeregister, reinterpret_cast<void*>(real),
                    [&] { return real(base); },
                    [&](Event& e) {
                      e.aux = reinterpret_cast<uint64_t>(base);
                      return true;
                    });
}

ssize_t cuFileRead(CUfileHandle_t fh, void* base, size_t size, off_t file_offset,
                   off_t buf_offset) {
  auto real = Real<k_cuFileRead, ssize_t (*)(CUfileHandle_t, void*, size_t, off_t, off_t)>();
  if (real == nullptr) return errno = ENOSYS, -1;
  return dlprof::intercept::Traced<ssize_t>(
      EventKind::CufileRead, [&] { return real(fh, base, size, file_offset, buf_offset); },
      [&](Event& e, ssize_t r, int) {
        return DescribeSyncIo(e, r, fh, base, size, file_offset, buf_offset);
      });
}

ssize_t cuFileWrite(CUfileHandle_t fh, const void* base, size_t size, off_t file_offset,
                    off_t buf_offset) {
  auto real = Real<k_cuFileWrite, ssize_t (*)(CUfileHandle_t, const void*, size_t, off_t, off_t)>();
  if (real == nullptr) return errno = ENOSYS, -1;
  return dlprof::intercept::Traced<ssize_t>(
      EventKind::CufileWrite, [&] { return real(fh, base, size, file_offset, buf_offset); },
      [&](Event& e, ssize_t r, int) {
        return DescribeSyncIo(e, r, fh, base, size, file_offset, buf_offset);
      });
}

}  // extern "C"

namespace dlprof::intercept::gds {

void* OnDlsym(const char* name, void* real) {
  static const Wrapper kWrappers[kFnCount] = {
#define DLPROF_X(fn_name, type) {#fn_name, reinterpret_cast<void*>(&::fn_name)},
      DLPROF_CUFILE_FUNCTIONS(DLPROF_X)
#undef DLPROF_X
  };
  for (int i = 0; i < kFnCount; ++i) {
    if (std::strcmp(name, kWrappers[i].name) != 0) continue;
    // Our own wrapper (a program that looks the name up in libdlprof
    // itself) is no real function.
    if (real == kWrappers[i].address) return real;
    // Only libcufile's own functions: a library of another name that
    // exports the name may call libcufile's through it, which would then
    // come back to our wrapper.
    Dl_info info;
    if (dladdr(real, &info) == 0 || info.dli_fname == nullptr) return real;
    const char* base = std::strrchr(info.dli_fname, '/');
    if (std::strncmp(base != nullptr ? base + 1 : info.dli_fname, "libcufile", 9) != 0) {
      return real;
    }
    // One libcufile per process is traced: a second copy (another file, as
    // a wheel's beside the toolkit's) keeps its own functions, untraced,
    // rather than have its handles passed to the first.
    void* known = g_real[i].address.load(std::memory_order_relaxed);
    if (known == nullptr &&
        g_real[i].address.compare_exchange_strong(known, real, std::memory_order_relaxed)) {
      return kWrappers[i].address;
    }
    return known == real ? kWrappers[i].address : real;
  }
  return real;
}

}  // namespace dlprof::intercept::gds
