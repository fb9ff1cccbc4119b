// io_uring's entry points: the system calls (made through syscall(), as fio
// makes them, or through liburing's exported wrappers) and liburing's
// exported functions, which make their system calls themselves (inline, not
// through the C library) and so are interposed one by one. Each passes the
// program's call through unchanged; around it the ring is followed
// (uring_ring.h): the entries it submits registered first, the completion
// ring looked at before and after.
#include <signal.h>

#include "lib/core/clock.h"
#include "lib/intercept/syscall_entry.h"
#include "lib/intercept/uring_ring.h"
#include "lib/intercept/wrapper.h"

namespace dlprof::intercept::uring {
namespace {

// Which entries a call hands the kernel: none, the SQ entries the program
// published ([khead, ktail), at most `count`), or liburing's (up to its
// sqe_tail: it publishes them inside the call); and whether it may wait
// for completions.
struct Submission {
  enum Kind { kNone, kPublished, kLiburing } kind = kNone;
  uint32_t count = 0;
  const LiburingRing* liburing = nullptr;
  bool waits = true;
};

// Runs the program's call on `ring` (nullptr: not followed), which returns
// a result or -errno (or -1 with errno, as syscall() does). What the
// tracer does around it leaves errno as the call does; it makes no call
// that is traced itself (the rare ones that may, setting a ring up or
// letting it go, are tracer code of their own).
//
// The completion ring is looked at after the call, and before it too when
// the call may wait (what completed before the wait is dated before it) or
// when what it may post could overwrite completions not yet looked at (a
// program that reaps without calls). A call that does not wait is short:
// its end dates what was there at its start within its own time, for one
// look instead of two.
//
// The ring is held meanwhile (Ring::Hold): closed by another thread while
// this one waits in it, it is looked at no more after the call.
template <typename Call>
long OnRing(Ring* ring, int ring_fd, const Submission& sub, Call&& call) {
  core::ThreadContext& t = core::CurrentThread();
  if (ring == nullptr || ring->blind() || !async::Following(t)) return call();
  if (!ring->Hold(ring_fd)) return call();
  uint32_t from = 0, taken = 0;
  if (sub.kind != Submission::kNone) {
    core::CallErrno keep(t);
    const async::Clock now = async::ReadClock();
    if (ring->News() && (sub.waits || ring->Crowded())) ring->Observe(now, t);
    const uint32_t head = ring->SqHead(), tail = ring->SqTail();
    uint32_t end = tail;
    if (sub.kind == Submission::kLiburing) {
      end = sub.liburing->sq.sqe_tail;  // past the tail: liburing publishes them in the call
    } else if (sub.count < tail - head) {
      end = head + sub.count;
    }
    taken = ring->Submit(end, tail, now, t, &from);
  } else if (ring->News() && (sub.waits || ring->Crowded())) {
    core::CallErrno keep(t);
    ring->Observe(async::ReadClock(), t);
  }
  const long r = call();
  if (ring->state.load(std::memory_order_acquire) == Ring::kLive && (taken > 0 || ring->News())) {
    core::CallErrno keep(t);
    if (taken > 0) ring->Unsubmit(from, from + taken);
    if (ring->News()) ring->Observe(async::ReadClock(), t);
  }
  ring->Drop();
  return r;
}

// A call on a ring the tracer does not follow: recorded as a call.
template <typename Call>
long EnterCall(int fd, uint32_t to_submit, uint32_t min_complete, uint32_t flags, Call&& call) {
  return Traced<long>(EventKind::UringEnter, call, [&](Event& e, long r, int) {
    e.fd = fd;
    e.size = to_submit;
    e.offset = min_complete;
    e.aux = flags;
    (void)r;
    return true;
  });
}

Ring* FollowedRing(int fd, uint32_t flags) {
  if (flags & kEnterRegisteredRing) {
    NoteUnfollowed(
        "a ring entered through its registered index (IORING_ENTER_REGISTERED_RING) by system "
        "calls: its requests are not traced, only its io_uring_enter calls");
    return nullptr;
  }
  return FindRing(fd);
}

// What io_uring_register did to the ring's registered files.
void AfterRegister(int fd, unsigned op, const void* arg, unsigned nr, long result) {
  if (result < 0 || !async::Following(core::CurrentThread())) return;
  Ring* ring = FindRing(fd);
  if (ring == nullptr) return;
  InTracerCode tracer;
  switch (op) {
    case kRegisterFiles:
      ring->RegisterFiles(static_cast<const int32_t*>(arg), nr);
      break;
    case kRegisterFiles2: {
      const auto* rr = static_cast<const RsrcRegister*>(arg);
      if (rr != nullptr) ring->RegisterFiles(reinterpret_cast<const int32_t*>(rr->data), rr->nr);
      break;
    }
    // An update returns how many slots it updated: the kernel stops at the
    // first fd it cannot read (EFAULT only when that is the first), so
    // only those are read here -- the rest of the array may be none.
    case kRegisterFilesUpdate: {
      const auto* u = static_cast<const FilesUpdate*>(arg);
      if (u != nullptr) {
        ring->UpdateFiles(u->offset, reinterpret_cast<const int32_t*>(u->fds),
                          nr < result ? nr : static_cast<uint32_t>(result));
      }
      break;
    }
    case kRegisterFilesUpdate2: {
      const auto* u = static_cast<const RsrcUpdate2*>(arg);
      if (u != nullptr) {
        ring->UpdateFiles(u->offset, reinterpret_cast<const int32_t*>(u->data),
                          u->nr < result ? u->nr : static_cast<uint32_t>(result));
      }
      break;
    }
    case kUnregisterFiles:
      ring->UnregisterFiles();
      break;
    default:
      break;
  }
}

long AfterSetup(long fd, const Params* p) {
  if (fd >= 0 && p != nullptr && async::Following(core::CurrentThread())) {
    InTracerCode tracer;
    SetUpRing(static_cast<int>(fd), *p);
  }
  return fd;
}

}  // namespace

// ---- the system calls, through syscall() (syscall_entry.h) -----------------

long SyscallSetup(const SyscallArgs& a, const RealSyscall& real) {
  return AfterSetup(real(), reinterpret_cast<const Params*>(a[1]));
}

long SyscallEnter(const SyscallArgs& a, const RealSyscall& real) {
  const int fd = static_cast<int>(a[0]);
  const auto to_submit = static_cast<uint32_t>(a[1]), flags = static_cast<uint32_t>(a[3]);
  Ring* ring = FollowedRing(fd, flags);
  if (ring == nullptr || ring->blind()) {
    return EnterCall(fd, to_submit, static_cast<uint32_t>(a[2]), flags, real);
  }
  Submission sub;
  if (!ring->sqpoll() && to_submit > 0) {
    sub.kind = Submission::kPublished;
    sub.count = to_submit;
  }
  sub.waits = (flags & kEnterGetEvents) != 0 && a[2] != 0;
  return OnRing(ring, fd, sub, real);
}

long SyscallRegister(const SyscallArgs& a, const RealSyscall& real) {
  const long r = real();
  AfterRegister(static_cast<int>(a[0]), static_cast<unsigned>(a[1]),
                reinterpret_cast<const void*>(a[2]), static_cast<unsigned>(a[3]), r);
  return r;
}

}  // namespace dlprof::intercept::uring

