// POSIX AIO (aio_read, aio_write, aio_fsync, lio_listio, aio_error,
// aio_return, aio_suspend, aio_cancel and their 64-bit names).
//
// Each request is registered, keyed by its aiocb's address, just before
// the call that submits it; the tracer notes when it first sees it done (an
// aio_error that no longer says EINPROGRESS, an aio_suspend that returns
// with it done, an lio_listio with LIO_WAIT) and records it at aio_return,
// which POSIX asks the program to call once per request: that is the reap,
// on the thread that called it. A request never reaped is recorded when its
// aiocb is submitted again, or at the end. Only memory the program hands a
// call is read (its aiocbs), and only through glibc's own functions.
#include <aio.h>
#include <errno.h>

#include <atomic>

#include "lib/core/clock.h"
#include "lib/core/file_ids.h"
#include "lib/core/raw_log.h"
#include "lib/intercept/async_requests.h"
#include "lib/intercept/describe.h"

using dlprof::Event;
using dlprof::EventKind;
namespace async = dlprof::intercept::async;

namespace dlprof::intercept::posix_aio {
namespace {

constexpr uint32_t kSlots = 4096;
async::Request g_slots[kSlots];
// Constant-initialised (a constexpr constructor): no first caller sets it
// up while others wait (a signal handler calling aio_error, which is
// async-signal-safe, in the middle of its own thread's first call waited
// for it forever).
async::RequestTable g_requests{g_slots, kSlots};

async::RequestTable& Requests() {
  async::EnsureProcessHooks();
  return g_requests;
}

uint64_t Key(const void* cb) { return reinterpret_cast<uint64_t>(cb); }

// Said once: requests not recorded because the table is full (kSlots
// requests in flight at once, each on an aiocb of its own).
void NoteFull() {
  static std::atomic<bool> noted{false};
  if (!noted.exchange(true, std::memory_order_relaxed)) {
    core::RawLog("POSIX AIO: more than %u requests in flight; those beyond are not recorded",
                 kSlots);
  }
}

// Registers `cb` as submitted now; nullptr when its file is not traced.
// An aiocb submitted again is done with the request it named before (POSIX
// lets no aiocb be in flight twice): a program that never calls aio_return
// (it checks aio_error and reuses the aiocb) has that request recorded now,
// as the tracer knew it -- seen done, with its result, unreaped -- not left
// to fill the table and to take the new one's completion.
async::Request* Register(EventKind kind, const struct aiocb* cb, uint8_t via_lio) {
  core::ThreadContext& t = core::CurrentThread();
  const async::Clock now = async::ReadClock();
  async::RequestTable& requests = Requests();
  while (async::Request* old = requests.Take(Key(cb))) async::RecordStale(t, old, now);
  const uint32_t file = core::FileOfFd(*core::g_runtime, cb->aio_fildes);
  if (!FdTable::Named(file)) {
    NotNamed(file);
    return nullptr;
  }
  async::Request* r = requests.Claim(Key(cb));
  if (r == nullptr) {
    NoteFull();
    return nullptr;
  }
  Event e{};
  e.kind = static_cast<uint16_t>(kind);
  e.flags = static_cast<uint16_t>(async::SubmittedFlags(t) | now.flag);
  e.start_ns = now.now;
  e.file = file;
  e.fd = cb->aio_fildes;
  const bool data = kind != EventKind::AioFsync;
  // A write on an O_APPEND fd lands at the file's end, whatever aio_offset
  // says (glibc's pwrite on it appends): where is not known here.
  const bool appends =
      kind == EventKind::AioWrite && core::g_runtime->fds().Append(cb->aio_fildes);
  e.offset = data && !appends ? cb->aio_offset : -1;
  e.size = data ? cb->aio_nbytes : 0;
  e.aux = PackAsyncAux(0, via_lio, async::CallingTid(t));
  r->event = e;
  async::RequestTable::Publish(r);
  return r;
}

// The kernel (glibc) did not take it: no longer in flight.
void Unregister(async::Request* r) {
  uint32_t pending = async::Request::kPending;
  r->state.compare_exchange_strong(pending, async::Request::kFree, std::memory_order_acq_rel);
}

template <typename Call>
int Submit(EventKind kind, struct aiocb* cb, Call&& call) {
  if (cb == nullptr || !async::Following(core::CurrentThread())) return call();
  async::Request* r;
  {
    InTracerCode tracer;
    r = Register(kind, cb, 0);
  }
  const int ret = call();
  if (ret != 0 && r != nullptr) Unregister(r);
  return ret;
}

// Seen done at `now` (the first time only), `err` being what aio_error
// says: its result is kept (glibc's aiocb holds it), for a request the
// program never reaps.
void NoteDone(const struct aiocb* cb, const async::Clock& now, int err) {
  if (async::Request* r = Requests().Find(Key(cb))) {
    if (r->completed_ns != 0) return;
    r->completed_ns = async::OnClockOf(r->event, now);
    r->event.ret = err == 0 ? static_cast<int64_t>(cb->__return_value) : -static_cast<int64_t>(err);
  }
}

template <typename ErrorFn>
void NoteDoneOnes(const struct aiocb* const list[], int n, const async::Clock& now,
                  ErrorFn&& error) {
  for (int i = 0; list != nullptr && i < n; ++i) {
    if (list[i] == nullptr) continue;
    const int err = error(list[i]);
    if (err != EINPROGRESS) NoteDone(list[i], now, err);
  }
}

// aio_return: the reap. `result` what it returned, `err` what aio_error
// said just before.
void Reaped(const struct aiocb* cb, ssize_t result, int err) {
  const async::Clock now = async::ReadClock();
  core::ThreadContext& t = core::CurrentThread();
  async::Request* r = Requests().TakeNewest(
      Key(cb), [&](async::Request* old) { async::RecordStale(t, old, now); });
  if (r == nullptr) return;
  const uint64_t completed =
      r->completed_ns != 0 ? r->completed_ns : async::OnClockOf(r->event, now);
  async::RecordRequest(t, r->event, completed,
                       result >= 0 ? result : -static_cast<int64_t>(err), now, 0);
  async::RequestTable::Free(r);
}

}  // namespace
}  // namespace dlprof::intercept::posix_aio

