// GPUDirect Storage: the asynchronous (stream) and batched cuFile I/O.
//
// Such an I/O is recorded twice over: its submission is a call like any
// other (cuFileReadAsync, cuFileBatchIOSubmit: on the calling thread, for
// as long as the call took), and the I/O itself (cufile_async_read,
// cufile_batch_read...) is recorded once its completion is observed, from
// its submission to that moment, so that its duration on the timeline is
// the I/O's and its bytes are counted as a read's or a write's:
//   - stream I/O: a host function queued on the stream right after the I/O
//     (cuLaunchHostFunc) runs when the stream has done it, on CUDA's
//     callback thread, and records it there with the bytes that cuFile
//     wrote to *bytes_read_p. Not for a stream being captured into a graph
//     (the function would run at every replay): its I/Os have their
//     submissions only. The I/O's aux is its stream, so that the timelines
//     draw it on the stream's track with no guess at which submission it
//     was; the submission's aux is the device buffer (the call's argument).
//   - batch I/O: each I/O is remembered at submission under (batch, cookie)
//     and recorded when cuFileBatchIOGetStatus returns it finished, on the
//     thread that asked.
// The bookkeeping is fixed tables with atomic claims: no lock, no
// allocation. An I/O that finds them full, or whose completion is never
// observed (a batch destroyed first), keeps its submission only.
//
// Its times are read on the traced calls' clock, as an asynchronous
// request's are (async_requests.h: TSC ticks where the calls read them), so
// that it lies inside the calls that submitted and observed it exactly: on
// clock_gettime its end came out after its GetStatus's by the TSC line's
// error now and then (integration.gds under load).
#include <dlfcn.h>

#include "lib/core/real_symbol.h"
#include "lib/intercept/async_requests.h"
#include "lib/intercept/cufile_common.h"

