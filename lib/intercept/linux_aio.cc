// Linux AIO (io_setup, io_submit, io_getevents, io_pgetevents, io_cancel,
// io_destroy), reached through syscall(): libaio's functions are thin
// wrappers around it, and programs that skip libaio call it themselves.
//
// Each iocb that io_submit hands the kernel is registered, keyed by its
// address (the io_event that completes it names it in `obj`): just after
// the call where only the calling thread has reaped the context, else just
// before it (another thread may reap its completion at once; the iocbs then
// copied: NoteReaper, SubmitThenRegister). It is recorded when an
// io_getevents returns its completion, on the
// thread that asked: completed at that call's start when the context's ring
// (the kernel's, mapped at the context's address) already held it then, else
// at its return, which is when the program reaped it. A context first met
// in an io_submit (set up before tracing began) is followed from then on.
// Completions a program reaps from the ring itself, without io_getevents
// (fio's userspace_reap), are not seen: such requests are recorded at
// io_destroy, or at the end, as never completed.
#include <sched.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>

#include <cerrno>
#include <cstring>

#include "lib/core/clock.h"
#include "lib/core/file_ids.h"
#include "lib/core/raw_log.h"
#include "lib/core/raw_map.h"
#include "lib/intercept/async_requests.h"
#include "lib/intercept/describe.h"
#include "lib/intercept/program_memory.h"
#include "lib/intercept/syscall_entry.h"