// ---- liburing --------------------------------------------------------------

using dlprof::intercept::uring::LiburingRing;
using dlprof::intercept::uring::Params;
using dlprof::intercept::SyscallArgs;
using namespace dlprof::intercept::uring;  // NOLINT: the wrappers are C functions

struct io_uring;
struct io_uring_params;
struct io_uring_cqe;
struct __kernel_timespec;

namespace {
const LiburingRing* L(const io_uring* r) { return reinterpret_cast<const LiburingRing*>(r); }

// The ring of a liburing call, followed from now on if it was not.
Ring* Followed(io_uring* ring) {
  Ring* r = FindRing(L(ring)->ring_fd);
  if (r != nullptr && r->IsLiburings(*L(ring))) return r;
  dlprof::intercept::InTracerCode tracer;  // (setting it up maps memory)
  return LiburingRingOf(L(ring));
}

// A liburing call that submits what the program prepared.
// `waits`: whether it may wait for completions.
template <typename Call>
int LiburingSubmit(io_uring* ring, bool waits, Call&& call) {
  if (!dlprof::intercept::async::Following(dlprof::core::CurrentThread())) return call();
  Ring* r = Followed(ring);
  Submission sub;
  sub.kind = Submission::kLiburing;
  sub.liburing = L(ring);
  sub.waits = waits;
  return static_cast<int>(OnRing(r, L(ring)->ring_fd, sub, call));
}

// A liburing call that waits for or looks at completions.
template <typename Call>
int LiburingReap(io_uring* ring, bool waits, Call&& call) {
  if (!dlprof::intercept::async::Following(dlprof::core::CurrentThread())) return call();
  Ring* r = Followed(ring);
  Submission sub;
  sub.waits = waits;
  return static_cast<int>(OnRing(r, L(ring)->ring_fd, sub, call));
}

void AdoptAfterInit(io_uring* ring, int result) {
  if (result < 0 || !dlprof::intercept::async::Following(dlprof::core::CurrentThread())) return;
  dlprof::intercept::InTracerCode tracer;
  LiburingRingOf(L(ring));
}
}  // namespace