namespace dlprof::intercept::async {

void PosixAioFlushAtExit() {
  const Clock now = ReadClock();
  core::ThreadContext& t = core::CurrentThread();
  posix_aio::g_requests.ForEach(Request::kPending, [&](Request* r) {
    uint32_t pending = Request::kPending;
    if (!r->state.compare_exchange_strong(pending, Request::kCompleted)) return;
    RecordStale(t, r, now);  // seen done and never reaped, or never seen done
  });
}

void PosixAioForgetAfterFork() {
  posix_aio::g_requests.ForEach(Request::kPending, [](Request* r) { RequestTable::Free(r); });
}

}  // namespace dlprof::intercept::async

using namespace dlprof::intercept::posix_aio;  // NOLINT: the wrappers are C functions
using dlprof::intercept::InTracerCode;

DLPROF_REAL(aio_read)
DLPROF_REAL(aio_read64)
DLPROF_REAL(aio_write)
DLPROF_REAL(aio_write64)
DLPROF_REAL(aio_fsync)
DLPROF_REAL(aio_fsync64)
DLPROF_REAL(lio_listio)
DLPROF_REAL(lio_listio64)
DLPROF_REAL(aio_error)
DLPROF_REAL(aio_error64)
DLPROF_REAL(aio_return)
DLPROF_REAL(aio_return64)
DLPROF_REAL(aio_suspend)
DLPROF_REAL(aio_suspend64)
DLPROF_REAL(aio_cancel)
DLPROF_REAL(aio_cancel64)

extern "C" {

int aio_read(struct aiocb* cb) {
  return Submit(EventKind::AioRead, cb, [&] { return real_aio_read(cb); });
}
int aio_read64(struct aiocb64* cb) {
  return Submit(EventKind::AioRead, reinterpret_cast<struct aiocb*>(cb),
                [&] { return real_aio_read64(cb); });
}
int aio_write(struct aiocb* cb) {
  return Submit(EventKind::AioWrite, cb, [&] { return real_aio_write(cb); });
}
int aio_write64(struct aiocb64* cb) {
  return Submit(EventKind::AioWrite, reinterpret_cast<struct aiocb*>(cb),
                [&] { return real_aio_write64(cb); });
}
int aio_fsync(int op, struct aiocb* cb) {
  return Submit(EventKind::AioFsync, cb, [&] { return real_aio_fsync(op, cb); });
}
int aio_fsync64(int op, struct aiocb64* cb) {
  return Submit(EventKind::AioFsync, reinterpret_cast<struct aiocb*>(cb),
                [&] { return real_aio_fsync64(op, cb); });
}

}  // extern "C"

namespace {

template <typename Call>
int ListIo(int mode, struct aiocb* const list[], int n, Call&& call) {
  if (list == nullptr || n <= 0 || !dlprof::intercept::async::Following(
                                       dlprof::core::CurrentThread())) {
    return call();
  }
  {
    InTracerCode tracer;
    for (int i = 0; i < n; ++i) {
      struct aiocb* cb = list[i];
      if (cb == nullptr || cb->aio_lio_opcode == LIO_NOP) continue;
      Register(cb->aio_lio_opcode == LIO_WRITE ? EventKind::AioWrite : EventKind::AioRead, cb, 1);
    }
  }
  const int ret = call();
  const int err = errno;
  InTracerCode tracer;
  for (int i = 0; i < n; ++i) {
    struct aiocb* cb = list[i];
    if (cb == nullptr || cb->aio_lio_opcode == LIO_NOP) continue;
    if (ret != 0 && err == EINVAL) {
      // Nothing was queued.
      if (auto* r = Requests().Find(Key(cb))) Unregister(r);
    } else if (ret == 0 && mode == LIO_WAIT) {
      NoteDone(cb, dlprof::intercept::async::ReadClock(), real_aio_error(cb));  // all done
    }
  }
  return ret;
}

}  // namespace