namespace dlprof::intercept::linux_aio {
namespace {

// include/uapi/linux/aio_abi.h
struct Iocb {
  uint64_t aio_data;
  uint32_t aio_key, aio_rw_flags;
  uint16_t aio_lio_opcode;
  int16_t aio_reqprio;
  uint32_t aio_fildes;
  uint64_t aio_buf, aio_nbytes;
  int64_t aio_offset;
  uint64_t aio_reserved2;
  uint32_t aio_flags, aio_resfd;
};
static_assert(sizeof(Iocb) == 64, "struct iocb");
struct IoEvent {
  uint64_t data, obj;
  int64_t res, res2;
};
// The head of the completion ring the kernel maps at the context's address.
struct AioRing {
  uint32_t id, nr, head, tail, magic, compat_features, incompat_features, header_length;
};
constexpr uint32_t kAioRingMagic = 0xa10a10a1;
enum : uint16_t {
  kCmdPread = 0,
  kCmdPwrite = 1,
  kCmdFsync = 2,
  kCmdFdsync = 3,
  kCmdPreadv = 7,
  kCmdPwritev = 8,
};

struct Context {
  std::atomic<uint64_t> id{0};  // the aio_context_t; 0: slot free
  std::atomic<uint32_t> users{0};
  async::RequestTable requests;
  // The most iocbs one io_submit hands the kernel (the context's nr_events,
  // its ring's `nr`: the kernel takes no more); 0 for an address that is no
  // context's.
  uint32_t most = 0;
  void* memory = nullptr;
  size_t bytes = 0;
  // Who reaps its completions (io_getevents, io_cancel, io_destroy): 0 none
  // yet, a thread's tid where one alone has, kSeveral where more have; and
  // the io_submits registering their iocbs after the call (SubmitThenRegister).
  std::atomic<int32_t> reaper{0};
  std::atomic<uint32_t> registering_after{0};
};
constexpr int32_t kSeveral = -1;
// As many contexts as POSIX AIO follows requests: the kernel's aio-max-nr
// (65536 events by default, each context at least 8 a CPU) bounds them.
// Found by a look through those in use (Find), the last found first.
constexpr uint32_t kMaxContexts = 4096;
Context g_contexts[kMaxContexts];
std::atomic<uint32_t> g_used{0};
std::atomic<bool> g_noted{false};

void NoteOnce(const char* what) {
  if (!g_noted.exchange(true)) core::RawLog("Linux AIO: %s", what);
}

Context* Find(uint64_t id) {
  // The last context found first: a program drives one context per thread,
  // most often one in all (each io_submit and io_getevents asks).
  if (id == 0) return nullptr;  // (a context let go has id 0)
  static std::atomic<Context*> last{nullptr};
  Context* const hint = last.load(std::memory_order_relaxed);
  if (hint != nullptr && hint->id.load(std::memory_order_acquire) == id) return hint;
  const uint32_t used = g_used.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < used; ++i) {
    if (g_contexts[i].id.load(std::memory_order_acquire) == id) {
      last.store(&g_contexts[i], std::memory_order_relaxed);
      return &g_contexts[i];
    }
  }
  return nullptr;
}

// The most iocbs an io_submit on context `id` hands the kernel: its ring's
// `nr`, read safely where the context was first met in an io_submit (the
// address may be none), else as the kernel's io_setup just made it.
uint32_t MostPerSubmit(uint64_t id, bool safely) {
  AioRing ring{};
  if (safely) {
    struct iovec local = {&ring, sizeof(ring)};
    struct iovec remote = {reinterpret_cast<void*>(id), sizeof(ring)};
    const long got = ReadProgram(&local, 1, &remote, 1);
    if (got < 0) return UINT32_MAX;  // (refused: no bound, as the kernel's io_submit has)
    if (got != static_cast<long>(sizeof(ring))) return 0;
  } else {
    ring = *reinterpret_cast<const AioRing*>(id);
  }
  return ring.magic == kAioRingMagic ? ring.nr : 0;
}

// A context to follow from now on: `nr` events at a time. `met_now`: it
// was not followed before (and, met in an io_submit, may be no context).
Context* Follow(uint64_t id, uint32_t nr, bool* met_now = nullptr) {
  if (id == 0) return nullptr;
  if (Context* c = Find(id)) return c;
  if (met_now != nullptr) *met_now = true;
  async::EnsureProcessHooks();
  // Room for twice what the kernel holds in flight (its nr_events, where
  // known: a context met in an io_submit, set up before tracing began, is
  // of a size nobody told us).
  const uint32_t most = MostPerSubmit(id, met_now != nullptr);
  const uint64_t want = most != 0 && most != UINT32_MAX ? 2 * uint64_t{most} : 4 * uint64_t{nr};
  uint32_t slots = 64;
  while (slots < want && slots < (1u << 20)) slots <<= 1;
  for (uint32_t i = 0; i < kMaxContexts; ++i) {
    Context& c = g_contexts[i];
    uint32_t none = 0;
    if (!c.users.compare_exchange_strong(none, 1, std::memory_order_acquire)) continue;
    const size_t bytes = slots * sizeof(async::Request);
    if (c.bytes < bytes) {
      void* m = core::RawMmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m == MAP_FAILED) {
        c.users.store(0, std::memory_order_release);
        return nullptr;
      }
      // (An older table is left mapped: a call may still be reading it.)
      c.memory = m;
      c.bytes = bytes;
    } else {
      memset(c.memory, 0, bytes);
    }
    c.requests.Init(static_cast<async::Request*>(c.memory), slots);
    c.most = most;
    c.reaper.store(0, std::memory_order_relaxed);
    c.registering_after.store(0, std::memory_order_relaxed);
    uint32_t used = g_used.load(std::memory_order_relaxed);
    while (used < i + 1 && !g_used.compare_exchange_weak(used, i + 1)) {
    }
    c.id.store(id, std::memory_order_release);
    return &c;
  }
  NoteOnce(
      "more contexts than the tracer follows (4096); the requests of the others are not "
      "recorded");
  return nullptr;
}

// Records what `c` still holds and lets it go (io_destroy, the end).
void Release(Context* c, const async::Clock& now) {
  const uint64_t id = c->id.exchange(0, std::memory_order_acq_rel);
  if (id == 0) return;
  core::ThreadContext& t = core::CurrentThread();
  c->requests.ForEach(async::Request::kPending, [&](async::Request* r) {
    uint32_t pending = async::Request::kPending;
    if (!r->state.compare_exchange_strong(pending, async::Request::kCompleted)) return;
    const Event e = r->event;
    async::RequestTable::Free(r);
    async::RecordRequest(t, e, async::OnClockOf(e, now), -EINPROGRESS, now, 0);
  });
  c->users.store(0, std::memory_order_release);
}