#define DLPROF_LIBURING(fn, type) DLPROF_REAL_AS(fn, type, nullptr)

DLPROF_LIBURING(io_uring_queue_init, int (*)(unsigned, io_uring*, unsigned))
DLPROF_LIBURING(io_uring_queue_init_params, int (*)(unsigned, io_uring*, io_uring_params*))
DLPROF_LIBURING(io_uring_queue_mmap, int (*)(int, io_uring_params*, io_uring*))
DLPROF_LIBURING(io_uring_queue_exit, void (*)(io_uring*))
DLPROF_LIBURING(io_uring_close_ring_fd, int (*)(io_uring*))
DLPROF_LIBURING(io_uring_submit, int (*)(io_uring*))
DLPROF_LIBURING(io_uring_submit_and_wait, int (*)(io_uring*, unsigned))
DLPROF_LIBURING(io_uring_submit_and_wait_timeout,
                int (*)(io_uring*, io_uring_cqe**, unsigned, __kernel_timespec*, sigset_t*))
DLPROF_LIBURING(io_uring_submit_and_get_events, int (*)(io_uring*))
DLPROF_LIBURING(io_uring_get_events, int (*)(io_uring*))
DLPROF_LIBURING(__io_uring_get_cqe,
                int (*)(io_uring*, io_uring_cqe**, unsigned, unsigned, sigset_t*))
DLPROF_LIBURING(io_uring_wait_cqes,
                int (*)(io_uring*, io_uring_cqe**, unsigned, __kernel_timespec*, sigset_t*))
DLPROF_LIBURING(io_uring_wait_cqe_timeout, int (*)(io_uring*, io_uring_cqe**, __kernel_timespec*))
DLPROF_LIBURING(io_uring_peek_batch_cqe, unsigned (*)(io_uring*, io_uring_cqe**, unsigned))
DLPROF_LIBURING(io_uring_register_files, int (*)(io_uring*, const int*, unsigned))
DLPROF_LIBURING(io_uring_register_files_tags,
                int (*)(io_uring*, const int*, const uint64_t*, unsigned))
DLPROF_LIBURING(io_uring_register_files_sparse, int (*)(io_uring*, unsigned))
DLPROF_LIBURING(io_uring_register_files_update, int (*)(io_uring*, unsigned, const int*, unsigned))
DLPROF_LIBURING(io_uring_register_files_update_tag,
                int (*)(io_uring*, unsigned, const int*, const uint64_t*, unsigned))
DLPROF_LIBURING(io_uring_unregister_files, int (*)(io_uring*))
DLPROF_LIBURING(io_uring_setup, int (*)(unsigned, io_uring_params*))
DLPROF_LIBURING(io_uring_enter, int (*)(unsigned, unsigned, unsigned, unsigned, sigset_t*))
DLPROF_LIBURING(io_uring_enter2, int (*)(unsigned, unsigned, unsigned, unsigned, sigset_t*, size_t))
DLPROF_LIBURING(io_uring_register, int (*)(unsigned, unsigned, const void*, unsigned))