namespace dlprof::intercept::gds {
namespace {

// ---- stream I/O ----------------------------------------------------------

using LaunchHostFunc = int (*)(CUstream, void (*)(void*), void*);
using StreamIsCapturing = int (*)(CUstream, int*);
std::atomic<int> g_host_api{0};  // 0: not looked for yet, 1: found, 2: missing
LaunchHostFunc g_launch_host_func = nullptr;
StreamIsCapturing g_stream_is_capturing = nullptr;

void* FindCudaFunction(const char* name) {
  void* p = dlsym(RTLD_DEFAULT, name);
  // The CUDA runtime loads libcuda.so.1 into a local scope.
  return p != nullptr ? p : core::FindLoadedSymbol(name);
}

bool HaveHostApi() {
  int state = g_host_api.load(std::memory_order_acquire);
  if (__builtin_expect(state == 0, 0)) {
    InTracerCode tracer;
    g_launch_host_func = reinterpret_cast<LaunchHostFunc>(FindCudaFunction("cuLaunchHostFunc"));
    g_stream_is_capturing =
        reinterpret_cast<StreamIsCapturing>(FindCudaFunction("cuStreamIsCapturing"));
    state = g_launch_host_func != nullptr ? 1 : 2;
    g_host_api.store(state, std::memory_order_release);
  }
  return state == 1;
}

struct AsyncSlot {
  std::atomic<uint32_t> busy;
  Event io;  // kind, file, fd and start filled at submission
  size_t* size_p;
  off_t* file_offset_p;
  ssize_t* bytes_p;
};
constexpr uint32_t kAsyncSlots = 1024;
AsyncSlot g_async[kAsyncSlots];
std::atomic<uint32_t> g_async_next{0};

AsyncSlot* ClaimAsyncSlot() {
  for (uint32_t i = 0; i < kAsyncSlots; ++i) {
    AsyncSlot& s = g_async[g_async_next.fetch_add(1, std::memory_order_relaxed) % kAsyncSlots];
    uint32_t free = 0;
    if (s.busy.compare_exchange_strong(free, 1, std::memory_order_acquire)) return &s;
  }
  return nullptr;
}

// Runs on CUDA's callback thread once the stream has done the I/O: its
// arguments are final and *bytes_p holds what it moved.
void AsyncIoDone(void* arg) {
  auto* s = static_cast<AsyncSlot*>(arg);
  Event e = s->io;
  const uint64_t now = async::OnClockOf(e, async::ReadClock());
  e.dur_ns = now > e.start_ns ? now - e.start_ns : 0;
  e.size = s->size_p != nullptr ? *s->size_p : 0;
  e.offset = s->file_offset_p != nullptr ? *s->file_offset_p : -1;
  e.ret = *s->bytes_p;
  s->busy.store(0, std::memory_order_release);
  RecordMade(e);
}

using AsyncFn = CUfileError_t (*)(CUfileHandle_t, void*, size_t*, off_t*, off_t*, ssize_t*,
                                  CUstream);

CUfileError_t AsyncCall(EventKind submit_kind, EventKind io_kind, Fn f, CUfileHandle_t fh,
                        void* base, size_t* size_p, off_t* file_offset_p, off_t* buf_offset_p,
                        ssize_t* bytes_p, CUstream stream) {
  auto real = reinterpret_cast<AsyncFn>(RealAddress(f));
  async::Clock submitted{0, 0};
  const CUfileError_t out = StatusCall(
      submit_kind, reinterpret_cast<void*>(real),
      [&] {
        submitted = async::ReadClock();
        return real(fh, base, size_p, file_offset_p, buf_offset_p, bytes_p, stream);
      },
      [&](Event& e) {
        e.size = size_p != nullptr ? *size_p : 0;
        e.offset = file_offset_p != nullptr ? *file_offset_p : -1;
        e.aux = reinterpret_cast<uint64_t>(base) +
                static_cast<uint64_t>(buf_offset_p != nullptr ? *buf_offset_p : 0);
        return DescribeHandle(e, fh);
      });
  if (out.err != kCuFileSuccess || bytes_p == nullptr || submitted.now == 0 ||
      !core::Tracing(core::CurrentThread()) || !core::KindEnabled(io_kind) || !HaveHostApi()) {
    return out;
  }
  InTracerCode tracer;  // what CUDA (or the fd table) does for us is not the program's
  Event io{};
  io.kind = static_cast<uint16_t>(io_kind);
  io.flags = submitted.flag;
  io.start_ns = submitted.now;
  io.aux = reinterpret_cast<uint64_t>(stream);  // (0: the default stream)
  if (!DescribeHandle(io, fh)) return out;
  int capture = 0;
  if (g_stream_is_capturing != nullptr &&
      (g_stream_is_capturing(stream, &capture) != 0 || capture != 0)) {
    return out;
  }
  AsyncSlot* s = ClaimAsyncSlot();
  if (s == nullptr) return out;
  s->io = io;
  s->size_p = size_p;
  s->file_offset_p = file_offset_p;
  s->bytes_p = bytes_p;
  if (g_launch_host_func(stream, AsyncIoDone, s) != 0) s->busy.store(0, std::memory_order_release);
  return out;
}

// ---- batch I/O -----------------------------------------------------------

struct BatchSlot {
  std::atomic<uint32_t> state;  // kFree, kFilling, kPending, kTaken
  // What a search compares, atomic: a search may look at a slot that is
  // being taken and filled again (its claim then fails).
  std::atomic<CUfileBatchHandle_t> batch;
  std::atomic<void*> cookie;
  std::atomic<uint64_t> start_ns;
  Event io;  // all but the duration and the result, filled at submission
};
enum : uint32_t { kFree = 0, kFilling = 1, kPending = 2, kTaken = 3 };
constexpr uint32_t kBatchSlots = 4096;
BatchSlot g_batch[kBatchSlots];
std::atomic<uint32_t> g_batch_used{0};  // slots past it have never been taken

void AddPending(CUfileBatchHandle_t batch, void* cookie, const Event& io) {
  for (uint32_t i = 0; i < kBatchSlots; ++i) {
    BatchSlot& s = g_batch[i];
    uint32_t free = kFree;
    if (s.state.load(std::memory_order_relaxed) != kFree ||
        !s.state.compare_exchange_strong(free, kFilling, std::memory_order_acquire)) {
      continue;
    }
    s.batch.store(batch, std::memory_order_relaxed);
    s.cookie.store(cookie, std::memory_order_relaxed);
    s.start_ns.store(io.start_ns, std::memory_order_relaxed);
    s.io = io;
    uint32_t used = g_batch_used.load(std::memory_order_relaxed);
    while (used < i + 1 &&
           !g_batch_used.compare_exchange_weak(used, i + 1, std::memory_order_relaxed)) {
    }
    s.state.store(kPending, std::memory_order_release);
    return;
  }
}

// The oldest I/O of `batch` submitted with `cookie`, taken out of the table.
// (Cookies are the program's: where it gave several I/Os one cookie, which
// of them finished is not known, and they are matched in submission order.)
bool TakePending(CUfileBatchHandle_t batch, void* cookie, Event* io) {
  for (;;) {
    BatchSlot* oldest = nullptr;
    const uint32_t used = g_batch_used.load(std::memory_order_relaxed);
    for (uint32_t i = 0; i < used; ++i) {
      BatchSlot& s = g_batch[i];
      if (s.state.load(std::memory_order_acquire) != kPending ||
          s.batch.load(std::memory_order_relaxed) != batch ||
          s.cookie.load(std::memory_order_relaxed) != cookie) {
        continue;
      }
      if (oldest == nullptr || s.start_ns.load(std::memory_order_relaxed) <
                                   oldest->start_ns.load(std::memory_order_relaxed)) {
        oldest = &s;
      }
    }
    if (oldest == nullptr) return false;
    uint32_t pending = kPending;
    if (!oldest->state.compare_exchange_strong(pending, kTaken, std::memory_order_acquire)) {
      continue;  // another thread's GetStatus took it
    }
    *io = oldest->io;
    oldest->state.store(kFree, std::memory_order_release);
    return true;
  }
}

void DropPending(CUfileBatchHandle_t batch) {
  const uint32_t used = g_batch_used.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < used; ++i) {
    BatchSlot& s = g_batch[i];
    uint32_t pending = kPending;
    if (s.state.load(std::memory_order_acquire) == kPending &&
        s.batch.load(std::memory_order_relaxed) == batch) {
      s.state.compare_exchange_strong(pending, kFree, std::memory_order_acq_rel);
    }
  }
}

// A finished batch I/O's result: bytes moved, or -1 (or the negative error
// cuFile gave) with an errno that says how it ended.
void SetOutcome(Event& e, const CUfileIOEvents_t& ev) {
  const auto r = static_cast<int64_t>(ev.ret);
  if (ev.status == kCuFileComplete) {
    e.ret = r;
    e.err = 0;
    return;
  }
  e.ret = r < 0 ? r : -1;
  e.err = ev.status == kCuFileCanceled ? ECANCELED
          : ev.status == kCuFileTimeout ? ETIMEDOUT
          : ev.status == kCuFileInvalid ? EINVAL
                                         : EIO;
}

bool Finished(int status) {
  return status == kCuFileComplete || status == kCuFileFailed || status == kCuFileCanceled ||
         status == kCuFileTimeout || status == kCuFileInvalid;
}

}  // namespace
}  // namespace dlprof::intercept::gds