// What one iocb asks for; false when its file is not traced.
bool Describe(const Iocb& cb, int32_t tid, Event* e) {
  *e = Event{};
  switch (cb.aio_lio_opcode) {
    case kCmdPread: e->kind = static_cast<uint16_t>(EventKind::LinuxAioPread); break;
    case kCmdPwrite: e->kind = static_cast<uint16_t>(EventKind::LinuxAioPwrite); break;
    case kCmdPreadv: e->kind = static_cast<uint16_t>(EventKind::LinuxAioPreadv); break;
    case kCmdPwritev: e->kind = static_cast<uint16_t>(EventKind::LinuxAioPwritev); break;
    case kCmdFsync: e->kind = static_cast<uint16_t>(EventKind::LinuxAioFsync); break;
    case kCmdFdsync: e->kind = static_cast<uint16_t>(EventKind::LinuxAioFdsync); break;
    default: e->kind = static_cast<uint16_t>(EventKind::LinuxAioOp); break;
  }
  const int fd = static_cast<int32_t>(cb.aio_fildes);
  const uint32_t file = fd >= 0 ? core::FileOfFd(*core::g_runtime, fd) : 0;
  if (!FdTable::Named(file)) return NotNamed(file);
  e->file = file;
  e->fd = fd;
  e->offset = -1;
  const bool vector = cb.aio_lio_opcode == kCmdPreadv || cb.aio_lio_opcode == kCmdPwritev;
  const bool data = vector || cb.aio_lio_opcode == kCmdPread || cb.aio_lio_opcode == kCmdPwrite;
  if (data) {
    const bool write = cb.aio_lio_opcode == kCmdPwrite || cb.aio_lio_opcode == kCmdPwritev;
    e->offset = write && async::WriteAppends(fd, cb.aio_rw_flags) ? -1 : cb.aio_offset;
    e->size = cb.aio_nbytes;
    if (vector) {
      // (An array the program's pointer does not reach: the kernel refuses
      // the iocb with EFAULT; its size 0, unknown, should it be recorded.)
      uint64_t bytes = 0;
      ProgramIovBytes(reinterpret_cast<const void*>(cb.aio_buf),
                      static_cast<int64_t>(cb.aio_nbytes), &bytes);
      e->size = bytes;
    }
  }
  e->aux = PackAsyncAux(0, static_cast<uint8_t>(cb.aio_lio_opcode), tid);
  return true;
}

// Registers the request `cb` at the program's `key` (the iocb's address),
// submitted at `now`.
void Register(Context* c, core::ThreadContext& t, uint64_t key, const Iocb& cb, int32_t tid,
              const async::Clock& now) {
  Event e;
  if (!Describe(cb, tid, &e)) return;
  async::Request* r = c->requests.Claim(key);
  if (r == nullptr) {
    NoteOnce("more requests in flight than the tracer can follow; some are not recorded");
    return;
  }
  e.start_ns = now.now;
  e.flags |= async::SubmittedFlags(t) | now.flag;
  r->event = e;
  async::RequestTable::Publish(r);
}

// Thread `tid` is about to reap `c`'s completions (or cancel, or destroy
// it). The first reaper other than the one before makes every later
// io_submit register its iocbs before the call (copied): another thread
// may then take a completion at once. A submission registering after the
// call meanwhile is waited for where its completion is met
// (TakeOnceRegistered), not here: its io_submit may block (a read of a pipe
// is done in the call) until this thread does something.
void NoteReaper(Context* c, int32_t tid) {
  int32_t seen = c->reaper.load(std::memory_order_acquire);
  if (seen == tid || seen == kSeveral) return;
  if (seen == 0 && c->reaper.compare_exchange_strong(seen, tid)) return;
  if (seen == tid) return;
  c->reaper.store(kSeveral, std::memory_order_release);
}