extern "C" {

int io_uring_queue_init(unsigned entries, io_uring* ring, unsigned flags) {
  const int r = real_io_uring_queue_init(entries, ring, flags);
  AdoptAfterInit(ring, r);
  return r;
}

int io_uring_queue_init_params(unsigned entries, io_uring* ring, io_uring_params* p) {
  const int r = real_io_uring_queue_init_params(entries, ring, p);
  AdoptAfterInit(ring, r);
  return r;
}

int io_uring_queue_mmap(int fd, io_uring_params* p, io_uring* ring) {
  const int r = real_io_uring_queue_mmap(fd, p, ring);
  AdoptAfterInit(ring, r);
  return r;
}

void io_uring_queue_exit(io_uring* ring) {
  if (ring != nullptr && dlprof::intercept::async::Following(dlprof::core::CurrentThread())) {
    dlprof::intercept::InTracerCode tracer;
    if (Ring* r = FindLiburingRing(L(ring))) CloseRing(r);
  }
  real_io_uring_queue_exit(ring);
}

// liburing >= 2.4: the ring's fd closed, the ring used on through its
// registered index. Followed on, found by its memory (FindLiburingRing):
// its fd no longer names it -- the close must not let it go, and a file
// opened later with that number is not it.
int io_uring_close_ring_fd(io_uring* ring) {
  Ring* r = nullptr;
  const int fd = ring != nullptr ? L(ring)->ring_fd : -1;
  if (fd >= 0 && dlprof::intercept::async::Following(dlprof::core::CurrentThread())) {
    r = FindRing(fd);
    if (r != nullptr && !r->IsLiburings(*L(ring))) r = nullptr;
    if (r != nullptr) r->fd.store(-1, std::memory_order_relaxed);
  }
  const int result = real_io_uring_close_ring_fd(ring);
  if (result < 0 && r != nullptr) r->fd.store(fd, std::memory_order_relaxed);  // still open
  return result;
}

int io_uring_submit(io_uring* ring) {
  return LiburingSubmit(ring, false, [&] { return real_io_uring_submit(ring); });
}

int io_uring_submit_and_wait(io_uring* ring, unsigned wait_nr) {
  return LiburingSubmit(ring, wait_nr > 0,
                        [&] { return real_io_uring_submit_and_wait(ring, wait_nr); });
}

int io_uring_submit_and_wait_timeout(io_uring* ring, io_uring_cqe** cqe, unsigned wait_nr,
                                     __kernel_timespec* ts, sigset_t* sigmask) {
  return LiburingSubmit(ring, true, [&] {
    return real_io_uring_submit_and_wait_timeout(ring, cqe, wait_nr, ts, sigmask);
  });
}

int io_uring_submit_and_get_events(io_uring* ring) {
  return LiburingSubmit(ring, false, [&] { return real_io_uring_submit_and_get_events(ring); });
}

int io_uring_get_events(io_uring* ring) {
  return LiburingReap(ring, false, [&] { return real_io_uring_get_events(ring); });
}

int __io_uring_get_cqe(io_uring* ring, io_uring_cqe** cqe, unsigned submit, unsigned wait_nr,
                       sigset_t* sigmask) {
  auto call = [&] { return real___io_uring_get_cqe(ring, cqe, submit, wait_nr, sigmask); };
  return submit > 0 ? LiburingSubmit(ring, wait_nr > 0, call)
                    : LiburingReap(ring, wait_nr > 0, call);
}

int io_uring_wait_cqes(io_uring* ring, io_uring_cqe** cqe, unsigned wait_nr,
                       __kernel_timespec* ts, sigset_t* sigmask) {
  // Without IORING_FEAT_EXT_ARG it submits a timeout, and what was prepared.
  return LiburingSubmit(
      ring, true, [&] { return real_io_uring_wait_cqes(ring, cqe, wait_nr, ts, sigmask); });
}

int io_uring_wait_cqe_timeout(io_uring* ring, io_uring_cqe** cqe, __kernel_timespec* ts) {
  return LiburingSubmit(ring, true,
                        [&] { return real_io_uring_wait_cqe_timeout(ring, cqe, ts); });
}

unsigned io_uring_peek_batch_cqe(io_uring* ring, io_uring_cqe** cqes, unsigned count) {
  return static_cast<unsigned>(LiburingReap(ring, false, [&] {
    return static_cast<int>(real_io_uring_peek_batch_cqe(ring, cqes, count));
  }));
}

int io_uring_register_files(io_uring* ring, const int* files, unsigned nr) {
  const int r = real_io_uring_register_files(ring, files, nr);
  AfterRegister(L(ring)->ring_fd, kRegisterFiles, files, nr, r);
  return r;
}

int io_uring_register_files_tags(io_uring* ring, const int* files, const uint64_t* tags,
                                 unsigned nr) {
  const int r = real_io_uring_register_files_tags(ring, files, tags, nr);
  AfterRegister(L(ring)->ring_fd, kRegisterFiles, files, nr, r);
  return r;
}

int io_uring_register_files_sparse(io_uring* ring, unsigned nr) {
  const int r = real_io_uring_register_files_sparse(ring, nr);
  AfterRegister(L(ring)->ring_fd, kRegisterFiles, nullptr, nr, r);
  return r;
}

int io_uring_register_files_update(io_uring* ring, unsigned off, const int* files, unsigned nr) {
  const int r = real_io_uring_register_files_update(ring, off, files, nr);
  const FilesUpdate u{off, 0, reinterpret_cast<uint64_t>(files)};
  AfterRegister(L(ring)->ring_fd, kRegisterFilesUpdate, &u, nr, r);
  return r;
}

int io_uring_register_files_update_tag(io_uring* ring, unsigned off, const int* files,
                                       const uint64_t* tags, unsigned nr) {
  const int r = real_io_uring_register_files_update_tag(ring, off, files, tags, nr);
  const FilesUpdate u{off, 0, reinterpret_cast<uint64_t>(files)};
  AfterRegister(L(ring)->ring_fd, kRegisterFilesUpdate, &u, nr, r);
  return r;
}

int io_uring_unregister_files(io_uring* ring) {
  const int r = real_io_uring_unregister_files(ring);
  AfterRegister(L(ring)->ring_fd, kUnregisterFiles, nullptr, 0, r);
  return r;
}

// liburing's own system-call wrappers (they return -errno).
int io_uring_setup(unsigned entries, io_uring_params* p) {
  const int fd = real_io_uring_setup(entries, p);
  AfterSetup(fd, reinterpret_cast<const Params*>(p));
  return fd;
}

int io_uring_enter(unsigned fd, unsigned to_submit, unsigned min_complete, unsigned flags,
                   sigset_t* sig) {
  const SyscallArgs a = {static_cast<long>(fd), to_submit, min_complete, flags,
                         reinterpret_cast<long>(sig), 0};
  return static_cast<int>(SyscallEnter(a, [&] {
    return static_cast<long>(real_io_uring_enter(fd, to_submit, min_complete, flags, sig));
  }));
}

int io_uring_enter2(unsigned fd, unsigned to_submit, unsigned min_complete, unsigned flags,
                    sigset_t* sig, size_t sz) {
  const SyscallArgs a = {static_cast<long>(fd), to_submit, min_complete, flags,
                         reinterpret_cast<long>(sig), static_cast<long>(sz)};
  return static_cast<int>(SyscallEnter(a, [&] {
    return static_cast<long>(real_io_uring_enter2(fd, to_submit, min_complete, flags, sig, sz));
  }));
}

int io_uring_register(unsigned fd, unsigned opcode, const void* arg, unsigned nr_args) {
  const int r = real_io_uring_register(fd, opcode, arg, nr_args);
  AfterRegister(static_cast<int>(fd), opcode, arg, nr_args, r);
  return r;
}

}  // extern "C"