namespace {

// aio_return: what aio_error said just before, then the reap.
template <typename Cb, typename ErrorFn, typename ReturnFn>
ssize_t Return(Cb* cb, const ErrorFn& error, const ReturnFn& ret) {
  // (glibc's own would fault on a null aiocb first.)
  if (!dlprof::intercept::async::Following(dlprof::core::CurrentThread())) return ret(cb);
  const ssize_t r = ret(cb);
  InTracerCode tracer;
  // Its error only when it failed: aio_error takes glibc's lock (a hundred
  // instructions and more), and aio_return leaves the error where it was.
  const int err = r < 0 ? error(cb) : 0;
  Reaped(reinterpret_cast<const struct aiocb*>(cb), r, err);
  return r;
}

// aio_suspend: what is done when it returns. (Not when it begins too: it
// returns at once when one is done then, so its end dates those within its
// own short time, and each look asks glibc's aio_error, which takes its
// lock, of every aiocb listed.)
template <typename Cb, typename ErrorFn, typename SuspendFn>
int Suspend(const Cb* const list[], int n, const struct timespec* timeout, const ErrorFn& error,
            const SuspendFn& suspend) {
  if (!dlprof::intercept::async::Following(dlprof::core::CurrentThread())) {
    return suspend(list, n, timeout);
  }
  const auto* as_aiocbs = reinterpret_cast<const struct aiocb* const*>(list);
  auto error_of = [&](const struct aiocb* cb) { return error(reinterpret_cast<const Cb*>(cb)); };
  const int r = suspend(list, n, timeout);
  InTracerCode tracer;
  NoteDoneOnes(as_aiocbs, n, dlprof::intercept::async::ReadClock(), error_of);
  return r;
}

// A request cancelled at once is done (the program reaps it with
// aio_return, as any other).
template <typename Call>
int Cancel(int fd, const struct aiocb* cb, Call&& call) {
  const int r = call();
  if (r != AIO_CANCELED || !dlprof::intercept::async::Following(dlprof::core::CurrentThread())) {
    return r;
  }
  InTracerCode tracer;
  const dlprof::intercept::async::Clock now = dlprof::intercept::async::ReadClock();
  if (cb != nullptr) {
    NoteDone(cb, now, ECANCELED);
  } else {
    Requests().ForEach(dlprof::intercept::async::Request::kPending,
                       [&](dlprof::intercept::async::Request* q) {
                         if (q->event.fd == fd && q->completed_ns == 0) {
                           q->completed_ns = dlprof::intercept::async::OnClockOf(q->event, now);
                           q->event.ret = -ECANCELED;
                         }
                       });
  }
  return r;
}
}  // namespace

extern "C" {

int lio_listio(int mode, struct aiocb* const list[], int n, struct sigevent* sig) {
  return ListIo(mode, list, n, [&] { return real_lio_listio(mode, list, n, sig); });
}
int lio_listio64(int mode, struct aiocb64* const list[], int n, struct sigevent* sig) {
  return ListIo(mode, reinterpret_cast<struct aiocb* const*>(list), n,
                [&] { return real_lio_listio64(mode, list, n, sig); });
}

int aio_error(const struct aiocb* cb) {
  const int r = real_aio_error(cb);
  if (r != EINPROGRESS &&
      dlprof::intercept::async::Following(dlprof::core::CurrentThread())) {
    dlprof::core::ErrnoSaver keep;
    NoteDone(cb, dlprof::intercept::async::ReadClock(), r);
  }
  return r;
}
int aio_error64(const struct aiocb64* cb) {
  const int r = real_aio_error64(cb);
  if (r != EINPROGRESS &&
      dlprof::intercept::async::Following(dlprof::core::CurrentThread())) {
    dlprof::core::ErrnoSaver keep;
    NoteDone(reinterpret_cast<const struct aiocb*>(cb), dlprof::intercept::async::ReadClock(), r);
  }
  return r;
}

int aio_cancel(int fd, struct aiocb* cb) {
  return Cancel(fd, cb, [&] { return real_aio_cancel(fd, cb); });
}
int aio_cancel64(int fd, struct aiocb64* cb) {
  return Cancel(fd, reinterpret_cast<const struct aiocb*>(cb),
                [&] { return real_aio_cancel64(fd, cb); });
}

ssize_t aio_return(struct aiocb* cb) {
  return Return(cb, real_aio_error, real_aio_return);
}
ssize_t aio_return64(struct aiocb64* cb) {
  return Return(cb, real_aio_error64, real_aio_return64);
}

int aio_suspend(const struct aiocb* const list[], int n, const struct timespec* timeout) {
  return Suspend(list, n, timeout, real_aio_error, real_aio_suspend);
}
int aio_suspend64(const struct aiocb64* const list[], int n, const struct timespec* timeout) {
  return Suspend(list, n, timeout, real_aio_error64, real_aio_suspend64);
}

}  // extern "C"