// A completion met that matched no request (`take` found none): it may be
// of an io_submit that registers after the call (SubmitThenRegister) and has
// not yet. Waits for those under way to be done (they count themselves
// before the call, so before any completion of theirs exists, and publish
// before they stop counting), and looks again. At most kRegisterWaitNs: a
// submission of several iocbs may still be blocked on a later one, on what
// this thread would provide; or it left its count behind (a handler's
// siglongjmp out of io_submit). Then the request is not recorded.
template <typename Take>
async::Request* TakeOnceRegistered(Context* c, const Take& take) {
  constexpr int64_t kRegisterWaitNs = 2000000;
  if (c->registering_after.load(std::memory_order_acquire) != 0) {
    struct timespec from, now;
    clock_gettime(CLOCK_MONOTONIC, &from);
    do {
      sched_yield();
      clock_gettime(CLOCK_MONOTONIC, &now);
    } while (c->registering_after.load(std::memory_order_acquire) != 0 &&
             (now.tv_sec - from.tv_sec) * 1000000000 + (now.tv_nsec - from.tv_nsec) <
                 kRegisterWaitNs);
  }
  return take();
}

}  // namespace

long SyscallSetup(const SyscallArgs& a, const RealSyscall& real) {
  const long r = real();
  if (r == 0 && async::Following(core::CurrentThread())) {
    InTracerCode tracer;
    const auto* ctx = reinterpret_cast<const uint64_t*>(a[1]);
    Follow(*ctx, static_cast<uint32_t>(a[0]));
  }
  return r;
}

long SyscallDestroy(const SyscallArgs& a, const RealSyscall& real) {
  if (async::Following(core::CurrentThread())) {
    if (Context* c = Find(static_cast<uint64_t>(a[0]))) {
      InTracerCode tracer;
      NoteReaper(c, async::CallingTid(core::CurrentThread()));
      Release(c, async::ReadClock());
    }
  }
  return real();
}

// The iocbs the program hands io_submit are its pointers, read before the
// kernel checks them (linux_aio.cc's head; program_memory.h): copied, so
// that one it got wrong fails as untraced (EFAULT) rather than crashing it.
// A batch at a time, on the calling thread's stack (1.4 KiB).
constexpr long kBatch = 16;

// Of the `n` (at most kBatch) iocb pointers at the program's `list`: how
// many, from the first, can be read with the iocbs they point at (the
// kernel stops at the first it cannot read, with EFAULT), into `keys` and
// `cbs`. Where the system refuses the copy, read directly (as before the
// copy was made; said once).
long ReadIocbs(uint64_t list, long n, uint64_t* keys, Iocb* cbs) {
  struct iovec local[kBatch], remote[kBatch];
  local[0] = {keys, static_cast<size_t>(n) * sizeof(uint64_t)};
  remote[0] = {reinterpret_cast<void*>(list), local[0].iov_len};
  long got = ReadProgram(local, 1, remote, 1);
  if (got < 0) {
    for (long i = 0; i < n; ++i) {
      keys[i] = reinterpret_cast<const uint64_t*>(list)[i];
      if (keys[i] == 0) return i;
      cbs[i] = *reinterpret_cast<const Iocb*>(keys[i]);
    }
    return n;
  }
  long pointers = got / static_cast<long>(sizeof(uint64_t));
  for (long i = 0; i < pointers; ++i) {
    if (keys[i] == 0) pointers = i;  // (the kernel's EFAULT too)
  }
  if (pointers == 0) return 0;
  for (long i = 0; i < pointers; ++i) {
    local[i] = {&cbs[i], sizeof(Iocb)};
    remote[i] = {reinterpret_cast<void*>(keys[i]), sizeof(Iocb)};
  }
  got = ReadProgram(local, static_cast<size_t>(pointers), remote, static_cast<size_t>(pointers));
  return got < 0 ? 0 : got / static_cast<long>(sizeof(Iocb));
}