using dlprof::Event;
using dlprof::EventKind;
using namespace dlprof::intercept::gds;  // NOLINT: the wrappers are C functions
namespace async = dlprof::intercept::async;

extern "C" {

CUfileError_t cuFileReadAsync(CUfileHandle_t fh, void* base, size_t* size_p,
                              off_t* file_offset_p, off_t* buf_offset_p, ssize_t* bytes_p,
                              CUstream stream) {
  return AsyncCall(EventKind::CufileReadAsync, EventKind::CufileAsyncRead, k_cuFileReadAsync, fh,
                   base, size_p, file_offset_p, buf_offset_p, bytes_p, stream);
}

CUfileError_t cuFileWriteAsync(CUfileHandle_t fh, void* base, size_t* size_p,
                               off_t* file_offset_p, off_t* buf_offset_p, ssize_t* bytes_p,
                               CUstream stream) {
  return AsyncCall(EventKind::CufileWriteAsync, EventKind::CufileAsyncWrite, k_cuFileWriteAsync,
                   fh, base, size_p, file_offset_p, buf_offset_p, bytes_p, stream);
}

CUfileError_t cuFileBatchIOSetUp(CUfileBatchHandle_t* batch, unsigned nr) {
  auto real = Real<k_cuFileBatchIOSetUp, CUfileError_t (*)(CUfileBatchHandle_t*, unsigned)>();
  return StatusCall(EventKind::CufileBatchSetUp, reinterpret_cast<void*>(real),
                    [&] { return real(batch, nr); },
                    [&](Event& e) {
                      e.size = nr;
                      if (batch != nullptr) e.aux = reinterpret_cast<uint64_t>(*batch);
                      return true;
                    });
}

CUfileError_t cuFileBatchIOSubmit(CUfileBatchHandle_t batch, unsigned nr, CUfileIOParams_t* io,
                                  unsigned flags) {
  auto real = Real<k_cuFileBatchIOSubmit,
                   CUfileError_t (*)(CUfileBatchHandle_t, unsigned, CUfileIOParams_t*, unsigned)>();
  const bool track = real != nullptr && io != nullptr;
  // Remembered in the call before cuFile has it (another thread may see the
  // I/Os finish before the submission returns), so that they start inside
  // the submission on the timeline.
  auto remember = [&] {
    dlprof::intercept::InTracerCode tracer;  // (the fd table may probe an fd it has not seen)
    const async::Clock submitted = async::ReadClock();
    for (unsigned i = 0; i < nr; ++i) {
      const CUfileIOParams_t& p = io[i];
      const EventKind kind =
          p.opcode == kCuFileOpWrite ? EventKind::CufileBatchWrite : EventKind::CufileBatchRead;
      if (!dlprof::core::KindEnabled(kind)) continue;
      Event e{};
      e.kind = static_cast<uint16_t>(kind);
      e.flags = submitted.flag;
      e.start_ns = submitted.now;
      e.offset = p.u.batch.file_offset;
      e.size = p.u.batch.size;
      e.aux = reinterpret_cast<uint64_t>(p.u.batch.devPtr_base) +
              static_cast<uint64_t>(p.u.batch.devPtr_offset);
      if (DescribeHandle(e, p.fh)) AddPending(batch, p.cookie, e);
    }
  };
  bool remembered = false;
  const CUfileError_t out = StatusCall(EventKind::CufileBatchSubmit, reinterpret_cast<void*>(real),
                                       [&] {
                                         remembered = track && dlprof::core::Tracing(
                                                                   dlprof::core::CurrentThread());
                                         if (remembered) remember();
                                         return real(batch, nr, io, flags);
                                       },
                                       [&](Event& e) {
                                         e.size = nr;
                                         e.aux = reinterpret_cast<uint64_t>(batch);
                                         return true;
                                       });
  if (remembered && out.err != kCuFileSuccess) {
    Event dropped;
    for (unsigned i = 0; i < nr; ++i) TakePending(batch, io[i].cookie, &dropped);
  }
  return out;
}

CUfileError_t cuFileBatchIOGetStatus(CUfileBatchHandle_t batch, unsigned min_nr, unsigned* nr,
                                     CUfileIOEvents_t* events, struct timespec* timeout) {
  auto real = Real<k_cuFileBatchIOGetStatus,
                   CUfileError_t (*)(CUfileBatchHandle_t, unsigned, unsigned*, CUfileIOEvents_t*,
                                     struct timespec*)>();
  async::Clock observed{0, 0};
  const CUfileError_t out = StatusCall(
      EventKind::CufileBatchGetStatus, reinterpret_cast<void*>(real),
      [&] {
        const CUfileError_t r = real(batch, min_nr, nr, events, timeout);
        observed = async::ReadClock();
        return r;
      },
      [&](Event& e) {
        e.size = nr != nullptr ? *nr : 0;  // the I/Os it returned
        e.aux = reinterpret_cast<uint64_t>(batch);
        return true;
      });
  if (out.err != kCuFileSuccess || nr == nullptr || events == nullptr || observed.now == 0) {
    return out;
  }
  for (unsigned i = 0; i < *nr; ++i) {
    if (!Finished(events[i].status)) continue;
    Event e;
    if (!TakePending(batch, events[i].cookie, &e)) continue;
    const uint64_t end = async::OnClockOf(e, observed);
    e.dur_ns = end > e.start_ns ? end - e.start_ns : 0;
    SetOutcome(e, events[i]);
    dlprof::intercept::RecordMade(e);
  }
  return out;
}

CUfileError_t cuFileBatchIOCancel(CUfileBatchHandle_t batch) {
  auto real = Real<k_cuFileBatchIOCancel, CUfileError_t (*)(CUfileBatchHandle_t)>();
  return StatusCall(EventKind::CufileBatchCancel, reinterpret_cast<void*>(real),
                    [&] { return real(batch); },
                    [&](Event& e) {
                      e.aux = reinterpret_cast<uint64_t>(batch);
                      return true;
                    });
}

void cuFileBatchIODestroy(CUfileBatchHandle_t batch) {
  auto real = Real<k_cuFileBatchIODestroy, void (*)(CUfileBatchHandle_t)>();
  if (real == nullptr) return;
  dlprof::intercept::Traced<int>(
      EventKind::CufileBatchDestroy, [&] { return (real(batch), 0); },
      [&](Event& e, int, int) {
        e.aux = reinterpret_cast<uint64_t>(batch);
        return true;
      });
  DropPending(batch);  // their completion was never observed
}

}  // extern "C"