// An io_submit on a context whose completions only the calling thread has
// reaped: its iocbs are registered after the call, read directly, for the
// kernel has just read the first `r` of them (no copy, no system call of the
// tracer's; USER_GUIDE_ASYNC.md). Another thread that reaps one meanwhile
// (its first reaping) waits for it (TakeOnceRegistered); a signal handler of
// this thread that reaps one in between takes a completion not yet
// registered (not recorded).
long SubmitThenRegister(Context* c, core::ThreadContext& t, int32_t tid, uint64_t list,
                        const RealSyscall& real) {
  const async::Clock now = async::ReadClock();
  const long r = real();
  if (r > 0) {
    InTracerCode tracer;  // (errno as the call left it)
    const auto* keys = reinterpret_cast<const uint64_t*>(list);
    for (long i = 0; i < r; ++i) {
      Register(c, t, keys[i], *reinterpret_cast<const Iocb*>(keys[i]), tid, now);
    }
  }
  c->registering_after.fetch_sub(1, std::memory_order_release);
  return r;
}

long SyscallSubmit(const SyscallArgs& a, const RealSyscall& real) {
  core::ThreadContext& t = core::CurrentThread();
  const long nr = a[1];
  const auto list = static_cast<uint64_t>(a[2]);
  if (nr <= 0 || list == 0 || !async::Following(t)) return real();
  const int32_t tid = async::CallingTid(t);
  Context* c;
  bool met_now = false;  // a context first met in this call
  long looked = 0;       // the iocbs the kernel may take: [0, looked) were registered
  bool after = false;    // registered after the call (SubmitThenRegister)
  {
    InTracerCode tracer;
    c = Follow(static_cast<uint64_t>(a[0]), 256, &met_now);
    if (c != nullptr && c->reaper.load(std::memory_order_relaxed) == tid) {
      c->registering_after.fetch_add(1);  // (before any completion of its; TakeOnceRegistered)
      after = c->reaper.load() == tid;
      if (!after) c->registering_after.fetch_sub(1, std::memory_order_release);
    }
    // Else registered before the call, the iocbs copied (the kernel has not
    // yet checked the pointers): another thread may reap a completion at once.
    if (c != nullptr && !after) {
      const async::Clock now = async::ReadClock();
      // (The kernel takes at most its nr_events: a count beyond it, a
      // negative int passed as a long, is cut to it.)
      const long n = nr < static_cast<long>(c->most) ? nr : static_cast<long>(c->most);
      uint64_t keys[kBatch];
      Iocb cbs[kBatch];
      while (looked < n) {
        const long want = n - looked < kBatch ? n - looked : kBatch;
        const long got = ReadIocbs(list + static_cast<uint64_t>(looked) * sizeof(uint64_t),
                                   want, keys, cbs);
        for (long i = 0; i < got; ++i) Register(c, t, keys[i], cbs[i], tid, now);
        looked += got;
        if (got < want) break;  // the kernel stops there (EFAULT)
      }
    }
  }
  if (after) return SubmitThenRegister(c, t, tid, list, real);
  const long r = real();
  if (c != nullptr && r < looked) {
    const int err = errno;
    // The kernel took the first r (none on failure): the rest are not in
    // flight. (Their pointers read again: a moment ago they could be.)
    InTracerCode tracer;
    for (long from = r > 0 ? r : 0; from < looked; from += kBatch) {
      const long n = looked - from < kBatch ? looked - from : kBatch;
      uint64_t keys[kBatch];
      const auto* at = reinterpret_cast<const uint64_t*>(list) + from;
      struct iovec local = {keys, static_cast<size_t>(n) * sizeof(uint64_t)};
      struct iovec remote = {const_cast<uint64_t*>(at), local.iov_len};
      const long got = ReadProgram(&local, 1, &remote, 1);
      if (got < 0) {
        memcpy(keys, at, local.iov_len);  // (refused: read as the first time)
      } else if (got != static_cast<long>(local.iov_len)) {
        break;  // (gone meanwhile)
      }
      for (long i = 0; i < n; ++i) {
        if (async::Request* q = c->requests.Take(keys[i])) async::RequestTable::Free(q);
      }
    }
    // No context of the kernel's (destroyed, or never one): not followed,
    // for io_getevents would read its ring at an address that is none.
    if (r < 0 && met_now && err == EINVAL) Release(c, async::ReadClock());
  }
  return r;
}

long SyscallGetEvents(const SyscallArgs& a, const RealSyscall& real) {
  Context* c =
      async::Following(core::CurrentThread()) ? Find(static_cast<uint64_t>(a[0])) : nullptr;
  if (c == nullptr) return real();
  NoteReaper(c, async::CallingTid(core::CurrentThread()));
  // Completions the kernel's ring held already when the call began: they
  // completed by then.
  uint32_t ready = 0;
  const auto* ring = reinterpret_cast<const AioRing*>(a[0]);
  if (ring->magic == kAioRingMagic && ring->nr > 0) {
    const uint32_t head = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE);
    const uint32_t tail = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE);
    ready = tail >= head ? tail - head : ring->nr - head + tail;
  }
  const async::Clock start = ready > 0 ? async::ReadClock() : async::Clock{0, 0};
  const long n = real();
  if (n <= 0) return n;
  const async::Clock end = async::ReadClock();
  const auto* events = reinterpret_cast<const IoEvent*>(a[3]);
  core::ThreadContext& t = core::CurrentThread();
  // Recording may make calls of the tracer's own (the thread's first
  // event sets its ring up; a full ring in block mode writes the trace):
  // the program sees errno as the call left it.
  core::CallErrno keep(t);
  for (long i = 0; i < n; ++i) {
    const auto take = [&] {
      return c->requests.TakeNewest(
          events[i].obj, [&](async::Request* old) { async::RecordStale(t, old, end); });
    };
    async::Request* r = take();
    if (r == nullptr) r = TakeOnceRegistered(c, take);
    if (r == nullptr) continue;
    const uint64_t completed =
        async::OnClockOf(r->event, static_cast<uint64_t>(i) < ready ? start : end);
    async::RecordRequest(t, r->event, completed, events[i].res, end, 0);
    async::RequestTable::Free(r);
  }
  return n;
}

long SyscallCancel(const SyscallArgs& a, const RealSyscall& real) {
  Context* c =
      async::Following(core::CurrentThread()) ? Find(static_cast<uint64_t>(a[0])) : nullptr;
  if (c != nullptr) NoteReaper(c, async::CallingTid(core::CurrentThread()));
  const long r = real();
  // A cancellation that completes at once gives the result here rather
  // than through io_getevents (most return EINPROGRESS and do the latter).
  if (r == 0 && c != nullptr) {
    InTracerCode tracer;
    const auto* result = reinterpret_cast<const IoEvent*>(a[2]);
    const auto take = [&] { return c->requests.Take(static_cast<uint64_t>(a[1])); };
    async::Request* q = take();
    if (q == nullptr) q = TakeOnceRegistered(c, take);
    if (q != nullptr) {
      const async::Clock now = async::ReadClock();
      async::RecordRequest(core::CurrentThread(), q->event, async::OnClockOf(q->event, now),
                           result != nullptr ? result->res : -ECANCELED, now, 0);
      async::RequestTable::Free(q);
    }
  }
  return r;
}

}  // namespace dlprof::intercept::linux_aio

namespace dlprof::intercept::async {

void LinuxAioFlushAtExit() {
  const Clock now = ReadClock();
  for (uint32_t i = 0; i < linux_aio::kMaxContexts; ++i) {
    if (linux_aio::g_contexts[i].id.load(std::memory_order_acquire) != 0) {
      linux_aio::Release(&linux_aio::g_contexts[i], now);
    }
  }
}

void LinuxAioForgetAfterFork() {
  // A child has no AIO context of its parent's (they belong to its memory).
  for (uint32_t i = 0; i < linux_aio::kMaxContexts; ++i) {
    linux_aio::g_contexts[i].id.store(0, std::memory_order_relaxed);
    linux_aio::g_contexts[i].users.store(0, std::memory_order_relaxed);
  }
}

}  // namespace dlprof::intercept::async
